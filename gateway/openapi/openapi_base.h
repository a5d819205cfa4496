// gateway/openapi/openapi.base.json, the reviewed part of the OpenAPI document, compiled into the
// binary (CMake writes it into a generated openapi_base.cc as a raw string), so nothing is read
// from disk at run time. Internal to gateway/openapi/.
#pragma once

#include <string_view>

namespace dnaserve::gateway {

extern const std::string_view kOpenApiBase;

}  // namespace dnaserve::gateway
