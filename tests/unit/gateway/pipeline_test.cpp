// The request pipeline and handlers without sockets: in-memory job and quota stores, a scripted
// inference backend, a real key store and job runner.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "gateway/handlers/job_runner.h"
#include "gateway/handlers/job_waiter.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/redis_admit_and_create.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/redis_quota_store.h"
#include "runner/queue_runner.h"
#include "tests/support/key_entries.h"
#include "tests/support/pipeline_calls.h"
#include "tests/support/test_env.h"
#include "gateway/http/routes.h"
#include "tests/support/in_memory_job_store.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/observability/metered_backend.h"
#include "tests/support/in_memory_quota_store.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

class ScriptedBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext& context,
                                      const core::ProgressCallback& on_progress) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      calls++;
      last_request = request;
      last_request_id = context.request_id;
    }
    if (gate) gate->wait();
    if (!next_error.ok()) return next_error;
    pb::Progress p;
    p.set_windows_done(1);
    p.set_windows_total(1);
    if (on_progress) on_progress(p);
    pb::PredictResult result;
    result.set_model(request.model());
    result.set_windows_processed(1);
    if (task == Task::kEnhancer) {
      auto* w = result.mutable_enhancer()->add_windows();
      w->set_end(249);
      w->set_dev(0.5);
      w->set_hk(-0.25);
      (*result.mutable_formats())["bedgraph"] = "sequence\t0\t249\t0.5\n";
    }
    if (task == Task::kAnnotation) {
      auto* t = result.mutable_annotation()->add_transcripts();
      t->set_id("tx_1");
      t->set_strand("+");
      t->set_tss_position(request.annotation().coordinate_offset() + 5000);
      (*result.mutable_formats())["gff3"] = "##gff-version 3\n";
    }
    if (task == Task::kExpression) {
      std::lock_guard<std::mutex> lock(mu);
      expression_windows.push_back(request.sequence());
      result.mutable_expression()->set_expression_log_tpm(1.25);
    }
    if (on_answer) on_answer();
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  std::mutex mu;
  int calls = 0;
  pb::PredictRequest last_request;
  std::string last_request_id;
  Status next_error;
  std::shared_future<void>* gate = nullptr;
  std::vector<std::string> expression_windows;
  std::function<void()> on_answer;  // called as the worker's answer is returned
};

const char* kAliceKey = "dns_alice-test-key";
const char* kSingleKey = "dns_single-test-key";
const char* kOffKey = "dns_off-test-key";

// The gateway's pipeline in process. `with_runner`: plus a real redis-server holding jobs and
// the queue, and a runner taking jobs from it, as the workflows need. `redis_stores`: jobs and
// quotas in a real redis-server, as a gateway keeps them (no runner).
struct Harness {
  core::ManualClock clock;
  std::optional<testing::RedisServer> redis;
  std::unique_ptr<core::RedisJobQueue> queue;  // before `jobs`: MakeJobs sets it
  std::unique_ptr<core::JobStore> jobs;
  core::InMemoryQuotaStore quotas{&clock};
  std::unique_ptr<core::RedisQuotaStore> redis_quotas;  // `redis_stores` only
  std::unique_ptr<core::RedisAdmitAndCreate> admit_and_create;  // `redis_stores` only
  ScriptedBackend backend;
  core::ModelCatalogue catalogue;
  core::Executor executor{4, 16};
  std::unique_ptr<JobRunner> runner_holder;
  JobRunner& runner;
  std::unique_ptr<JobWaiter> waiter;
  std::unique_ptr<runner::QueueRunner> job_runner;
  DocsHandler docs{"/nonexistent"};
  metrics::Registry registry;
  GatewayMetrics metrics{&registry};
  MeteredBackend metered{&backend, &metrics};  // as main wires it: worker calls are counted
  std::unique_ptr<KeyStore> keys;
  std::unique_ptr<RequestPipeline> pipeline;
  int ip_refusals_left = 0;

