// Interval answers in the answer cache (runner/workflows/interval_answers.h), against a real
// redis-server: the key material (what an interval answer depends on, contig aliases sharing
// it), the stored value read back, the caching backend an interval job calls its workers
// through (a hit makes no worker call and returns the worker's result with the timings
// zeroed; no digest, no cache or a failing Redis: the worker is called), and meta.cached.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>

#include "core/redis/redis_connection.h"
#include "runner/workflows/answer_cache.h"
#include "runner/workflows/interval_answers.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::runner;
using dnaserve::testing::StartRedis;
namespace pb = dnaserve::worker::v1;

namespace {

size_t EntryCount(core::RedisConnection& redis) {
  auto reply = redis.Command({"KEYS", "dnaserve:{acache}:e:*"});
  REQUIRE(reply.ok());
  return reply->elements.size();
}

IntervalPlace Place(const std::string& contig_as_sent = "chr20", int64_t start = 5750001,
                    int64_t end = 5760000, char strand = '+') {
  return IntervalPlace{"GRCh37", contig_as_sent, "20", start, end, strand};
}

pb::PredictRequest PromoterRequest(const std::string& sequence_name = "chr20",
                                   double threshold = 0.5) {
  pb::PredictRequest r;
  r.set_model("promoter-human");
  r.set_sequence("ACGTACGTNNACGT");
  r.set_sequence_name(sequence_name);
  r.set_result_format(pb::RESULT_FORMAT_JSON);
  r.mutable_promoter()->set_threshold(threshold);
  return r;
}

// A worker double: counts its calls, answers with the request's sequence_name in a BED line
// (as real workers name their text tracks) and with timings of its own.
class CountingWorker : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task, const pb::PredictRequest& request,
                                      const core::CallContext&,
                                      const core::ProgressCallback&) override {
    ++calls;
    last_sequence_name = request.sequence_name();
    if (fail) return Unavailable("worker down");
    pb::PredictResult result;
    result.set_model(request.model());
    result.set_cold_start(true);
    result.set_model_load_time_ms(1234);
    result.set_inference_time_ms(56 + calls);
    result.set_windows_processed(7);
    (*result.mutable_formats())["bed"] = request.sequence_name() + "\t0\t10\tpromoter\t900\t.\n";
    (*result.mutable_tracks())["promoter"] = "track type=bedGraph\n" + request.sequence_name() +
                                             "\t0\t10\t0.9\n";
    auto* window = result.mutable_promoter()->add_windows();
    window->set_start(0);
    window->set_end(10);
    window->set_score(0.123456789);
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override {
    return std::vector<pb::ModelInfo>{};
  }

  int calls = 0;
  bool fail = false;
  std::string last_sequence_name;
};

// A catalogue listing promoter-human with `digest` (the runner's view of the workers).
struct Catalogue {
  explicit Catalogue(const std::string& digest = "sha256:1111") {
    pb::ModelInfo info;
    info.set_id("promoter-human");
    info.set_package_digest(digest);
    models.SetModels(Task::kPromoter, {info});
  }
  core::ModelCatalogue models;
};

// The result as a client would see it after the job: timings aside, every byte.
std::string WithoutTimings(pb::PredictResult result) {
  result.set_cold_start(false);
  result.set_model_load_time_ms(0);
  result.set_inference_time_ms(0);
  return IntervalAnswerValue(result);
}

}  // namespace

TEST_CASE("interval answers: the key holds the interval and task and model and digest and "
          "options and no tenant",
          "[interval-answers]") {
  const pb::PredictRequest request = PromoterRequest("20");
  const std::string base = IntervalAnswerMaterial(Place(), Task::kPromoter, request, "sha256:1");
  CHECK(base == IntervalAnswerMaterial(Place(), Task::kPromoter, request, "sha256:1"));
  // The client's spelling of the contig is not in it (the reference's name is).
  CHECK(base == IntervalAnswerMaterial(Place("NC_000020.10"), Task::kPromoter, request,
                                       "sha256:1"));
  CHECK(base.find("chr20") == std::string::npos);

  std::map<std::string, std::string> others;
  others["start"] = IntervalAnswerMaterial(Place("chr20", 5750002), Task::kPromoter, request,
                                           "sha256:1");
  others["end"] = IntervalAnswerMaterial(Place("chr20", 5750001, 5760001), Task::kPromoter,
                                         request, "sha256:1");
  others["strand"] = IntervalAnswerMaterial(Place("chr20", 5750001, 5760000, '-'),
                                            Task::kPromoter, request, "sha256:1");
  others["task"] = IntervalAnswerMaterial(Place(), Task::kEnhancer, request, "sha256:1");
  others["digest"] = IntervalAnswerMaterial(Place(), Task::kPromoter, request, "sha256:2");
  pb::PredictRequest changed = request;
  changed.set_model("promoter-mouse");
  others["model"] = IntervalAnswerMaterial(Place(), Task::kPromoter, changed, "sha256:1");
  changed = request;
  changed.mutable_promoter()->set_threshold(0.25);
  others["threshold"] = IntervalAnswerMaterial(Place(), Task::kPromoter, changed, "sha256:1");
  changed = request;
  changed.set_result_format(pb::RESULT_FORMAT_BED);
  others["format"] = IntervalAnswerMaterial(Place(), Task::kPromoter, changed, "sha256:1");
  changed = request;
  changed.set_sequence("ACGTACGTNNACGA");
  others["bases"] = IntervalAnswerMaterial(Place(), Task::kPromoter, changed, "sha256:1");
  for (const auto& [what, material] : others) {
    INFO(what);
    CHECK(material != base);
  }
  // Another GRCh37 name of the same contig keys the same (the reference's name is normalised).
  IntervalPlace chr_named = Place();
  chr_named.reference_contig = "chr20";
  CHECK(IntervalAnswerMaterial(chr_named, Task::kPromoter, request, "sha256:1") == base);
}

