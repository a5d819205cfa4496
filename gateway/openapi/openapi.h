// The machine-readable contract served at /v1/openapi.json (OpenAPI 3.1).
//
// gateway/openapi/openapi.base.json is the document as reviewed (paths, response schemas,
// examples, prose); request schemas are generated from the validation tables
// (core/validation/request_schema.h), so what is published is what the gateway admits. Those
// and the other code-owned parts are merged once; the model roster (x-models, from the live
// catalogue) and the version per call.
#pragma once

#include <string>
#include <string_view>

#include "core/dispatch/model_catalogue.h"

namespace dnaserve::gateway {

// Root `x-contract-revision`: monotonic; bump it whenever anything partner-visible in the
// document changes (and only then). A version bump alone does not change it.
// 2: the find-genes workflow; 3: the genomic-variant-interpretation workflow; 4: POST /mcp, the
// agent-protocol interface; 5: the chromatin record cap, gzip job results and the per-client
// result allowance; 6: full response schemas (closed data items, per-task meta counts,
// description_match, job list items, model card) and examples, servers and licence.
inline constexpr int kContractRevision = 6;

// Root `x-rate-limit-burst-divisor` is kBurstDivisor (core/quota/quota.h), the divisor
// the quota code actually applies.

// `version` is the service version as /health reports it ("YYYY.MM.DD.N (commit)").
std::string BuildOpenApiDocument(const core::ModelCatalogue& catalogue, std::string_view version);

}  // namespace dnaserve::gateway