  // `redis_wait_replicas`: the queue's writes wait for that many replicas (RedisOptions).
  explicit Harness(bool with_runner = false, bool redis_stores = false,
                   int redis_wait_replicas = 0)
      : jobs(MakeJobs(with_runner || redis_stores, redis_wait_replicas)),
        runner_holder(std::make_unique<JobRunner>(jobs.get(), &executor)),
        runner(*runner_holder) {
    keys = testing::KeyStoreOf({testing::KeyEntry(kAliceKey, "alice", true, 600, 4),
                                testing::KeyEntry(kSingleKey, "single", true, 600, 1),
                                testing::KeyEntry(kOffKey, "off", false, 600, 4)});
    pb::ModelInfo m;
    m.set_id("enhancer-test");
    m.set_task(pb::TASK_ENHANCER);
    m.set_is_default(true);
    catalogue.SetModels(Task::kEnhancer, {m});
    for (auto [task, id] : {std::pair{Task::kAnnotation, "annotation-test"},
                            std::pair{Task::kExpression, "expression-test"}}) {
      pb::ModelInfo model;
      model.set_id(id);
      model.set_is_default(true);
      catalogue.SetModels(task, {model});
    }

    GatewayServices s;
    s.keys = keys.get();
    s.quotas = &quotas;
    if (redis_stores) {
      redis_quotas = std::make_unique<core::RedisQuotaStore>(*core::RedisConnection::Create(redis->url()));
      s.quotas = redis_quotas.get();
      // As main wires it: a sync job's quota and record in one script.
      admit_and_create = std::make_unique<core::RedisAdmitAndCreate>(
          *core::RedisConnection::Create(redis->url()), redis_quotas.get(),
          dynamic_cast<core::RedisJobStore*>(jobs.get()));
      s.admit_and_create = admit_and_create.get();
    }
    s.jobs = jobs.get();
    s.backend = &metered;
    s.catalogue = &catalogue;
    s.docs = &docs;
    s.runner = &runner;
    s.metrics = &metrics;
    if (with_runner) {
      s.queue = queue.get();
      waiter = std::make_unique<JobWaiter>(jobs.get(), queue.get());
      s.waiter = waiter.get();
      runner::JobServices services;
      services.backend = &metered;
      services.catalogue = &catalogue;
      services.executor = &executor;
      runner::QueueRunnerOptions options;
      options.consumer = "test-runner";
      options.poll_interval = std::chrono::milliseconds(10);
      job_runner = std::make_unique<runner::QueueRunner>(queue.get(), jobs.get(), &quotas,
                                                         services, options);
      waiter->Start();
      job_runner->Start();
    }
    runner.set_metrics(&metrics);
    runner.Start();  // as main does: heartbeats and the writes after a sync reply
    s.admit_ip = [this](const std::string&) -> std::optional<core::QuotaDecision> {
      if (ip_refusals_left > 0) {
        --ip_refusals_left;
        Status refused(ErrorCode::kTooManyRequests, "too many requests from this address");
        refused.set_retry_after_seconds(3);
        return core::QuotaDecision{refused, core::RateLimitInfo{20, 0, 2, 2}, core::RateLimitCause::kEdgeIp};
      }
      return std::nullopt;
    };
    pipeline = std::make_unique<RequestPipeline>(s, BuildRoutes(s));
  }
  ~Harness() {
    if (job_runner) job_runner->Stop();
    if (waiter) waiter->Stop();
    runner.Stop();
    executor.Shutdown();
  }

  std::unique_ptr<core::JobStore> MakeJobs(bool in_redis, int wait_replicas) {
    if (!in_redis) return std::make_unique<core::InMemoryJobStore>(&clock);
    redis = testing::RedisServer::Start();
    REQUIRE(redis.has_value());
    core::RedisOptions options;
    options.wait_replicas = wait_replicas;
    options.wait_timeout = std::chrono::milliseconds(200);
    auto connection = core::RedisConnection::Create(redis->url(), options);
    REQUIRE(connection.ok());
    queue = std::make_unique<core::RedisJobQueue>(*connection);
    return std::make_unique<core::RedisJobStore>(*connection);
  }

  HttpResponse Call(const std::string& method, const std::string& path, const std::string& key,
                    const std::string& body = "", std::map<std::string, std::string> headers = {}) {
    HttpRequest req;
    req.method = method;
    auto q = path.find('?');
    req.path = path.substr(0, q);
    if (q != std::string::npos) {
      std::string query = path.substr(q + 1);
      auto eq = query.find('=');
      req.query[query.substr(0, eq)] = query.substr(eq + 1);
    }
    req.headers = std::move(headers);
    if (!key.empty()) req.headers["authorization"] = std::string("Bearer ") + key;
    req.body = body;
    req.request_id = "req-" + std::to_string(++counter);
    req.peer_ip = "10.0.0.1";
    return testing::CallPipeline(*pipeline, std::move(req));
  }
  int counter = 0;

