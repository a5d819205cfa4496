// A bounded cache of public answers in Redis, shared by every runner: answers computed from the
// reference genome alone (a variant's scores), which are the same for every tenant. Nothing a
// client sent as raw sequence is ever stored here, and no key names a tenant (callers build the
// key material; variant_answers.h says what goes into it).
//
// Bounded without relying on Redis's maxmemory (an operator's Redis may have none, or a policy
// that evicts queue entries): every entry is accounted in a byte budget of its own, kept by the
// two Lua scripts in answer_cache.cc, which run atomically in Redis:
//   <prefix>{acache}:index  sorted set: entry key -> last use (a counter), oldest first
//   <prefix>{acache}:sizes  hash: entry key -> the bytes it is charged (value + key + overhead)
//   <prefix>{acache}:bytes  the sum of :sizes
//   <prefix>{acache}:seq    the use counter
//   <prefix>{acache}:e:<sha256 of the key material>   the answer, with a TTL
// A store that takes :bytes past the budget evicts least recently used entries until it fits;
// an entry whose TTL ended is refunded when a lookup finds it gone (else it ages out of the
// index like any other). So the index, the sizes and the entries together never hold more than
// the budget (plus one entry) of answers, whatever the TTL, and the TTL bounds an answer's age.
//
// A Redis failure never fails a request: a lookup that fails is a miss, a store that fails is
// skipped (both logged, and counted in stats()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/redis/redis_connection.h"

namespace dnaserve::runner {

struct AnswerCacheOptions {
  int64_t budget_bytes = 0;  // 0: the cache is off (every lookup misses, nothing is stored)
  int64_t ttl_seconds = 86400;
  std::string prefix = "dnaserve:";
};

// What one entry is charged beyond its value and key: its index member, its sizes field and
// Redis's own per-key bookkeeping, roughly.
inline constexpr int64_t kAnswerEntryOverheadBytes = 160;

struct AnswerCacheStats {
  int64_t hits = 0, misses = 0, stores = 0, evictions = 0, errors = 0;
};

class AnswerCache {
 public:
  AnswerCache(std::shared_ptr<core::RedisConnection> redis, AnswerCacheOptions options);

  bool enabled() const { return options_.budget_bytes > 0 && redis_ != nullptr; }
  // The answer stored under each key material, nullopt for a miss; all misses when Redis fails.
  // One round trip for the lot.
  std::vector<std::optional<std::string>> Lookup(const std::vector<std::string>& materials);
  // Stores each (key material, answer); an answer larger than the whole budget is not stored.
  void Store(const std::vector<std::pair<std::string, std::string>>& entries);
  AnswerCacheStats stats() const;

  // The Redis key of an entry (for tests: TTLs, deleting one behind the cache's back).
  std::string EntryKey(const std::string& material) const;
  std::string IndexKey() const;
  std::string BytesKey() const;

 private:
  void CountError(const char* operation, const std::string& reason);

  std::shared_ptr<core::RedisConnection> redis_;
  AnswerCacheOptions options_;
  std::atomic<int64_t> hits_{0}, misses_{0}, stores_{0}, evictions_{0}, errors_{0};
};

}  // namespace dnaserve::runner
