// The machine-readable contract served at /v1/openapi.json (OpenAPI 3.1).
//
// Request schemas are generated from the validation tables (gateway/validation/request_schema.h),
// so what is published is what the gateway admits. The model roster (x-models) comes from the
// live catalogue and the version from the build, so the document is rebuilt per request; it is
// small and cheap to write.
#pragma once

#include <string>
#include <string_view>

#include "gateway/dispatch/model_catalogue.h"

namespace dnaserve::gateway {

// Root `x-contract-revision`: monotonic; bump it whenever anything partner-visible in the
// document changes (and only then). A version bump alone does not change it.
// 2: the find-genes workflow; 3: the genomic-variant-interpretation workflow; 4: POST /mcp, the
// agent-protocol interface; 5: the chromatin record cap, gzip job results and the per-client
// result allowance.
inline constexpr int kContractRevision = 5;

// Root `x-rate-limit-burst-divisor` is kBurstDivisor (gateway/ratelimit/quota.h), the divisor
// the quota code actually applies.

// `version` is the service version as /health reports it ("YYYY.MM.DD.N (commit)").
std::string BuildOpenApiDocument(const ModelCatalogue& catalogue, std::string_view version);

}  // namespace dnaserve::gateway