  // A sync job's result is stored after its reply: polls until it is no longer running.
  HttpResponse PollFinished(const std::string& job_id, const std::string& key) {
    HttpResponse poll;
    for (int i = 0; i < 2000; ++i) {
      poll = Call("GET", "/v1/tasks/jobs/" + job_id, key);
      if (poll.status != 202) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return poll;
  }
};

rapidjson::Document Json(const HttpResponse& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  INFO(r.body);
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

std::string Code(const HttpResponse& r) { return Json(r)["error"]["code"].GetString(); }

const std::string kEnhancerBody = "{\"sequence\": \"" + std::string(300, 'A') + "\"}";

}  // namespace

TEST_CASE("routing: unknown routes and wrong methods are 404 not_found", "[gateway][pipeline]") {
  Harness h;
  CHECK(h.Call("GET", "/nope", kAliceKey).status == 404);
  CHECK(Code(h.Call("GET", "/nope", kAliceKey)) == "not_found");
  CHECK(h.Call("POST", "/health", "").status == 404);
  CHECK(h.Call("GET", "/health", "").status == 200);
}

TEST_CASE("auth runs before the handler", "[gateway][pipeline]") {
  Harness h;
  auto missing = h.Call("POST", "/v1/tasks/enhancer/predict", "", kEnhancerBody);
  CHECK(missing.status == 401);
  CHECK(*missing.FindHeader("WWW-Authenticate") == "Bearer error=\"invalid_request\"");
  auto unknown = h.Call("POST", "/v1/tasks/enhancer/predict", "dns_who", kEnhancerBody);
  CHECK(*unknown.FindHeader("WWW-Authenticate") == "Bearer error=\"invalid_token\"");
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kOffKey, kEnhancerBody).status == 403);
  CHECK(h.backend.calls == 0);
}

TEST_CASE("the per-IP edge limit answers 429 with a 32-hex request id", "[gateway][pipeline]") {
  Harness h;
  h.ip_refusals_left = 1;
  auto r = h.Call("GET", "/v1/tasks/enhancer/models", "");
  CHECK(r.status == 429);
  CHECK(*r.FindHeader("Retry-After") == "3");
  CHECK(*r.FindHeader("RateLimit-Limit") == "20");
  CHECK(*r.FindHeader("RateLimit-Remaining") == "0");
  CHECK(*r.FindHeader("RateLimit-Policy") == "20;w=2");
  std::string id = *r.FindHeader("X-Request-Id");
  CHECK(id.size() == 32);
  CHECK(std::string(Json(r)["error"]["request_id"].GetString()) == id);
  // Health is exempt.
  h.ip_refusals_left = 1;
  CHECK(h.Call("GET", "/health", "").status == 200);
}

TEST_CASE("a sync predict runs on the worker and is stored as a job", "[gateway][pipeline]") {
  Harness h;
  auto r = h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, kEnhancerBody);
  INFO(r.body);
  REQUIRE(r.status == 200);
  auto d = Json(r);
  std::string job_id = d["meta"]["job_id"].GetString();
  CHECK(*r.FindHeader("X-Job-Id") == job_id);
  CHECK(std::string(d["meta"]["model"].GetString()) == "enhancer-test");
  CHECK(h.backend.last_request.model() == "enhancer-test");
  CHECK(h.backend.last_request.sequence() == std::string(300, 'A'));
  // The negotiated format travels to the worker, which renders only what it needs.
  CHECK(h.backend.last_request.result_format() == pb::RESULT_FORMAT_JSON);
  CHECK(h.backend.last_request_id == std::string(d["meta"]["request_id"].GetString()));
  CHECK(r.FindHeader("RateLimit-Limit"));
  CHECK(*r.FindHeader("RateLimit-Policy") == "100;w=60");

  auto poll = h.PollFinished(job_id, kAliceKey);
  CHECK(poll.status == 200);
  CHECK(poll.body == r.body);

  auto text = h.Call("POST", "/v1/tasks/enhancer/predict?format=bedgraph", kAliceKey, kEnhancerBody);
  CHECK(text.status == 200);
  CHECK(text.content_type == "text/x-bedgraph");
  CHECK(text.body == "sequence\t0\t249\t0.5\n");
  CHECK(h.backend.last_request.result_format() == pb::RESULT_FORMAT_BEDGRAPH);
}

TEST_CASE("admission failures create no job and call no worker", "[gateway][pipeline]") {
  Harness h;
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, "{").status == 400);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, "{\"sequence\":\"ACGT\"}").status == 422);
  CHECK(h.Call("POST", "/v1/tasks/nope/predict", kAliceKey, kEnhancerBody).status == 404);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict?format=gff3", kAliceKey, kEnhancerBody).status == 415);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict?format=bedgraph", kAliceKey, kEnhancerBody,
               {{"prefer", "respond-async"}}).status == 400);
  // The roster of a task whose workers never answered is unknown: 503.
  CHECK(h.Call("POST", "/v1/tasks/promoter/predict", kAliceKey,
               "{\"sequence\":\"" + std::string(400, 'C') + "\"}").status == 503);
  CHECK(h.backend.calls == 0);
  auto list = Json(h.Call("GET", "/v1/tasks/jobs", kAliceKey));
  CHECK(list["count"].GetInt() == 0);
  // ...and every refused request released its concurrency lease.
  for (int i = 0; i < 3; ++i) {
    CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody).status == 200);
  }
}

