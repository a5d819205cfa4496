// The answer cache for reference-derived inputs (issue 25, scope 6), end to end over real HTTP:
// - interval predictions and find-genes by interval (runner/workflows/interval_answers.h): a
//   second request is served from the cache (meta.cached) with `data` and the text tracks the
//   same bytes, contig aliases share the entry, other options miss; a second tenant gets the
//   public interval answer and nothing of the first tenant's raw-sequence requests; a Redis
//   failure in the cache falls back to computing;
// - batch (VCF) jobs with the cache: a job whose variants were partly cached and whose runner
//   was killed mid-way resumes, and its annotated VCF is byte for byte a cold job's.
// A stack of its own on database 7 of the integration service's redis-server: a gateway and a
// runner holding GRCh37 chr20 (with the answer cache on, as deployed), the service's workers and
// the bundled splice-human package. Skips with a message when the Debian packages the reference
// comes from cannot be had.
#include <rapidjson/document.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/redis/redis_connection.h"
#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

constexpr int kDb = 7;
constexpr int64_t kStart = 5750001;  // chr20:5,750,001-5,760,000: 10 kb (1-based inclusive)
constexpr int64_t kEnd = 5760000;

struct CacheStack {
  Service* svc = nullptr;
  BuiltCatalogue built;
  std::unique_ptr<dnaserve::variant::ReferenceGenome> reference;
  std::string dir, base, workers;
  LaunchedWorker splice;
  ChildProcess runner;
  LaunchedGateway gateway;
  std::shared_ptr<dnaserve::core::RedisConnection> redis;

  std::string Cut(int64_t start, int64_t end) const {
    auto bases = reference->Fetch("20", start - 1, end);
    REQUIRE(bases.ok());
    return *bases;
  }
  std::map<std::string, std::string> RunnerEnv() const {
    return {{"DNASERVE_GRCH37_CATALOGUE", built.catalogue},
            {"DNASERVE_GRCH37_FASTA", built.fasta},
            {"DNASERVE_VARIANT_WORK_DIR", dir + "/runner-scratch"}};
  }
};

CacheStack* GetStack(std::string* skip) {
  static std::string reason;
  static CacheStack* instance = []() -> CacheStack* {
    Service* svc = Service::Get(&reason);
    if (svc == nullptr) return nullptr;
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto s = std::make_unique<CacheStack>();
    s->svc = svc;
    s->built = *built;
    auto reference = dnaserve::variant::ReferenceGenome::Open(built->fasta);
    if (!reference.ok()) {
      reason = reference.status().message();
      return nullptr;
    }
    s->reference = std::move(reference).value();
    s->dir = MakeTempDir("dnaserve-interval-cache-it");
    if (!StartBundledSpliceWorker(s->dir, &s->splice, &reason)) return nullptr;
    s->workers = WorkersWithSplice(*svc, s->splice.address());
    if (!StartReferenceStack(*svc, kDb, s->workers, *built, "splice", s->dir, &s->runner,
                             &s->gateway, &reason)) {
      return nullptr;
    }
    s->base = s->gateway.base_url();
    auto redis =
        dnaserve::core::RedisConnection::Create(svc->redis_url() + "/" + std::to_string(kDb));
    if (!redis.ok()) {
      reason = "cannot reach the service's Redis";
      return nullptr;
    }
    s->redis = *redis;
    std::atexit([] { delete instance; });
    return s.release();
  }();
  *skip = reason;
  return instance;
}

