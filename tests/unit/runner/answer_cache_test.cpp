// The answer cache (runner/workflows/answer_cache.h) against a real redis-server, and the
// variant scores kept in it (variant_answers.h): served back as the same bytes, keyed by
// everything the answer depends on and by nothing about who asked.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "core/redis/redis_connection.h"
#include "runner/workflows/answer_cache.h"
#include "runner/workflows/variant_answers.h"
#include "runner/workflows/variant_score_response.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::runner;
using dnaserve::testing::StartRedis;

namespace {

int64_t Integer(core::RedisConnection& redis, const std::vector<std::string>& command) {
  auto reply = redis.Command(command);
  REQUIRE(reply.ok());
  if (reply->type == core::RedisReply::Type::kString) return std::stoll(reply->str);
  return reply->integer;
}

// A checked SNV with splice, chromatin and promoter results, as the scorers leave it.
VariantScoreResult ScoredResult(const std::string& splice_digest = "sha256:aaaa",
                                int64_t distance = 50) {
  VariantScoreResult result;
  result.splice = SpliceScorerInfo{"splice-human", splice_digest, distance, 1000};
  result.chromatin = ChromatinScorerInfo{{"chromatin-human", "sha256:cccc", 1000}, 2, 919};
  result.promoter = PromoterScorerInfo{{"promoter-human", "sha256:pppp", 300}, 1000, 150};
  ScoredVariant s;
  s.variant.input = "chr20:5753600:A:G";
  s.variant.assembly = "GRCh37";
  s.variant.contig = "20";
  s.variant.position = 5753600;
  s.variant.ref = "A";
  s.variant.alt = "G";
  SpliceDelta plus;
  plus.acceptor_gain = {0.123456, 3, 0.01, 0.133456};
  plus.donor_loss = {0.5, -7, 0.75, 0.25};
  SpliceDelta minus;
  minus.acceptor_loss = {0.25, 12, 0.3, 0.05};
  s.splice_plus = plus;
  s.splice_minus = minus;
  s.chromatin = std::vector<ChromatinDelta>{{4, "CTCF", "TF", 0.1, 0.30000001},
                                           {7, "H3K4me3", "histone", 0.9, 0.8}};
  s.promoter = PromoterDelta{0.2, 0.7, -150, 0, 13};
  result.variants.push_back(s);
  ScoredVariant problem;
  problem.variant.input = "chr20:1:A:*";
  problem.problem = core::VariantProblem{"unsupported_allele", "no"};
  result.variants.push_back(problem);
  return result;
}

// The same request before scoring: the variants checked, nothing scored yet.
VariantScoreResult Unscored(const VariantScoreResult& scored) {
  VariantScoreResult out = scored;
  out.chromatin->features_total = 0;  // set by the chromatin scorer as it runs
  for (ScoredVariant& s : out.variants) {
    s.splice_plus.reset();
    s.splice_minus.reset();
    s.chromatin.reset();
    s.promoter.reset();
  }
  return out;
}

std::string DataOf(const std::string& body) {
  const size_t meta = body.find(",\"meta\":");
  REQUIRE(meta != std::string::npos);
  return body.substr(0, meta);
}

std::string Render(const VariantScoreResult& result) {
  return RenderVariantScoreJson({}, result, "GRCh37", {"job", "request"});
}

}  // namespace

TEST_CASE("answer cache: stores, serves, and misses other keys", "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.Lookup({"a"})[0].has_value());
  cache.Store({{"a", "answer a"}, {"b", "answer b"}});
  auto got = cache.Lookup({"a", "c", "b"});
  REQUIRE(got.size() == 3);
  CHECK(got[0] == std::optional<std::string>("answer a"));
  CHECK_FALSE(got[1].has_value());
  CHECK(got[2] == std::optional<std::string>("answer b"));
  const AnswerCacheStats stats = cache.stats();
  CHECK(stats.hits == 2);
  CHECK(stats.misses == 2);
  CHECK(stats.errors == 0);
  // Entries carry the TTL.
  const int64_t ttl = Integer(*r.redis, {"TTL", cache.EntryKey("a")});
  CHECK(ttl > 3500);
  CHECK(ttl <= 3600);
}

TEST_CASE("answer cache: the byte budget evicts the least recently used, and holds",
          "[answer-cache]") {
  auto r = StartRedis();
  const std::string value(1000, 'x');
  const int64_t cost = 1000 + static_cast<int64_t>(AnswerCache(r.redis, {}).EntryKey("k0").size()) +
                       kAnswerEntryOverheadBytes;
  // Room for exactly three entries.
  AnswerCache cache(r.redis, {3 * cost + cost / 2, 3600, "dnaserve:"});
  cache.Store({{"k0", value}, {"k1", value}, {"k2", value}});
  REQUIRE(cache.Lookup({"k0"})[0].has_value());  // k0 used: k1 is now the oldest
  cache.Store({{"k3", value}});
  auto got = cache.Lookup({"k0", "k1", "k2", "k3"});
  CHECK(got[0].has_value());
  CHECK_FALSE(got[1].has_value());
  CHECK(got[2].has_value());
  CHECK(got[3].has_value());
  CHECK(cache.stats().evictions == 1);
  CHECK(Integer(*r.redis, {"GET", cache.BytesKey()}) == 3 * cost);

  // Many more stores: the accounted bytes, the index and the entries stay within the budget.
  for (int i = 0; i < 200; ++i) cache.Store({{"many" + std::to_string(i), value}});
  CHECK(Integer(*r.redis, {"GET", cache.BytesKey()}) <= 3 * cost + cost / 2);
  CHECK(Integer(*r.redis, {"ZCARD", cache.IndexKey()}) == 3);
  CHECK(Integer(*r.redis, {"DBSIZE"}) == 3 + 4);  // three entries, index, sizes, bytes, seq
  // An answer larger than the whole budget is not stored (and evicts nothing).
  cache.Store({{"huge", std::string(10 * cost, 'y')}});
  CHECK_FALSE(cache.Lookup({"huge"})[0].has_value());
  CHECK(Integer(*r.redis, {"ZCARD", cache.IndexKey()}) == 3);
}