TEST_CASE("async jobs: 202, progress while running, result when done", "[gateway][pipeline]") {
  Harness h;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  h.backend.gate = &gate;
  auto submit = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody,
                       {{"prefer", "respond-async"}});
  REQUIRE(submit.status == 202);
  std::string job_id = Json(submit)["data"]["job_id"].GetString();
  CHECK(*submit.FindHeader("Content-Location") == "/v1/tasks/jobs/" + job_id);

  auto running = h.Call("GET", "/v1/tasks/jobs/" + job_id, kSingleKey);
  CHECK(running.status == 202);
  auto progress = Json(running);
  CHECK(progress["data"].HasMember("progress"));
  CHECK(progress["data"]["progress"].HasMember("elapsed_seconds"));
  // The running job holds the key's only concurrency slot.
  auto refused = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody);
  CHECK(refused.status == 429);
  CHECK(*refused.FindHeader("Retry-After") == "1");
  CHECK(refused.FindHeader("RateLimit-Remaining"));
  // Another client cannot see it.
  CHECK(h.Call("GET", "/v1/tasks/jobs/" + job_id, kAliceKey).status == 404);

  release.set_value();
  HttpResponse done;
  for (int i = 0; i < 100; ++i) {
    done = h.Call("GET", "/v1/tasks/jobs/" + job_id, kSingleKey);
    if (done.status != 202) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(done.status == 200);
  CHECK(std::string(Json(done)["meta"]["job_id"].GetString()) == job_id);
  CHECK(h.backend.last_request.result_format() == pb::RESULT_FORMAT_JSON);
  h.backend.gate = nullptr;
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody).status == 200);
}

TEST_CASE("worker errors reach the client and the job as their own envelope", "[gateway][pipeline]") {
  Harness h;
  SECTION("worker down") {
    h.backend.next_error = Unavailable("the inference worker is unavailable; retry shortly");
    auto r = h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, kEnhancerBody);
    CHECK(r.status == 503);
    CHECK(Code(r) == "service_unavailable");
    std::string job_id = *r.FindHeader("X-Job-Id");
    auto poll = h.PollFinished(job_id, kAliceKey);
    CHECK(poll.status == 503);
    CHECK(poll.body == r.body);
  }
  SECTION("record cap details are completed with task and length") {
    RecordCapDetails cap;
    cap.record_count = 20001;
    cap.maximum_records = 20000;
    cap.threshold = 0.0;
    h.backend.next_error = Status(ErrorCode::kValidationFailed, "too many sites", cap);
    auto r = h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, kEnhancerBody);
    CHECK(r.status == 422);
    auto d = Json(r);
    CHECK(std::string(d["error"]["details"]["task"].GetString()) == "enhancer");
    CHECK(d["error"]["details"]["sequence_length"].GetInt() == 300);
  }
}

// ------------------------------------------------------------------ find-genes workflow

namespace {

const std::string kFindGenesPath = "/v1/workflows/find-genes-and-predict-expression";

std::string FindGenesBody(size_t length, const std::string& options = R"({"description":"liver"})") {
  std::string sequence;
  for (size_t i = 0; i < length; ++i) sequence += "ACGT"[(i * 7 + i / 3) % 4];
  return "{\"sequence\": \"" + sequence + "\", \"options\": " + options + "}";
}

}  // namespace

TEST_CASE("find-genes: a sync call runs both stages and is stored as a job", "[gateway][pipeline]") {
  Harness h(/*with_runner=*/true);
  auto r = h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(12000));
  INFO(r.body.substr(0, 2000));
  REQUIRE(r.status == 200);
  auto d = Json(r);
  CHECK(std::string(d["data"]["task"].GetString()) == "find_genes_and_predict_expression");
  CHECK(std::string(d["meta"]["model"].GetString()) == "annotation-test+expression-test");
  CHECK(d["data"]["expression_predictions"][0]["expression"].GetDouble() == 1.25);
  CHECK(d["meta"]["task_specific_counts"]["genes_predicted"].GetInt() == 1);
  CHECK(h.backend.calls == 2);
  REQUIRE(h.backend.expression_windows.size() == 1);
  CHECK(h.backend.expression_windows[0].size() == 9198);
  CHECK(r.FindHeader("RateLimit-Limit"));
  std::string job_id = d["meta"]["job_id"].GetString();
  CHECK(*r.FindHeader("X-Job-Id") == job_id);
  auto poll = h.Call("GET", "/v1/tasks/jobs/" + job_id, kAliceKey);
  CHECK(poll.status == 200);
  CHECK(poll.body == r.body);
  auto list = Json(h.Call("GET", "/v1/tasks/jobs", kAliceKey));
  CHECK(std::string(list["jobs"][0]["task"].GetString()) == "find_genes_and_predict_expression");
  // JSON-compatible negotiation passes.
  CHECK(h.Call("POST", kFindGenesPath + "?format=json", kAliceKey, FindGenesBody(1000)).status ==
        200);
  CHECK(h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(1000),
               {{"accept", "application/json, */*;q=0.1"}}).status == 200);
}

