// Per-key quotas, shared by all gateway replicas: a token bucket (capacity = rate_per_minute / 6,
// refilled continuously at rate_per_minute per 60 s) and a concurrency cap held as leases.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/quota/principal.h"

namespace dnaserve::core {

inline constexpr int64_t kBurstDivisor = 6;
// A concurrency lease's lifetime: a sync call's 300 s budget plus a margin. Whoever runs a
// longer job (a gateway's JobRunner, a runner for queued jobs) renews it well within this.
inline constexpr int64_t kLeaseTtlMs = 330 * 1000;
// A queued job's lease lasts as long as the job may: however long it waits for a runner, it
// keeps its seat (its runner releases it when the job ends, or shortens it to kLeaseTtlMs and
// renews it while running). The job record itself expires after 24 h without activity.
inline constexpr int64_t kQueuedLeaseTtlMs = 24LL * 3600 * 1000;

// Values of the RateLimit-* headers for one decision.
struct RateLimitInfo {
  int64_t limit = 0;          // bucket capacity
  int64_t remaining = 0;      // whole tokens left
  int64_t reset_seconds = 0;  // seconds until the bucket is full again
  int64_t window_seconds = 60;  // RateLimit-Policy "w": seconds the refill of a full bucket takes
};

// Which limit refused a request (metrics count 429s by cause).
enum class RateLimitCause { kNone, kKeyRate, kKeyConcurrency, kEdgeIp };

struct QuotaDecision {
  Status status;  // ok, or 429 too_many_requests with retry_after_seconds set
  RateLimitInfo info;
  RateLimitCause cause = RateLimitCause::kNone;  // set on every 429
};

class QuotaStore {
 public:
  virtual ~QuotaStore() = default;
  // Takes a concurrency lease named `lease_id` (released by Release, or expiring after
  // `lease_ttl_ms`) and one token. Either cap can refuse; a refusal takes nothing.
  virtual QuotaDecision Admit(const Principal& principal, const std::string& lease_id,
                              int64_t lease_ttl_ms) = 0;
  // Current bucket state without taking a token (for headers on responses that took none).
  virtual RateLimitInfo Peek(const Principal& principal) = 0;
  virtual void Release(const Principal& principal, const std::string& lease_id) = 0;
  // Extends a lease held by a long-running job.
  virtual void Renew(const Principal& principal, const std::string& lease_id,
                     int64_t lease_ttl_ms) = 0;
};

}  // namespace dnaserve::core
