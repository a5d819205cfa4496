#include "runner/workflows/answer_cache.h"

#include "common/digest.h"
#include "common/log.h"

namespace dnaserve::runner {
namespace {

// KEYS: index, sizes, bytes, seq, then the entries. A hit moves the entry to the young end of
// the index; a miss whose entry is still accounted (its TTL ended) is refunded.
const core::RedisScript& LookupScript() {
  static const core::RedisScript script(R"lua(
local out = {}
for i = 5, #KEYS do
  local k = KEYS[i]
  local v = redis.call('GET', k)
  if v then
    redis.call('ZADD', KEYS[1], 'XX', redis.call('INCR', KEYS[4]), k)
    out[#out + 1] = v
  else
    local size = redis.call('HGET', KEYS[2], k)
    if size then
      redis.call('HDEL', KEYS[2], k)
      redis.call('ZREM', KEYS[1], k)
      redis.call('DECRBY', KEYS[3], size)
    end
    out[#out + 1] = false
  end
end
return out
)lua");
  return script;
}

// KEYS as above; ARGV: ttl, budget, overhead, then one value per entry. Charges each entry,
// then evicts the least recently used until the total fits the budget. Returns the evictions.
const core::RedisScript& StoreScript() {
  static const core::RedisScript script(R"lua(
local ttl, budget, overhead = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local evicted = 0
for i = 5, #KEYS do
  local k = KEYS[i]
  local v = ARGV[i - 1]
  local cost = #v + #k + overhead
  if cost <= budget then
    -- Bookkeeping first, the entry last: Redis does not undo a script's writes when a later
    -- command fails, and an entry nobody accounts for would escape the budget until its TTL.
    local old = redis.call('HGET', KEYS[2], k)
    redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[4]), k)
    redis.call('HSET', KEYS[2], k, cost)
    if old then redis.call('DECRBY', KEYS[3], old) end
    local total = redis.call('INCRBY', KEYS[3], cost)
    redis.call('SET', k, v, 'EX', ttl)
    while total > budget do
      local oldest = redis.call('ZPOPMIN', KEYS[1])
      if #oldest == 0 then
        -- nothing left to evict: the total had drifted (keys deleted by hand); start again
        redis.call('SET', KEYS[3], 0)
        break
      end
      local victim = oldest[1]
      local size = tonumber(redis.call('HGET', KEYS[2], victim) or '0')
      redis.call('HDEL', KEYS[2], victim)
      redis.call('DEL', victim)
      total = redis.call('DECRBY', KEYS[3], size)
      evicted = evicted + 1
    end
  end
end
return evicted
)lua");
  return script;
}

}  // namespace

AnswerCache::AnswerCache(std::shared_ptr<core::RedisConnection> redis, AnswerCacheOptions options)
    : redis_(std::move(redis)), options_(std::move(options)) {}

std::string AnswerCache::EntryKey(const std::string& material) const {
  // Hashed: the material can be long (expression contexts) and may hold any byte.
  return options_.prefix + "{acache}:e:" + HexDigest(DigestAlgorithm::kSha256, material);
}
std::string AnswerCache::IndexKey() const { return options_.prefix + "{acache}:index"; }
std::string AnswerCache::BytesKey() const { return options_.prefix + "{acache}:bytes"; }

void AnswerCache::CountError(const char* operation, const std::string& reason) {
  const int64_t n = ++errors_;
  // The first failure and every 100th after: a Redis outage must not flood the log.
  if (n == 1 || n % 100 == 0) {
    log::Warn("answer_cache_unavailable",
              {{"operation", operation}, {"reason", reason}, {"failures", n}});
  }
}

std::vector<std::optional<std::string>> AnswerCache::Lookup(
    const std::vector<std::string>& materials) {
  std::vector<std::optional<std::string>> out(materials.size());
  if (!enabled() || materials.empty()) return out;
  std::vector<std::string> keys = {IndexKey(), options_.prefix + "{acache}:sizes", BytesKey(),
                                   options_.prefix + "{acache}:seq"};
  for (const auto& m : materials) keys.push_back(EntryKey(m));
  auto reply = redis_->Eval(LookupScript(), keys, {});
  if (!reply.ok()) {
    CountError("lookup", reply.status().message());
    misses_ += static_cast<int64_t>(materials.size());
    return out;
  }
  if (reply->type != core::RedisReply::Type::kArray || reply->elements.size() != materials.size()) {
    CountError("lookup", "unexpected reply");
    misses_ += static_cast<int64_t>(materials.size());
    return out;
  }
  for (size_t i = 0; i < materials.size(); ++i) {
    const core::RedisReply& e = reply->elements[i];
    if (e.type == core::RedisReply::Type::kString) {
      out[i] = e.str;
      ++hits_;
    } else {
      ++misses_;
    }
  }
  return out;
}

void AnswerCache::Store(const std::vector<std::pair<std::string, std::string>>& entries) {
  if (!enabled() || entries.empty()) return;
  std::vector<std::string> keys = {IndexKey(), options_.prefix + "{acache}:sizes", BytesKey(),
                                   options_.prefix + "{acache}:seq"};
  std::vector<std::string> args = {std::to_string(options_.ttl_seconds),
                                   std::to_string(options_.budget_bytes),
                                   std::to_string(kAnswerEntryOverheadBytes)};
  for (const auto& [material, answer] : entries) {
    keys.push_back(EntryKey(material));
    args.push_back(answer);
  }
  auto reply = redis_->Eval(StoreScript(), keys, args);
  if (!reply.ok()) {
    CountError("store", reply.status().message());
    return;
  }
  stores_ += static_cast<int64_t>(entries.size());
  if (reply->type == core::RedisReply::Type::kInteger) evictions_ += reply->integer;
}

AnswerCacheStats AnswerCache::stats() const {
  return {hits_.load(), misses_.load(), stores_.load(), evictions_.load(), errors_.load()};
}

}  // namespace dnaserve::runner