#define REQUIRE_STACK(var)                   \
  std::string var##_skip;                    \
  CacheStack* var = GetStack(&var##_skip);   \
  if (var == nullptr) {                      \
    WARN("skipped: " << var##_skip);         \
    return;                                  \
  }

HttpResult Post(const CacheStack& s, const std::string& key, const std::string& path,
                const std::string& body, std::vector<std::string> extra = {},
                const std::string& content_type = "application/json") {
  std::vector<std::string> headers = {"Authorization: Bearer " + key,
                                      "Content-Type: " + content_type};
  for (auto& h : extra) headers.push_back(std::move(h));
  return GatewayRequest("POST", s.base, path, headers, body, 600);
}

HttpResult Get(const CacheStack& s, const std::string& key, const std::string& path) {
  return GatewayRequest("GET", s.base, path, {"Authorization: Bearer " + key});
}

std::string Interval(const std::string& contig, int64_t start, int64_t end,
                     const std::string& strand = "+") {
  return "{\"contig\": \"" + contig + "\", \"start\": " + std::to_string(start) +
         ", \"end\": " + std::to_string(end) + ", \"strand\": \"" + strand + "\"}";
}

std::string IntervalBody(const std::string& interval, const std::string& options = "") {
  return "{\"interval\": " + interval + (options.empty() ? "" : ", \"options\": " + options) + "}";
}

// The body's `data` member, byte for byte as sent (everything before ,"meta":).
std::string DataText(const std::string& body) {
  const size_t meta = body.find(",\"meta\":");
  REQUIRE(meta != std::string::npos);
  return body.substr(0, meta);
}

bool MetaCached(const std::string& body) {
  auto doc = ParseJson(body);
  const auto& meta = (*doc)["meta"];
  REQUIRE(meta.HasMember("cached"));
  return meta["cached"].GetBool();
}

std::string MetaString(const std::string& body, const char* name) {
  auto doc = ParseJson(body);
  return (*doc)["meta"][name].GetString();
}

std::set<std::string> CacheEntries(dnaserve::core::RedisConnection& redis) {
  std::set<std::string> out;
  auto reply = redis.Command({"KEYS", "dnaserve:{acache}:e:*"});
  REQUIRE(reply.ok());
  for (const auto& e : reply->elements) out.insert(e.str);
  return out;
}

// Every entry deleted behind the cache's back (a lookup then refunds its charge): the next
// request of anything is computed cold.
void EmptyCache(dnaserve::core::RedisConnection& redis) {
  for (const std::string& key : CacheEntries(redis)) REQUIRE(redis.Command({"DEL", key}).ok());
}

std::string RunnerLog(const CacheStack& s) { return ReadFile(s.dir + "/runner.log"); }

HttpResult FinishedJob(const CacheStack& s, const std::string& key, const std::string& job_id) {
  HttpResult last;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(900);
  while (std::chrono::steady_clock::now() < until) {
    last = Get(s, key, "/v1/tasks/jobs/" + job_id);
    if (last.status != 202) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  FAIL("job " << job_id << " did not finish; last answer " << last.body);
  return last;
}

std::string JobIdOf(const HttpResult& accepted) {
  INFO(accepted.body.substr(0, 400));
  REQUIRE(accepted.status == 202);
  return (*ParseJson(accepted.body))["data"]["job_id"].GetString();
}

}  // namespace

TEST_CASE("interval cache: a 10 kb interval again is served from the cache as the same bytes "
          "and other options or formats are their own entries",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::string path = "/v1/tasks/promoter/predict";
  const std::string body = IntervalBody(Interval("chr20", kStart, kEnd), R"({"threshold": 0.0})");
  const size_t before = CacheEntries(*s->redis).size();

  auto first = Post(*s, alice, path, body);
  INFO(first.body.substr(0, 400));
  REQUIRE(first.status == 200);
  CHECK_FALSE(MetaCached(first.body));
  CHECK(CacheEntries(*s->redis).size() == before + 1);
  auto second = Post(*s, alice, path, body);
  REQUIRE(second.status == 200);
  CHECK(MetaCached(second.body));
  CHECK(DataText(second.body) == DataText(first.body));
  CHECK(MetaString(second.body, "request_id") != MetaString(first.body, "request_id"));
  CHECK((*ParseJson(second.body))["meta"]["inference_time_ms"].GetInt64() == 0);
  // Not trivially equal: every window's score, on contig positions.
  CHECK((*ParseJson(first.body))["data"]["window_details"].Size() >= 5);
  CHECK(CacheEntries(*s->redis).size() == before + 1);

  // Another threshold is another answer; so is strand '-'.
  auto other = Post(*s, alice, path,
                    IntervalBody(Interval("chr20", kStart, kEnd), R"({"threshold": 0.9})"));
  REQUIRE(other.status == 200);
  CHECK_FALSE(MetaCached(other.body));
  auto minus = Post(*s, alice, path,
                    IntervalBody(Interval("chr20", kStart, kEnd, "-"), R"({"threshold": 0.0})"));
  REQUIRE(minus.status == 200);
  CHECK_FALSE(MetaCached(minus.body));
  CHECK(DataText(minus.body) != DataText(first.body));

  // Text tracks: the same bytes from the cache (one entry per format), no id in them.
  for (const auto& [task, format] : std::vector<std::pair<std::string, std::string>>{
           {"promoter", "bed"}, {"promoter", "bedgraph"}, {"splice", "gff3"}}) {
    INFO(task << " " << format);
    const std::string track_body =
        IntervalBody(Interval("chr20", kStart, kEnd),
                     task == "splice" ? R"({"threshold": 0.01})" : R"({"threshold": 0.0})");
    const std::string track_path = "/v1/tasks/" + task + "/predict?format=" + format;
    const size_t entries = CacheEntries(*s->redis).size();
    auto cold = Post(*s, alice, track_path, track_body);
    REQUIRE(cold.status == 200);
    CHECK(CacheEntries(*s->redis).size() == entries + 1);
    auto warm = Post(*s, alice, track_path, track_body);
    REQUIRE(warm.status == 200);
    CHECK(CacheEntries(*s->redis).size() == entries + 1);
    CHECK(warm.body == cold.body);
    CHECK(cold.body.find("chr20\t") != std::string::npos);
  }
}

TEST_CASE("interval cache: chr20 and 20 and NC_000020.10 share an entry and each answer is "
          "the one computed cold for that name",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::string path = "/v1/tasks/splice/predict";
  const std::string options = R"({"threshold": 0.01})";
  const int64_t start = kStart + 20000, end = kEnd + 20000;
  auto chr20 = Post(*s, alice, path, IntervalBody(Interval("chr20", start, end), options));
  REQUIRE(chr20.status == 200);
  CHECK_FALSE(MetaCached(chr20.body));
  for (const std::string alias : {"20", "NC_000020.10"}) {
    INFO(alias);
    const std::string body = IntervalBody(Interval(alias, start, end), options);
    auto hit = Post(*s, alice, path, body);
    REQUIRE(hit.status == 200);
    CHECK(MetaCached(hit.body));
    CHECK((*ParseJson(hit.body))["meta"]["interval"]["contig"].GetString() == alias);
    // The same alias computed cold: every entry gone first.
    EmptyCache(*s->redis);
    auto cold = Post(*s, alice, path, body);
    REQUIRE(cold.status == 200);
    CHECK_FALSE(MetaCached(cold.body));
    CHECK(DataText(hit.body) == DataText(cold.body));
  }
}

TEST_CASE("interval cache: find-genes by interval is served from the cache as the same bytes",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::string path = "/v1/workflows/find-genes-and-predict-expression";
  const std::string body = "{\"interval\": " + Interval("chr20", kStart, kEnd) +
                           ", \"options\": {\"description\": \"adult liver\"}}";
  auto first = Post(*s, alice, path, body);
  INFO(first.body.substr(0, 400));
  REQUIRE(first.status == 200);
  CHECK_FALSE(MetaCached(first.body));
  auto second = Post(*s, alice, path, body);
  REQUIRE(second.status == 200);
  CHECK(MetaCached(second.body));
  CHECK(DataText(second.body) == DataText(first.body));
  CHECK(MetaString(second.body, "job_id") != MetaString(first.body, "job_id"));
}

TEST_CASE("interval cache: a second tenant gets the public interval answer and nothing of the "
          "first tenant's raw-sequence requests",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::string bob = s->svc->keys().bob;
  const std::string path = "/v1/tasks/splice/predict";
  const std::string options = R"({"threshold": 0.01})";

  // Public: alice's interval answer is bob's, the same data, his own ids.
  const std::string pub = IntervalBody(Interval("chr20", kStart + 40000, kEnd + 40000), options);
  auto alice_interval = Post(*s, alice, path, pub);
  REQUIRE(alice_interval.status == 200);
  auto bob_interval = Post(*s, bob, path, pub);
  REQUIRE(bob_interval.status == 200);
  CHECK(MetaCached(bob_interval.body));
  CHECK(DataText(bob_interval.body) == DataText(alice_interval.body));
  CHECK(bob_interval.body.find(MetaString(alice_interval.body, "job_id")) == std::string::npos);
  CHECK(bob_interval.body.find(MetaString(alice_interval.body, "request_id")) ==
        std::string::npos);
  const auto kept = CacheEntries(*s->redis);

  // Alice's raw sequences: exactly the reference's bases of another interval, and the same
  // with one change of hers; sync and queued.
  const int64_t start = kStart + 60000, end = kStart + 62000;
  const std::string exact = s->Cut(start, end);
  std::string secret = exact;
  secret[1000] = secret[1000] == 'C' ? 'T' : 'C';
  std::vector<std::string> alice_jobs;
  for (const std::string& bases : {exact, secret}) {
    const std::string raw = "{\"sequence\": \"" + bases + "\", \"options\": " + options + "}";
    auto sync = Post(*s, alice, path, raw);
    REQUIRE(sync.status == 200);
    auto queued = Post(*s, alice, path, raw, {"Prefer: respond-async"});
    alice_jobs.push_back(JobIdOf(queued));
    REQUIRE(FinishedJob(*s, alice, alice_jobs.back()).status == 200);
  }
  // Nothing of them was kept: the same entries as before, none holding her bases.
  CHECK(CacheEntries(*s->redis) == kept);
  for (const auto& key : kept) {
    auto value = s->redis->Command({"GET", key});
    REQUIRE(value.ok());
    CHECK(value->str.find(secret.substr(900, 200)) == std::string::npos);
  }

  // Bob: the interval alice sent as raw bases is computed for him (not served from anything
  // of hers); her jobs are not his to read; his answers hold none of her ids.
  auto same_bases = Post(*s, bob, path, IntervalBody(Interval("chr20", start, end), options));
  REQUIRE(same_bases.status == 200);
  CHECK_FALSE(MetaCached(same_bases.body));
  for (const std::string& job_id : alice_jobs) {
    CHECK(Get(*s, bob, "/v1/tasks/jobs/" + job_id).status == 404);
    CHECK(same_bases.body.find(job_id) == std::string::npos);
  }
  auto listed = Get(*s, bob, "/v1/tasks/jobs?limit=500");
  REQUIRE(listed.status == 200);
  for (const std::string& job_id : alice_jobs) {
    CHECK(listed.body.find(job_id) == std::string::npos);
  }
}

TEST_CASE("interval cache: a Redis error in the cache falls back to computing",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::string path = "/v1/tasks/promoter/predict";
  const std::string body =
      IntervalBody(Interval("chr20", kStart + 80000, kEnd + 80000), R"({"threshold": 0.0})");
  // The cache's index made a string: every cache script now fails inside Redis (WRONGTYPE).
  REQUIRE(s->redis->Command({"DEL", "dnaserve:{acache}:index"}).ok());
  REQUIRE(s->redis->Command({"SET", "dnaserve:{acache}:index", "broken"}).ok());
  auto first = Post(*s, alice, path, body);
  auto second = Post(*s, alice, path, body);
  REQUIRE(s->redis->Command({"DEL", "dnaserve:{acache}:index"}).ok());  // repaired
  REQUIRE(first.status == 200);
  REQUIRE(second.status == 200);
  CHECK_FALSE(MetaCached(first.body));
  CHECK_FALSE(MetaCached(second.body));  // nothing could be kept
  CHECK(DataText(second.body) == DataText(first.body));
  CHECK(RunnerLog(*s).find("answer_cache_unavailable") != std::string::npos);
  auto third = Post(*s, alice, path, body);
  REQUIRE(third.status == 200);
  CHECK_FALSE(MetaCached(third.body));
  auto fourth = Post(*s, alice, path, body);
  REQUIRE(fourth.status == 200);
  CHECK(MetaCached(fourth.body));
  CHECK(DataText(fourth.body) == DataText(first.body));
}

namespace {

// `n` seeded random chr20 SNVs as "chr20:pos:ref:alt" (reference base checked).
std::vector<std::string> RandomSnvs(const CacheStack& s, size_t n, uint32_t seed) {
  std::vector<std::string> out;
  uint32_t x = seed;
  while (out.size() < n) {
    x = x * 1664525u + 1013904223u;
    const int64_t pos = 2000000 + static_cast<int64_t>(x % 58000000u);
    const std::string ref = s.Cut(pos, pos);
    if (ref == "N") continue;
    out.push_back("chr20:" + std::to_string(pos) + ":" + ref + ":" + (ref == "C" ? "T" : "C"));
  }
  return out;
}

std::string VcfOf(const std::vector<std::string>& variants) {
  std::string text = "##fileformat=VCFv4.2\n##contig=<ID=chr20>\n"
                     "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  for (const auto& v : variants) {
    std::vector<std::string> p;
    std::istringstream in(v);
    for (std::string f; std::getline(in, f, ':');) p.push_back(f);
    text += p[0] + "\t" + p[1] + "\t.\t" + p[2] + "\t" + p[3] + "\t.\t.\t.\n";
  }
  return text;
}

std::string AnnotatedVcf(const CacheStack& s, const std::string& key, const std::string& job_id) {
  auto file = Get(s, key, "/v1/tasks/jobs/" + job_id + "/files/annotated.vcf.gz");
  REQUIRE(file.status == 200);
  return file.body;
}

int64_t CachedVariants(const rapidjson::Document& summary) {
  REQUIRE(summary["meta"].HasMember("cached_variants"));
  return summary["meta"]["cached_variants"].GetInt64();
}

}  // namespace

TEST_CASE("interval cache: a VCF job with partly cached variants and a runner killed mid-way "
          "writes the annotated VCF of a cold job",
          "[interval-cache]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  const std::vector<std::string> variants = RandomSnvs(*s, 400, 9090);  // 4 chunks
  const std::string vcf = VcfOf(variants);

  // 40 of them scored synchronously first (kept), from the first and the third chunk.
  std::vector<std::string> early;
  for (size_t i = 0; i < 20; ++i) early.push_back(variants[i * 3]);
  for (size_t i = 0; i < 20; ++i) early.push_back(variants[200 + i * 5]);
  std::string sync_body = "{\"variants\": [";
  for (size_t i = 0; i < early.size(); ++i) sync_body += (i ? ", \"" : "\"") + early[i] + "\"";
  sync_body += "]}";
  EmptyCache(*s->redis);
  auto sync = Post(*s, alice, "/v1/variants/score", sync_body);
  REQUIRE(sync.status == 200);

  // The job: once its first chunk is checkpointed, its runner dies; another resumes it.
  const std::string job_id =
      JobIdOf(Post(*s, alice, "/v1/variants/score", vcf, {}, "text/x-vcf"));
  REQUIRE(WaitFor(
      [&] {
        auto polled = Get(*s, alice, "/v1/tasks/jobs/" + job_id);
        return polled.status == 202 && polled.body.find("chunk 2 of 4") != std::string::npos;
      },
      std::chrono::seconds(600)));
  s->runner.Kill();
  ChildProcess replacement;
  const std::string log = s->dir + "/runner-replacement.log";
  REQUIRE(StartRunner(&replacement, s->svc->redis_url() + "/" + std::to_string(kDb), s->workers,
                      log, s->RunnerEnv()));
  s->runner = std::move(replacement);
  auto resumed = FinishedJob(*s, alice, job_id);
  INFO(resumed.body.substr(0, 400));
  REQUIRE(resumed.status == 200);
  CHECK(ReadFile(log).find("variant_batch_chunk_resumed") != std::string::npos);
  auto resumed_doc = ParseJson(resumed.body);
  // At least the 40 kept before (the killed runner may have kept some of chunk 2 too).
  CHECK(CachedVariants(*resumed_doc) >= 40);
  CHECK(CachedVariants(*resumed_doc) < 400);

  // The same VCF cold: every entry gone, nothing recalled.
  EmptyCache(*s->redis);
  const std::string cold_id =
      JobIdOf(Post(*s, alice, "/v1/variants/score", vcf, {}, "text/x-vcf"));
  auto cold = FinishedJob(*s, alice, cold_id);
  REQUIRE(cold.status == 200);
  auto cold_doc = ParseJson(cold.body);
  CHECK(CachedVariants(*cold_doc) == 0);

  // Byte for byte the same annotated VCF (its header names no job and no date), the same
  // results.
  const std::string resumed_vcf = AnnotatedVcf(*s, alice, job_id);
  const std::string cold_vcf = AnnotatedVcf(*s, alice, cold_id);
  CHECK(resumed_vcf.size() > 1000);
  CHECK(resumed_vcf == cold_vcf);
  CHECK((*resumed_doc)["data"]["results"] == (*cold_doc)["data"]["results"]);
  CHECK((*resumed_doc)["data"]["counts"]["scored"].GetInt64() == 400);

  // And a third run is served wholly from the cache, the same bytes again.
  const std::string warm_id =
      JobIdOf(Post(*s, alice, "/v1/variants/score", vcf, {}, "text/x-vcf"));
  auto warm = FinishedJob(*s, alice, warm_id);
  REQUIRE(warm.status == 200);
  CHECK(CachedVariants(*ParseJson(warm.body)) == 400);
  CHECK(AnnotatedVcf(*s, alice, warm_id) == cold_vcf);
}

// Not a test (hidden: ctest never runs it; no timing is asserted): the figures of
// BENCHMARKS.md "Interval answer cache". A 10 kb interval, computed (a new interval each time)
// and served from the cache (the same intervals again), for splice (the bundled splice-human)
// and promoter (the integration service's small model), JSON.
//   build/tests/integration_tests '[interval-cache-bench]'
TEST_CASE("interval cache: hit and miss latency of a 10 kb interval", "[.][interval-cache-bench]") {
  REQUIRE_STACK(s);
  const std::string alice = s->svc->keys().alice;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (const std::string task : {"splice", "promoter"}) {
    std::vector<double> miss, hit;
    std::vector<std::string> bodies;
    size_t body_bytes = 0;
    for (int i = 0; i < 5; ++i) {
      const int64_t start = 30000001 + i * 100000;
      bodies.push_back(IntervalBody(Interval("chr20", start, start + 9999)));
    }
    for (int round = 0; round < 2; ++round) {
      for (const auto& body : bodies) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = Post(*s, alice, "/v1/tasks/" + task + "/predict", body);
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
        REQUIRE(r.status == 200);
        CHECK(MetaCached(r.body) == (round == 1));
        body_bytes = r.body.size();
        (round == 0 ? miss : hit).push_back(ms);
      }
    }
    int64_t entry_bytes = 0;  // the largest entry so far (this task's are the largest)
    for (const auto& key : CacheEntries(*s->redis)) {
      auto n = s->redis->Command({"STRLEN", key});
      if (n.ok()) entry_bytes = std::max<int64_t>(entry_bytes, n->integer);
    }
    WARN(task << " 10 kb (response " << body_bytes << " B, largest entry " << entry_bytes
              << " B): miss median " << median(miss) << " ms (min "
              << *std::min_element(miss.begin(), miss.end()) << ", max "
              << *std::max_element(miss.begin(), miss.end()) << "); hit median " << median(hit)
              << " ms (min " << *std::min_element(hit.begin(), hit.end()) << ", max "
              << *std::max_element(hit.begin(), hit.end()) << ")");
  }
}
