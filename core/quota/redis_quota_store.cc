#include "core/quota/redis_quota_store.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "common/log.h"
#include "core/quota/quota_decision.h"
#include "core/quota/token_bucket.h"

namespace dnaserve::core {
namespace {

// KEYS[1] bucket hash {tokens, ts}; KEYS[2] leases sorted set (score = expiry ms).
// ARGV: op (admit|peek|release|renew), warp_ms (0 but in tests), capacity, refill_tokens,
//       refill_period_ms, max_concurrency, lease_id, lease_ttl_ms.
// Time is Redis's own (TIME, in ms, plus warp_ms): every replica's leases and refills are
// measured on one clock, whatever its own clock says.
// Returns {code, limit, remaining, reset_seconds, retry_after_seconds}; code 0 ok,
// 1 concurrency cap, 2 empty bucket. The bucket math mirrors token_bucket.cc (same epsilon).
const char* kQuotaLua = R"lua(
local op = ARGV[1]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local refill = tonumber(ARGV[4])
local period = tonumber(ARGV[5])
local max_leases = tonumber(ARGV[6])
local lease = ARGV[7]
local ttl = tonumber(ARGV[8])
local eps = 1e-9

-- The lease set lives as long as its longest lease.
local function expire_leases()
  local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if #newest == 2 then
    local left = tonumber(newest[2]) - now
    if left < 1 then left = 1 end
    redis.call('PEXPIRE', KEYS[2], left + 1000)
  end
end

if op == 'release' then
  redis.call('ZREM', KEYS[2], lease)
  return {0, 0, 0, 0, 0}
end
if op == 'renew' then
  local score = redis.call('ZSCORE', KEYS[2], lease)
  -- An expired lease is gone: renewing must not resurrect it past the cap.
  if score and tonumber(score) > now then
    redis.call('ZADD', KEYS[2], now + ttl, lease)
    expire_leases()
  end
  return {0, 0, 0, 0, 0}
end

local tokens = capacity
local ts = now
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
if state[1] and state[2] then
  tokens = tonumber(state[1])
  ts = tonumber(state[2])
  -- TIME never runs backwards by much, but a failover to a replica with another clock could:
  -- then nothing is refilled and the later timestamp stays.
  if now > ts then
    tokens = tokens + (now - ts) * refill / period
    ts = now
  end
end
if tokens > capacity - eps then tokens = capacity end
if tokens < 0 then tokens = 0 end

local function seconds_to_regain(n)
  if n <= 0 then return 0 end
  local s = math.ceil(n * period / (refill * 1000) - eps)
  if s < 0 then s = 0 end
  return s
end
local function reply(code, retry)
  local remaining = math.floor(tokens + eps)
  if remaining < 0 then remaining = 0 end
  return {code, capacity, remaining, seconds_to_regain(capacity - tokens), retry}
end

if op == 'peek' then return reply(0, 0) end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= max_leases then return reply(1, 1) end
if tokens < 1 - eps then
  local retry = seconds_to_regain(1 - tokens)
  if retry < 1 then retry = 1 end
  return reply(2, retry)
end
tokens = tokens - 1
if tokens < 0 then tokens = 0 end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.17g', ts))
-- Once full again the bucket equals a missing one, so it may vanish then.
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) * period / refill) + 1000)
redis.call('ZADD', KEYS[2], now + ttl, lease)
expire_leases()
return reply(0, 0)
)lua";

const RedisScript& QuotaScript() {
  static const RedisScript script(kQuotaLua);
  return script;
}