TEST_CASE("answer cache: an expired entry is refunded when a lookup finds it gone",
          "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 1, "dnaserve:"});
  cache.Store({{"short", "lived"}});
  REQUIRE(Integer(*r.redis, {"GET", cache.BytesKey()}) > 0);
  REQUIRE(Integer(*r.redis, {"PEXPIRE", cache.EntryKey("short"), "1"}) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(cache.Lookup({"short"})[0].has_value());
  CHECK(Integer(*r.redis, {"GET", cache.BytesKey()}) == 0);
  CHECK(Integer(*r.redis, {"ZCARD", cache.IndexKey()}) == 0);
}

TEST_CASE("answer cache: a Redis failure is a miss, never an error", "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  cache.Store({{"a", "answer"}});
  // A key of the wrong type: every script call now fails inside Redis.
  REQUIRE(r.redis->Command({"DEL", cache.IndexKey()}).ok());
  REQUIRE(r.redis->Command({"SET", cache.IndexKey(), "not a sorted set"}).ok());
  CHECK_FALSE(cache.Lookup({"a"})[0].has_value());
  cache.Store({{"b", "answer"}});
  CHECK(cache.stats().errors == 2);
  CHECK(Integer(*r.redis, {"EXISTS", cache.EntryKey("b")}) == 0);  // nothing unaccounted
  // Redis gone altogether.
  r.server->Stop();
  CHECK_FALSE(cache.Lookup({"a", "b"})[0].has_value());
  cache.Store({{"c", "answer"}});
  CHECK(cache.stats().errors == 4);
}

TEST_CASE("answer cache: off with a budget of 0", "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {0, 3600, "dnaserve:"});
  CHECK_FALSE(cache.enabled());
  cache.Store({{"a", "answer"}});
  CHECK_FALSE(cache.Lookup({"a"})[0].has_value());
  CHECK(Integer(*r.redis, {"DBSIZE"}) == 0);
}

TEST_CASE("variant answers: served from the cache as the same bytes, meta.cached set",
          "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  CachedVariantAnswers answers(&cache);
  const VariantScoreResult computed = ScoredResult();
  const std::string first = Render(computed);
  CHECK(first.find("\"cached_results\":[],\"cached\":false") != std::string::npos);

  VariantScoreResult again = Unscored(computed);
  answers.Recall(&again);
  CHECK(again.variants[0].recalled.empty());  // nothing kept yet
  answers.Remember(computed.variants[0], computed);
  answers.Flush();

  again = Unscored(computed);
  answers.Recall(&again);
  REQUIRE(again.variants[0].recalled.size() == 3);
  CHECK(again.variants[1].recalled.empty());  // a variant with a problem is never looked up
  CHECK(again.chromatin->features_total == 919);
  const std::string second = Render(again);
  CHECK(DataOf(second) == DataOf(first));
  CHECK(second.find("\"cached_results\":[0],\"cached\":true") != std::string::npos);
}

TEST_CASE("variant answers: another digest, option or scorer set misses, a contig alias hits",
          "[answer-cache]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  CachedVariantAnswers answers(&cache);
  const VariantScoreResult computed = ScoredResult();
  answers.Remember(computed.variants[0], computed);
  answers.Flush();

  auto recalled = [&](VariantScoreResult request) {
    request = Unscored(request);
    answers.Recall(&request);
    return !request.variants[0].recalled.empty();
  };
  CHECK(recalled(ScoredResult()));
  CHECK_FALSE(recalled(ScoredResult("sha256:bbbb")));   // another splice package
  CHECK_FALSE(recalled(ScoredResult("sha256:aaaa", 51)));  // another splice distance
  VariantScoreResult other_top = ScoredResult();
  other_top.chromatin->top = 3;
  CHECK_FALSE(recalled(other_top));
  VariantScoreResult other_alt = ScoredResult();
  other_alt.variants[0].variant.alt = "T";
  CHECK_FALSE(recalled(other_alt));
  VariantScoreResult with_expression = ScoredResult();  // one scorer more: not all kept
  with_expression.expression = ExpressionScorerInfo{{"expr", "sha256:eeee", 9198}, 4599, {}, "", ""};
  CHECK_FALSE(recalled(with_expression));
  VariantScoreResult chr = ScoredResult();  // chr20 is the reference's 20
  chr.variants[0].variant.contig = "chr20";
  CHECK(recalled(chr));

  // No digest, no identity: neither read nor written.
  VariantScoreResult anonymous = ScoredResult("");
  CHECK(VariantAnswerKeys(anonymous.variants[0].variant, anonymous).empty());
  const int64_t before = Integer(*r.redis, {"DBSIZE"});
  answers.Remember(anonymous.variants[0], anonymous);
  answers.Flush();
  CHECK(Integer(*r.redis, {"DBSIZE"}) == before);
}