TEST_CASE("find-genes: admission failures create no job and call no worker",
          "[gateway][pipeline]") {
  Harness h(/*with_runner=*/true);
  auto code = [&](const HttpResponse& r) { return Code(r); };
  CHECK(h.Call("POST", kFindGenesPath, "", FindGenesBody(1000)).status == 401);

  auto gff3 = h.Call("POST", kFindGenesPath + "?format=gff3", kAliceKey, FindGenesBody(1000));
  CHECK(gff3.status == 415);
  CHECK(code(gff3) == "unsupported_format");
  CHECK(std::string(Json(gff3)["error"]["message"].GetString()).find("json") != std::string::npos);
  CHECK(h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(1000),
               {{"accept", "text/x-gff3"}}).status == 415);

  auto missing = h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(1000, "{}"));
  CHECK(missing.status == 422);
  CHECK(code(missing) == "validation_failed");
  CHECK(h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(1000, R"({"description":""})"))
            .status == 422);

  auto unknown_model = h.Call("POST", kFindGenesPath, kAliceKey,
                              FindGenesBody(1000, R"({"description":"x","annotation_model":"nope"})"));
  CHECK(unknown_model.status == 404);
  auto details = Json(unknown_model);
  CHECK(code(unknown_model) == "model_not_found");
  CHECK(std::string(details["error"]["details"]["available_models"][0].GetString()) ==
        "annotation-test");
  CHECK(std::string(details["error"]["message"].GetString()).find("options.annotation_model") !=
        std::string::npos);
  auto unknown_expression = h.Call(
      "POST", kFindGenesPath, kAliceKey,
      FindGenesBody(1000, R"({"description":"x","expression_model":"nope"})"));
  CHECK(unknown_expression.status == 404);
  CHECK(std::string(Json(unknown_expression)["error"]["details"]["available_models"][0].GetString()) ==
        "expression-test");

  auto crossed = h.Call(
      "POST", kFindGenesPath, kAliceKey,
      FindGenesBody(1000, R"({"description":"x","annotation_model":"expression-test"})"));
  CHECK(crossed.status == 422);
  auto crossed_doc = Json(crossed);
  CHECK(code(crossed) == "task_not_supported_by_model");
  CHECK(std::string(crossed_doc["error"]["details"]["task"].GetString()) == "annotation");
  CHECK(std::string(crossed_doc["error"]["details"]["supported_tasks"][0].GetString()) ==
        "expression");

  auto big = h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(50001));
  CHECK(big.status == 413);
  auto big_doc = Json(big);
  CHECK(code(big) == "sync_too_large");
  CHECK(big_doc["error"]["details"]["sequence_length"].GetInt() == 50001);
  CHECK(big_doc["error"]["details"]["threshold"].GetInt() == 50000);

  CHECK(h.backend.calls == 0);
  CHECK(Json(h.Call("GET", "/v1/tasks/jobs", kAliceKey))["count"].GetInt() == 0);
  // Exactly at the cap a sync call is still admitted.
  CHECK(h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(50000)).status == 200);
}

