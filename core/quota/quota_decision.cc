#include "core/quota/quota_decision.h"

#include <string>

namespace dnaserve::core {

RateLimitInfo InfoFrom(const BucketDecision& bucket) {
  RateLimitInfo info;
  info.limit = bucket.limit;
  info.remaining = bucket.remaining;
  info.reset_seconds = bucket.reset_seconds;
  return info;
}

QuotaDecision ConcurrencyRefusal(const Principal& principal, const RateLimitInfo& info) {
  QuotaDecision d;
  d.info = info;
  d.cause = RateLimitCause::kKeyConcurrency;
  d.status = Status(ErrorCode::kTooManyRequests,
                    "too many concurrent requests for this API key (at most " +
                        std::to_string(principal.max_concurrency) + " in flight); retry after 1 s");
  d.status.set_retry_after_seconds(1);
  return d;
}

QuotaDecision RateRefusal(const Principal& principal, const RateLimitInfo& info,
                          int64_t retry_after_seconds) {
  QuotaDecision d;
  d.info = info;
  d.cause = RateLimitCause::kKeyRate;
  d.status =
      Status(ErrorCode::kTooManyRequests,
             "rate limit exceeded for this API key (" + std::to_string(principal.rate_per_minute) +
                 " requests per minute, burst " + std::to_string(info.limit) + "); retry after " +
                 std::to_string(retry_after_seconds) + " s");
  d.status.set_retry_after_seconds(retry_after_seconds);
  return d;
}

}  // namespace dnaserve::core