TEST_CASE("interval answers: a stored result reads back exactly and a damaged one is a miss",
          "[interval-answers]") {
  CountingWorker worker;
  auto result = worker.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr);
  REQUIRE(result.ok());
  const std::string value = IntervalAnswerValue(*result);
  auto back = ReadIntervalAnswer(value);
  REQUIRE(back.has_value());
  CHECK(IntervalAnswerValue(*back) == value);
  CHECK(back->promoter().windows(0).score() == 0.123456789);
  CHECK(back->formats().at("bed") == result->formats().at("bed"));
  CHECK_FALSE(ReadIntervalAnswer("").has_value());
  CHECK_FALSE(ReadIntervalAnswer("\xff\xff\xff\xff").has_value());
}

TEST_CASE("interval answers: a second job of the same interval makes no worker call and gets "
          "the same result whatever alias it names",
          "[interval-answers]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  const Catalogue catalogue;
  CountingWorker worker;

  IntervalAnswerBackend first(&worker, &cache, &catalogue.models, Place("chr20"));
  auto computed = first.Predict(Task::kPromoter, PromoterRequest("chr20"), {}, nullptr);
  REQUIRE(computed.ok());
  CHECK(worker.calls == 1);
  CHECK(worker.last_sequence_name == "20");  // the reference's name, whatever the alias
  CHECK_FALSE(first.all_cached());
  CHECK(EntryCount(*r.redis) == 1);

  for (const std::string alias : {"chr20", "20", "NC_000020.10"}) {
    INFO(alias);
    IntervalAnswerBackend again(&worker, &cache, &catalogue.models, Place(alias));
    auto served = again.Predict(Task::kPromoter, PromoterRequest(alias), {}, nullptr);
    REQUIRE(served.ok());
    CHECK(worker.calls == 1);
    CHECK(again.all_cached());
    CHECK(WithoutTimings(*served) == WithoutTimings(*computed));
    CHECK_FALSE(served->cold_start());
    CHECK(served->inference_time_ms() == 0);
    CHECK(served->model_load_time_ms() == 0);
  }
  CHECK(EntryCount(*r.redis) == 1);

  // Other options are another answer: computed, then kept under their own key.
  IntervalAnswerBackend other(&worker, &cache, &catalogue.models, Place("chr20"));
  REQUIRE(other.Predict(Task::kPromoter, PromoterRequest("chr20", 0.1), {}, nullptr).ok());
  CHECK(worker.calls == 2);
  CHECK_FALSE(other.all_cached());
  CHECK(EntryCount(*r.redis) == 2);

  // A job with one call served and one computed is not served from the cache.
  IntervalAnswerBackend mixed(&worker, &cache, &catalogue.models, Place("chr20"));
  REQUIRE(mixed.Predict(Task::kPromoter, PromoterRequest("chr20"), {}, nullptr).ok());
  REQUIRE(mixed.Predict(Task::kPromoter, PromoterRequest("chr20", 0.2), {}, nullptr).ok());
  CHECK(worker.calls == 3);
  CHECK_FALSE(mixed.all_cached());

  // A worker failure is passed on and keeps nothing.
  worker.fail = true;
  IntervalAnswerBackend failing(&worker, &cache, &catalogue.models, Place("chr20"));
  CHECK(failing.Predict(Task::kPromoter, PromoterRequest("chr20", 0.3), {}, nullptr).status()
            .code() == ErrorCode::kServiceUnavailable);
  CHECK(EntryCount(*r.redis) == 3);
}