std::string FormatDouble(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

RedisQuotaStore::RedisQuotaStore(std::shared_ptr<RedisConnection> redis, const Clock* warp,
                                 std::string key_prefix)
    : redis_(std::move(redis)),
      warp_(warp),
      warp_origin_ms_(warp ? warp->NowMs() : 0),
      key_prefix_(std::move(key_prefix)) {}

// The {client_id} hash tag keeps both keys of a client in one Redis Cluster slot, as a
// multi-key script requires.
std::string RedisQuotaStore::BucketKey(const std::string& client_id) const {
  return key_prefix_ + "{" + client_id + "}:bucket";
}
std::string RedisQuotaStore::LeasesKey(const std::string& client_id) const {
  return key_prefix_ + "{" + client_id + "}:leases";
}

const std::string& RedisQuotaStore::ScriptLua() {
  static const std::string lua(kQuotaLua);
  return lua;
}

std::vector<std::string> RedisQuotaStore::ScriptKeys(const Principal& principal) const {
  return {BucketKey(principal.client_id), LeasesKey(principal.client_id)};
}

std::vector<std::string> RedisQuotaStore::ScriptArgs(const char* op, const Principal& principal,
                                                     const std::string& lease_id,
                                                     int64_t lease_ttl_ms) const {
  const BucketConfig config = BucketConfigForRate(principal.rate_per_minute);
  return {op, std::to_string(warp_ ? warp_->NowMs() - warp_origin_ms_ : 0),
          std::to_string(config.capacity),
          FormatDouble(config.refill_tokens), std::to_string(config.refill_period_ms),
          std::to_string(principal.max_concurrency), lease_id, std::to_string(lease_ttl_ms)};
}

StatusOr<RedisQuotaStore::ScriptResult> RedisQuotaStore::ParseReply(
    const char* op, const StatusOr<RedisReply>& reply) {
  if (!reply.ok()) {
    log::Warn("quota_store_error", {{"op", op}, {"error", reply.status().message()}});
    return Unavailable("the rate limiter is unavailable; retry shortly");
  }
  const auto& e = reply->elements;
  bool well_formed = reply->type == RedisReply::Type::kArray && e.size() == 5;
  for (size_t i = 0; well_formed && i < e.size(); ++i) {
    well_formed = e[i].type == RedisReply::Type::kInteger;
  }
  if (!well_formed) {
    log::Error("quota_store_bad_reply", {{"op", op}});
    return Unavailable("the rate limiter is unavailable; retry shortly");
  }
  ScriptResult result;
  result.code = e[0].integer;
  result.info.limit = e[1].integer;
  result.info.remaining = e[2].integer;
  result.info.reset_seconds = e[3].integer;
  result.retry_after_seconds = e[4].integer;
  return result;
}

StatusOr<RedisQuotaStore::ScriptResult> RedisQuotaStore::Run(const char* op,
                                                             const Principal& principal,
                                                             const std::string& lease_id,
                                                             int64_t lease_ttl_ms) {
  return ParseReply(op, redis_->Eval(QuotaScript(), ScriptKeys(principal),
                                     ScriptArgs(op, principal, lease_id, lease_ttl_ms)));
}

QuotaDecision RedisQuotaStore::AdmitDecision(const Principal& principal,
                                             const StatusOr<ScriptResult>& result) {
  if (!result.ok()) {
    QuotaDecision d;
    d.status = result.status();
    d.status.set_retry_after_seconds(1);
    d.info.limit = BucketCapacityForRate(principal.rate_per_minute);
    return d;
  }
  switch (result->code) {
    case 0: {
      QuotaDecision d;
      d.info = result->info;
      return d;
    }
    case 1:
      return ConcurrencyRefusal(principal, result->info);
    default:
      return RateRefusal(principal, result->info, result->retry_after_seconds);
  }
}

QuotaDecision RedisQuotaStore::Admit(const Principal& principal, const std::string& lease_id,
                                     int64_t lease_ttl_ms) {
  return AdmitDecision(principal, Run("admit", principal, lease_id, lease_ttl_ms));
}

RateLimitInfo RedisQuotaStore::Peek(const Principal& principal) {
  auto result = Run("peek", principal, "", 0);
  if (!result.ok()) {
    RateLimitInfo info;
    info.limit = BucketCapacityForRate(principal.rate_per_minute);
    return info;
  }
  return result->info;
}

void RedisQuotaStore::Release(const Principal& principal, const std::string& lease_id) {
  (void)Run("release", principal, lease_id, 0);
}

void RedisQuotaStore::Renew(const Principal& principal, const std::string& lease_id,
                            int64_t lease_ttl_ms) {
  (void)Run("renew", principal, lease_id, lease_ttl_ms);
}

}  // namespace dnaserve::core
