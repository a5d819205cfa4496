// QuotaStore in Redis, shared by every gateway replica. One Lua script does each decision
// atomically: the concurrency leases of a client live in a sorted set (member = lease id,
// score = expiry in ms) and its token bucket in a hash {tokens, ts}; both keys carry a PEXPIRE so
// an idle client leaves no state behind.
//
// The gateway passes its own clock reading (now_ms) to the script rather than using Redis TIME,
// so the math is the same as token_bucket.cc and testable with a ManualClock. Replicas therefore
// need synchronised clocks (NTP); a replica whose clock lags never refills twice (the bucket keeps
// the latest timestamp), it only refills late.
//
// Fails closed: when Redis cannot be reached Admit answers 503 service_unavailable.
#pragma once

#include <memory>
#include <string>

#include "gateway/ratelimit/clock.h"
#include "gateway/ratelimit/quota.h"
#include "gateway/redis/redis_connection.h"

namespace dnaserve::gateway {

class RedisQuotaStore : public QuotaStore {
 public:
  // `clock` must outlive the store; nullptr means the system clock. `key_prefix` namespaces the
  // keys: <prefix>{<client_id>}:bucket and <prefix>{<client_id>}:leases.
  explicit RedisQuotaStore(std::shared_ptr<RedisConnection> redis, const Clock* clock = nullptr,
                           std::string key_prefix = "dnaserve:quota:");

  QuotaDecision Admit(const Principal& principal, const std::string& lease_id,
                      int64_t lease_ttl_ms) override;
  // On a Redis failure: limit = capacity, remaining 0, reset 0.
  RateLimitInfo Peek(const Principal& principal) override;
  // Best effort: a Redis failure is logged; the lease then expires on its own.
  void Release(const Principal& principal, const std::string& lease_id) override;
  void Renew(const Principal& principal, const std::string& lease_id,
             int64_t lease_ttl_ms) override;

  std::string BucketKey(const std::string& client_id) const;
  std::string LeasesKey(const std::string& client_id) const;

 private:
  struct ScriptResult {
    int64_t code = 0;  // 0 ok, 1 concurrency cap, 2 empty bucket
    RateLimitInfo info;
    int64_t retry_after_seconds = 0;
  };
  StatusOr<ScriptResult> Run(const char* op, const Principal& principal,
                             const std::string& lease_id, int64_t lease_ttl_ms);

  std::shared_ptr<RedisConnection> redis_;
  const Clock* clock_;
  std::string key_prefix_;
};

}  // namespace dnaserve::gateway