TEST_CASE("find-genes: above the sync cap the identical body runs as a job", "[gateway][pipeline]") {
  Harness h(/*with_runner=*/true);
  const std::string body = FindGenesBody(60000);
  auto submit = h.Call("POST", kFindGenesPath, kSingleKey, body, {{"prefer", "respond-async"}});
  REQUIRE(submit.status == 202);
  auto d = Json(submit);
  std::string job_id = d["data"]["job_id"].GetString();
  CHECK(std::string(d["meta"]["task"].GetString()) == "find_genes_and_predict_expression");
  CHECK(std::string(d["meta"]["mode"].GetString()) == "async");
  CHECK(*submit.FindHeader("Content-Location") == "/v1/tasks/jobs/" + job_id);
  HttpResponse done;
  for (int i = 0; i < 500; ++i) {
    done = h.Call("GET", "/v1/tasks/jobs/" + job_id, kSingleKey);
    if (done.status != 202) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(done.status == 200);
  auto result = Json(done);
  CHECK(std::string(result["meta"]["job_id"].GetString()) == job_id);
  CHECK(result["meta"]["sequence_length"].GetInt() == 60000);
  // The job released the key's only concurrency slot.
  CHECK(h.Call("POST", kFindGenesPath, kSingleKey, FindGenesBody(1000)).status == 200);
}

TEST_CASE("a job no Redis replica confirms in time is refused 503 with Retry-After, not "
          "half-accepted",
          "[gateway][pipeline]") {
  // The Redis has no replica and the queue waits for one (DNASERVE_REDIS_WAIT_REPLICAS=1).
  Harness h(/*with_runner=*/true, /*redis_stores=*/false, /*redis_wait_replicas=*/1);
  // A runner that took the entry during the wait cannot finish it before the refusal.
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  h.backend.gate = &gate;
  auto submit = h.Call("POST", kFindGenesPath, kSingleKey, FindGenesBody(60000),
                       {{"prefer", "respond-async"}});
  release.set_value();
  REQUIRE(submit.status == 503);
  CHECK(Code(submit) == "service_unavailable");
  REQUIRE(submit.FindHeader("Retry-After"));
  CHECK(*submit.FindHeader("Retry-After") == "1");
  REQUIRE(submit.FindHeader("X-Job-Id"));
  const std::string job_id = *submit.FindHeader("X-Job-Id");
  // Nothing waits in the queue, and the job's record says what the client was told.
  CHECK(h.queue->ActiveClients()->empty());
  auto record = h.PollFinished(job_id, kSingleKey);
  CHECK(record.status == 503);
  CHECK(Code(record) == "service_unavailable");
  h.backend.gate = nullptr;
  // The key's only concurrency seat was given back: a prediction this gateway runs itself (no
  // queue) is admitted.
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody).status == 200);
}

TEST_CASE("find-genes: a worker error reaches the client and the job as its own envelope",
          "[gateway][pipeline]") {
  Harness h(/*with_runner=*/true);
  h.backend.next_error = Unavailable("the inference worker is unavailable; retry shortly");
  auto r = h.Call("POST", kFindGenesPath, kAliceKey, FindGenesBody(12000));
  CHECK(r.status == 503);
  CHECK(Code(r) == "service_unavailable");
  CHECK(std::string(Json(r)["error"]["message"].GetString()).find("annotation stage") !=
        std::string::npos);
  auto poll = h.Call("GET", "/v1/tasks/jobs/" + *r.FindHeader("X-Job-Id"), kAliceKey);
  CHECK(poll.status == 503);
  CHECK(poll.body == r.body);
}

TEST_CASE("metrics count requests by route pattern and status, 429s by cause, and jobs",
          "[gateway][pipeline][metrics]") {
  Harness h;
  auto sample = [&h](const std::string& series) {
    std::string text = h.registry.Render();
    size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1.0;
    return std::stod(text.substr(at + series.size() + 2));
  };
  const std::string predict = "route=\"/v1/tasks/{task}/predict\",method=\"POST\"";

  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, kEnhancerBody).status == 200);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, "{").status == 400);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", "", kEnhancerBody).status == 401);
  CHECK(h.Call("GET", "/v1/tasks/jobs/0b9e5f0c-1234-4abc-8def-000000000000", kAliceKey).status ==
        404);
  CHECK(h.Call("GET", "/no/such/route", "").status == 404);
  CHECK(sample("dnaserve_http_requests_total{" + predict + ",status=\"200\"}") == 1);
  CHECK(sample("dnaserve_http_requests_total{" + predict + ",status=\"400\"}") == 1);
  CHECK(sample("dnaserve_http_requests_total{" + predict + ",status=\"401\"}") == 1);
  // Paths with ids and unknown paths never become labels.
  CHECK(sample("dnaserve_http_requests_total{route=\"/v1/tasks/jobs/{job_id}\",method=\"GET\","
               "status=\"404\"}") == 1);
  CHECK(sample("dnaserve_http_requests_total{route=\"unmatched\",method=\"GET\","
               "status=\"404\"}") == 1);
  CHECK(h.registry.Render().find("0b9e5f0c") == std::string::npos);
  CHECK(h.registry.Render().find("/no/such/route") == std::string::npos);
  CHECK(sample("dnaserve_http_request_duration_seconds_count{" + predict + "}") == 3);
  CHECK(sample("dnaserve_jobs_finished_total{task=\"enhancer\",mode=\"sync\","
               "state=\"completed\"}") == 1);
  CHECK(sample("dnaserve_worker_calls_total{task=\"enhancer\",code=\"ok\"}") == 1);

  // The three causes of 429, each counted once.
  CHECK(sample("dnaserve_rate_limited_total{cause=\"edge_ip\"}") == 0);
  h.ip_refusals_left = 1;
  CHECK(h.Call("GET", "/v1/tasks/enhancer/models", "").status == 429);
  CHECK(sample("dnaserve_rate_limited_total{cause=\"edge_ip\"}") == 1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  h.backend.gate = &gate;
  auto held = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody,
                     {{"prefer", "respond-async"}});
  CHECK(held.status == 202);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody).status == 429);
  CHECK(sample("dnaserve_rate_limited_total{cause=\"key_concurrency\"}") == 1);
  release.set_value();
  h.backend.gate = nullptr;
  for (int i = 0; i < 200 && sample("dnaserve_jobs_finished_total{task=\"enhancer\","
                                    "mode=\"async\",state=\"completed\"}") != 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(sample("dnaserve_jobs_finished_total{task=\"enhancer\",mode=\"async\","
               "state=\"completed\"}") == 1);
  // Alice's bucket holds 600/6 = 100 tokens; the clock stands still, so the 101st is refused.
  int refused_at = 0;
  for (int i = 0; i < 120 && refused_at == 0; ++i) {
    if (h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, "{").status == 429) {
      refused_at = i;
    }
  }
  CHECK(refused_at > 0);
  CHECK(sample("dnaserve_rate_limited_total{cause=\"key_rate\"}") == 1);
  // No per-key data: client ids and keys never appear.
  std::string text = h.registry.Render();
  for (const char* secret : {"alice", "single", kAliceKey, kSingleKey}) {
    CHECK(text.find(secret) == std::string::npos);
  }
}

