// QuotaStore in Redis, shared by every gateway replica. One Lua script does each decision
// atomically: the concurrency leases of a client live in a sorted set (member = lease id,
// score = expiry in ms) and its token bucket in a hash {tokens, ts}; both keys carry a PEXPIRE so
// an idle client leaves no state behind.
//
// Time is Redis's: the script reads TIME itself, for lease expiries and for the bucket's refill,
// so replicas whose clocks disagree (no NTP, a VM paused and resumed, a clock stepped by
// minutes) still agree on when a lease expires and how full a bucket is. Were each replica to
// pass its own reading, one running minutes fast would see every lease as expired (admitting
// past the concurrency cap) and refill buckets early, and one running slow would hold leases
// minutes past their TTL. The bucket math is otherwise that of token_bucket.cc.
//
// Fails closed: when Redis cannot be reached Admit answers 503 service_unavailable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/quota/clock.h"
#include "core/quota/quota.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

class RedisQuotaStore : public QuotaStore {
 public:
  // `warp` is for tests and must otherwise be nullptr: time that passes on it from construction
  // on is added to Redis's TIME, so a test can move time forward (a ManualClock) without
  // sleeping. Its absolute reading is never used. `key_prefix` namespaces the keys:
  // <prefix>{<client_id>}:bucket and <prefix>{<client_id>}:leases.
  explicit RedisQuotaStore(std::shared_ptr<RedisConnection> redis, const Clock* warp = nullptr,
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

  // The decision script's parts, for a script that admits and does more in the same step
  // (core/jobs/redis_admit_and_create.h): its Lua source (it reads KEYS[1..2] and ARGV[1..8]
  // and returns {code, limit, remaining, reset_seconds, retry_after_seconds}), its keys and
  // arguments, and the decision its reply stands for.
  static const std::string& ScriptLua();
  std::vector<std::string> ScriptKeys(const Principal& principal) const;
  std::vector<std::string> ScriptArgs(const char* op, const Principal& principal,
                                      const std::string& lease_id, int64_t lease_ttl_ms) const;
  struct ScriptResult {
    int64_t code = 0;  // 0 ok, 1 concurrency cap, 2 empty bucket
    RateLimitInfo info;
    int64_t retry_after_seconds = 0;
  };
  // service_unavailable (logged) when Redis failed or the reply is not the script's.
  static StatusOr<ScriptResult> ParseReply(const char* op, const StatusOr<RedisReply>& reply);
  static QuotaDecision AdmitDecision(const Principal& principal,
                                     const StatusOr<ScriptResult>& result);

 private:
  StatusOr<ScriptResult> Run(const char* op, const Principal& principal,
                             const std::string& lease_id, int64_t lease_ttl_ms);

  std::shared_ptr<RedisConnection> redis_;
  const Clock* warp_;
  int64_t warp_origin_ms_;
  std::string key_prefix_;
};

}  // namespace dnaserve::core
