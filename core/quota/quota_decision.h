// Decisions shared by the QuotaStore implementations, so both refuse with the same words.
#pragma once

#include <cstdint>

#include "core/quota/principal.h"
#include "core/quota/quota.h"
#include "core/quota/token_bucket.h"

namespace dnaserve::core {

RateLimitInfo InfoFrom(const BucketDecision& bucket);

// 429 for the concurrency cap: Retry-After 1, no token taken.
QuotaDecision ConcurrencyRefusal(const Principal& principal, const RateLimitInfo& info);
// 429 for an empty bucket: Retry-After = seconds until the next token.
QuotaDecision RateRefusal(const Principal& principal, const RateLimitInfo& info,
                          int64_t retry_after_seconds);

}  // namespace dnaserve::core