namespace {

std::string InPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// `redis-cli MONITOR` on the harness's Redis: the commands clients send, in the order Redis
// runs them (the commands scripts run inside are left out). Markers are ECHO commands sent on a
// connection of the test's own, so a test can tell what came between two moments.
class RedisMonitor {
 public:
  explicit RedisMonitor(const testing::RedisServer& redis) {
    const std::string cli = InPath("redis-cli");
    REQUIRE_FALSE(cli.empty());
    log_ = testing::MakeTempDir("redis-monitor") + "/monitor.log";
    REQUIRE(process_.Start({cli, "-p", std::to_string(redis.port()), "MONITOR"}, {}, log_));
    auto connection = core::RedisConnection::Create(redis.url());
    REQUIRE(connection.ok());
    marker_ = *connection;
    for (int i = 0; i < 500 && !Has("\"monitor-ready\""); ++i) {
      Mark("monitor-ready");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(Has("\"monitor-ready\""));
  }

  void Mark(const std::string& name) { REQUIRE(marker_->Command({"ECHO", name}).ok()); }
  // A read of the test's own; HGETs are left out of Between.
  core::RedisReply Query(const std::vector<std::string>& hget) {
    auto reply = marker_->Command(hget);
    REQUIRE(reply.ok());
    return *reply;
  }

  // The client commands between the markers `from` and `to` (markers excluded); waits until
  // `to` has been logged.
  std::vector<std::string> Between(const std::string& from, const std::string& to) {
    const std::string to_line = "\"ECHO\" \"" + to + "\"";
    for (int i = 0; i < 500 && !Has(to_line); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<std::string> out;
    bool inside = false;
    for (const std::string& line : Lines()) {
      if (line.find("\"ECHO\" \"" + from + "\"") != std::string::npos) {
        inside = true;
      } else if (line.find(to_line) != std::string::npos) {
        return out;
      } else if (inside && line.find("\"ECHO\"") == std::string::npos &&
                 line.find("\"HGET\"") == std::string::npos &&
                 line.find(" lua]") == std::string::npos) {
        out.push_back(line);
      }
    }
    FAIL("marker " << to << " not in the MONITOR log");
    return out;
  }

 private:
  std::vector<std::string> Lines() {
    std::ifstream in(log_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  bool Has(const std::string& text) {
    for (const std::string& line : Lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::string log_;
  testing::ChildProcess process_;
  std::shared_ptr<core::RedisConnection> marker_;
};

bool AllRelease(const std::vector<std::string>& commands) {
  for (const std::string& c : commands) {
    if (c.find("\"release\"") == std::string::npos) return false;
  }
  return true;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.substr(0, 200) + "\n";
  return out;
}

}  // namespace

TEST_CASE("a sync predict: no Redis call between the worker's answer and the reply",
          "[gateway][pipeline][redis]") {
  Harness h(/*with_runner=*/false, /*redis_stores=*/true);
  RedisMonitor monitor(*h.redis);
  // Warm: connections open, scripts loaded (a first EVALSHA falls back to EVAL).
  auto warm = h.Call("POST", "/v1/tasks/enhancer/predict", kAliceKey, kEnhancerBody);
  REQUIRE(warm.status == 200);
  REQUIRE(h.PollFinished(*warm.FindHeader("X-Job-Id"), kAliceKey).status == 200);

  h.backend.on_answer = [&] { monitor.Mark("answered"); };
  monitor.Mark("start");
  HttpRequest req;
  req.method = "POST";
  req.path = "/v1/tasks/enhancer/predict";
  req.headers["authorization"] = std::string("Bearer ") + kAliceKey;
  req.body = kEnhancerBody;
  req.request_id = "req-monitored";
  req.peer_ip = "10.0.0.1";
  auto replied = std::make_shared<std::promise<HttpResponse>>();
  auto reply = replied->get_future();
  h.pipeline->Handle(std::move(req), [&monitor, replied](HttpResponse response) {
    monitor.Mark("replied");  // on the thread that hands the response to the client
    replied->set_value(std::move(response));
  });
  REQUIRE(reply.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  HttpResponse response = reply.get();
  REQUIRE(response.status == 200);
  // The stored copy comes after the reply: wait for it (the test's HGETs are not counted).
  const std::string job_key = "dnaserve:job:" + *response.FindHeader("X-Job-Id");
  std::string state;
  for (int i = 0; i < 1000 && state != "completed"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    state = monitor.Query({"HGET", job_key, "state"}).str;
  }
  REQUIRE(state == "completed");
  monitor.Mark("end");
  h.backend.on_answer = nullptr;

  const auto before_worker = monitor.Between("start", "answered");
  const auto answered_to_reply = monitor.Between("answered", "replied");
  const auto after_reply = monitor.Between("replied", "end");
  INFO("before the worker call:\n" << Joined(before_worker) << "between answer and reply:\n"
                                   << Joined(answered_to_reply) << "after the reply:\n"
                                   << Joined(after_reply));
  // Admission (quota) and the job record, in one script: the record must exist before the
  // worker call, so that a poll finds the job running; no progress write for a call this short.
  CHECK(before_worker.size() == 1);
  for (const std::string& line : before_worker) {
    CHECK(line.find(":leases\"") != std::string::npos);  // the quota's keys...
    CHECK(line.find("\"dnaserve:job:") != std::string::npos);  // ...and the job's, together
  }
  // Nothing is waited for between the answer and the reply. The writer thread may already be
  // releasing the lease meanwhile (it is handed over just before the reply); nothing else.
  CHECK(AllRelease(answered_to_reply));
  CHECK(answered_to_reply.size() <= 1);
  // After it: the lease release (unless it came before) and the stored result.
  CHECK(answered_to_reply.size() + after_reply.size() == 2);
  CHECK(before_worker.size() + answered_to_reply.size() + after_reply.size() == 3);

  auto poll = h.PollFinished(*response.FindHeader("X-Job-Id"), kAliceKey);
  CHECK(poll.status == 200);
  CHECK(poll.body == response.body);
}

TEST_CASE("the quota taken with the job record: a refusal is 429 and creates no record",
          "[gateway][pipeline][redis]") {
  // Redis stores as a gateway has them: the quota and the record come from one script.
  Harness h(/*with_runner=*/false, /*redis_stores=*/true);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  h.backend.gate = &gate;
  // Single's one seat is held by a job run here (no queue in this harness).
  auto held = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody,
                     {{"prefer", "respond-async"}});
  REQUIRE(held.status == 202);
  auto refused = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody);
  CHECK(refused.status == 429);
  CHECK(refused.FindHeader("Retry-After"));
  REQUIRE(refused.FindHeader("RateLimit-Limit"));
  CHECK(*refused.FindHeader("RateLimit-Limit") == "100");
  // Refused whatever the body: the quota still answers before the body's error.
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, "{").status == 429);
  release.set_value();
  h.backend.gate = nullptr;
  auto list = Json(h.Call("GET", "/v1/tasks/jobs", kSingleKey));
  CHECK(list["count"].GetInt() == 1);  // only the held one
  // A body refused by the admission after the quota admitted it: 400, no record, seat free.
  REQUIRE(h.PollFinished(*held.FindHeader("X-Job-Id"), kSingleKey).status == 200);
  CHECK(h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, "{").status == 400);
  CHECK(Json(h.Call("GET", "/v1/tasks/jobs", kSingleKey))["count"].GetInt() == 1);
  auto admitted = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody);
  CHECK(admitted.status == 200);
  CHECK(admitted.FindHeader("RateLimit-Remaining"));
  CHECK(Json(h.Call("GET", "/v1/tasks/jobs", kSingleKey))["count"].GetInt() == 2);
}

TEST_CASE("a sync call with one concurrency seat can be sent again the moment it is answered",
          "[gateway][pipeline][redis]") {
  // The lease of an answered call is released after its reply; the client's next call must
  // not be refused by it (Redis quotas, as a gateway has them).
  Harness h(/*with_runner=*/false, /*redis_stores=*/true);
  for (int i = 0; i < 50; ++i) {
    auto r = h.Call("POST", "/v1/tasks/enhancer/predict", kSingleKey, kEnhancerBody);
    INFO("call " << i << ": " << r.body);
    REQUIRE(r.status == 200);
  }
}
