// dnaserve-openapi: prints the OpenAPI document the gateway serves at /v1/openapi.json, with an
// empty model roster (x-models lists the models the live workers report; none here). Used by
// the lint test (tests/openapi) and for reviewing the contract without starting a service.
#include <iostream>

#include "common/version.h"
#include "core/dispatch/model_catalogue.h"
#include "gateway/openapi/openapi.h"

int main() {
  const dnaserve::core::ModelCatalogue catalogue;
  std::cout << dnaserve::gateway::BuildOpenApiDocument(catalogue, dnaserve::ServiceVersion())
            << '\n';
  return std::cout.good() ? 0 : 1;
}