TEST_CASE("interval answers: no digest or no cache or a failing Redis means the worker is "
          "called",
          "[interval-answers]") {
  auto r = StartRedis();
  CountingWorker worker;
  SECTION("a model without a package digest is neither looked up nor kept") {
    AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
    const Catalogue catalogue("");
    for (int i = 1; i <= 2; ++i) {
      IntervalAnswerBackend backend(&worker, &cache, &catalogue.models, Place());
      REQUIRE(backend.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr).ok());
      CHECK(worker.calls == i);
      CHECK_FALSE(backend.all_cached());
    }
    CHECK(EntryCount(*r.redis) == 0);
  }
  SECTION("a cache turned off (0 bytes) or absent") {
    AnswerCache off(r.redis, {0, 3600, "dnaserve:"});
    const Catalogue catalogue;
    for (AnswerCache* cache : {&off, &off, static_cast<AnswerCache*>(nullptr)}) {
      IntervalAnswerBackend backend(&worker, cache, &catalogue.models, Place());
      REQUIRE(backend.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr).ok());
      CHECK_FALSE(backend.all_cached());
    }
    CHECK(worker.calls == 3);
    CHECK(EntryCount(*r.redis) == 0);
  }
  SECTION("Redis answering errors: computed every time, counted as cache errors") {
    AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
    const Catalogue catalogue;
    // The index made a string: every cache script fails inside Redis (WRONGTYPE).
    REQUIRE(r.redis->Command({"SET", cache.IndexKey(), "broken"}).ok());
    for (int i = 1; i <= 2; ++i) {
      IntervalAnswerBackend backend(&worker, &cache, &catalogue.models, Place());
      auto result = backend.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr);
      REQUIRE(result.ok());
      CHECK(result->inference_time_ms() > 0);  // the worker's own answer
      CHECK(worker.calls == i);
      CHECK_FALSE(backend.all_cached());
    }
    CHECK(cache.stats().errors >= 2);
  }
  SECTION("Redis gone") {
    AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
    const Catalogue catalogue;
    r.server.reset();  // stops the redis-server
    IntervalAnswerBackend backend(&worker, &cache, &catalogue.models, Place());
    REQUIRE(backend.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr).ok());
    CHECK(worker.calls == 1);
    CHECK_FALSE(backend.all_cached());
    CHECK(cache.stats().errors >= 1);
  }
}

TEST_CASE("interval answers: meta.cached is added as meta's last member", "[interval-answers]") {
  CHECK(WithMetaCached(R"({"data":{"a":[1,2]},"meta":{"job_id":"j","interval":{"start":1}}})",
                       true) ==
        R"({"data":{"a":[1,2]},"meta":{"job_id":"j","interval":{"start":1},"cached":true}})");
  CHECK(WithMetaCached(R"({"data":{},"meta":{"job_id":"j"}})", false) ==
        R"({"data":{},"meta":{"job_id":"j","cached":false}})");
  // Other shapes are left alone rather than broken.
  for (const std::string body : {std::string("chr20\t0\t10\n"), std::string("{}"),
                                 std::string(R"({"data":{},"meta":{}})"),
                                 std::string(R"({"data":{"x":{}}})")}) {
    CHECK(WithMetaCached(body, true) == body);
  }
}

TEST_CASE("interval answers: an answer over the size cap is served but not cached and one under "
          "it is",
          "[interval-answers]") {
  auto r = StartRedis();
  AnswerCache cache(r.redis, {1 << 20, 3600, "dnaserve:"});
  const Catalogue catalogue;
  CountingWorker worker;
  auto answer = worker.Predict(Task::kPromoter, PromoterRequest("20"), {}, nullptr);
  REQUIRE(answer.ok());
  const int64_t answer_bytes = static_cast<int64_t>(IntervalAnswerValue(*answer).size());
  worker.calls = 0;

  // One byte under the answer: not stored, counted, and each job computes it again.
  const int64_t too_large_before = IntervalAnswersTooLarge();
  for (int job = 1; job <= 2; ++job) {
    IntervalAnswerBackend capped(&worker, &cache, &catalogue.models, Place(), answer_bytes - 1);
    auto served = capped.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr);
    REQUIRE(served.ok());
    CHECK(served->promoter().windows(0).score() == 0.123456789);
    CHECK_FALSE(capped.all_cached());
    CHECK(worker.calls == job);
    CHECK(EntryCount(*r.redis) == 0);
    CHECK(IntervalAnswersTooLarge() == too_large_before + job);
  }

  // Exactly the cap: kept, and the next job is served from the cache.
  IntervalAnswerBackend at_cap(&worker, &cache, &catalogue.models, Place(), answer_bytes);
  REQUIRE(at_cap.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr).ok());
  CHECK(EntryCount(*r.redis) == 1);
  IntervalAnswerBackend again(&worker, &cache, &catalogue.models, Place(), answer_bytes);
  REQUIRE(again.Predict(Task::kPromoter, PromoterRequest(), {}, nullptr).ok());
  CHECK(again.all_cached());
  CHECK(worker.calls == 3);
  CHECK(IntervalAnswersTooLarge() == too_large_before + 2);
  // The default cap is the documented 4 MiB.
  CHECK(kDefaultIntervalAnswerMaxBytes == 4 * 1024 * 1024);
}
