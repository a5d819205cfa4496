// Scale-out on loopback, every piece its own process: two gateways, two runners and two promoter
// workers sharing one real redis-server. Requests spread over both workers; a job submitted
// through one gateway is polled through the other; a gateway killed right after accepting jobs
// loses none of them; a runner killed mid-job leaves it to the other runner; a key's quota holds across both gateways; a worker killed
// with calls in flight fails those calls cleanly (503 envelope within 5 s), drops out of
// rotation, and comes back after a restart. The gateway's worker client on its own: a call to a
// hung worker ends at its deadline (the caller's, or the per-call cap) without a retry; a call
// that never reached a worker is sent to another replica.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gateway/auth/key_store.h"
#include "core/dispatch/worker_client.h"
#include "core/validation/predict_request.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"

using namespace dnaserve::testing;

namespace {

constexpr int kReplicas = 2;
// 60 requests/min: a bucket of 10 (rate / 6) refilled at one token per second.
constexpr int kQuotaRatePerMinute = 60;
constexpr int kQuotaCapacity = kQuotaRatePerMinute / 6;

class Topology {
 public:
  static Topology* Get(std::string* failure) {
    static std::string reason;
    static Topology* instance = [] {
      auto* t = new Topology();
      if (!t->Start(&reason)) {
        delete t;
        return static_cast<Topology*>(nullptr);
      }
      std::atexit([] { delete instance; });
      return t;
    }();
    if (!instance) *failure = reason;
    return instance;
  }
  ~Topology() {
    for (auto& g : gateways_) g.process().Stop();
    for (auto& r : runners_) r.Stop();
    for (auto& w : workers_) w.process().Stop();
    if (redis_) redis_->Stop();
  }

  std::string gateway(int i) const { return gateways_[i].base_url(); }
  std::string gateway_admin(int i) const { return gateways_[i].admin_url(); }
  std::string worker_admin(int i) const { return workers_[i].admin_url(); }
  std::string worker_address(int i) const { return workers_[i].address(); }
  std::string worker_log(int i) const { return ReadFile(dir_ + "/worker-" + std::to_string(i) + ".log"); }
  const std::string& generous_key() const { return generous_key_; }
  const std::string& quota_key() const { return quota_key_; }
  const std::string& promoter_model() const { return promoter_model_; }

  // Both workers behind one gRPC target, as a headless Service's name resolves to every pod.
  std::string both_workers_target() const {
    return "ipv4:" + workers_[0].address() + "," + workers_[1].address();
  }
  void KillWorker(int i) { workers_[i].process().Kill(); }
  void KillGateway(int i) { gateways_[i].process().Kill(); }
  bool RestartGateway(int i) {
    if (!gateways_[i].Restart()) return false;
    return WaitFor(
        [&] { return HttpRequest("GET", gateway_admin(i) + "/ready", {}, "", 2).status == 200; },
        std::chrono::seconds(60));
  }
  void KillRunner(int i) { runners_[i].Kill(); }
  std::string runner_log(int i) const {
    return ReadFile(dir_ + "/runner-" + std::to_string(i) + ".log");
  }
  bool RestartRunner(int i) {
    return StartRunner(&runners_[i], redis_->url(), workers_spec_,
                       dir_ + "/runner-" + std::to_string(i) + ".log");
  }
  // SIGSTOP / SIGCONT: a hung worker, alive but silent.
  void PauseWorker(int i, bool paused) { ::kill(workers_[i].process().pid(), paused ? SIGSTOP : SIGCONT); }
  bool RestartWorker(int i) { return workers_[i].Restart(); }
  // Predict calls the worker has finished with `code` ("ok", ...), from its own /metrics.
  double WorkerCalls(int i, const std::string& code = "ok") const {
    return MetricSample(worker_admin(i), "dnaserve_worker_predict_requests_total{model=\"" +
                                       promoter_model_ + "\",code=\"" + code + "\"}");
  }

  // Checked against the document the gateway serves (GatewayRequest): the tests call these on
  // threads of their own too, so REQUIRE_TOPOLOGY fails a case at its end for what those found.
  HttpResult Post(int gateway_index, const std::string& path, const std::string& body,
                  const std::string& key, std::vector<std::string> headers = {}) const {
    headers.push_back("Authorization: Bearer " + key);
    headers.push_back("Content-Type: application/json");
    return GatewayRequest("POST", gateway(gateway_index), path, headers, body, 300);
  }
  HttpResult Get(int gateway_index, const std::string& path, const std::string& key) const {
    return GatewayRequest("GET", gateway(gateway_index), path, {"Authorization: Bearer " + key});
  }

 private:
  bool Start(std::string* failure) {
    dir_ = MakeTempDir("dnaserve-topology");
    redis_ = RedisServer::Start();
    if (!redis_) {
      *failure = "redis-server is not installed or did not start";
      return false;
    }
    auto models = PrepareModels(dir_, failure);
    if (!models) return false;

    std::string replicas;
    for (int i = 0; i < kReplicas; ++i) {
      WorkerLaunch launch;
      launch.task = "promoter";
      launch.models_dir = *models;
      launch.admin = true;
      launch.log_path = dir_ + "/worker-" + std::to_string(i) + ".log";
      if (!workers_[i].Start(std::move(launch))) {
        *failure = "cannot start dnaserve-worker";
        return false;
      }
      replicas += (i ? ";" : "") + workers_[i].address();
    }

    generous_key_ = dnaserve::gateway::GenerateApiKey();
    quota_key_ = dnaserve::gateway::GenerateApiKey();
    std::ofstream(dir_ + "/keys.json")
        << "{\"keys\": [" << KeyEntry(generous_key_, "generous", true, 60000, 64) << ","
        << KeyEntry(quota_key_, "metered", true, kQuotaRatePerMinute, 64) << "]}";

    workers_spec_ = "promoter=" + replicas;
    for (int i = 0; i < kReplicas; ++i) {
      if (!RestartRunner(i)) {
        *failure = "cannot start dnaserve-runner";
        return false;
      }
      GatewayLaunch launch;
      launch.redis_url = redis_->url();
      launch.workers = workers_spec_;
      launch.keys_file = dir_ + "/keys.json";
      launch.admin = true;
      launch.log_path = dir_ + "/gateway-" + std::to_string(i) + ".log";
      gateways_[i].Start(std::move(launch));
    }
    for (int i = 0; i < kReplicas; ++i) {
      if (!WaitFor([&] { return HttpRequest("GET", gateway_admin(i) + "/ready", {}, "", 2).status == 200; },
                   std::chrono::seconds(60))) {
        *failure = "gateway " + std::to_string(i) + " never became ready; see " + dir_;
        return false;
      }
      // Both workers in rotation as this gateway sees them.
      if (!WaitFor([&] {
            return MetricSample(gateway_admin(i),
                          "dnaserve_worker_replicas{task=\"promoter\",state=\"in_rotation\"}") == 2;
          },
          std::chrono::seconds(30))) {
        *failure = "gateway " + std::to_string(i) + " never saw both workers healthy; see " + dir_;
        return false;
      }
    }
    auto models_list = HttpRequest("GET", gateway(0) + "/v1/tasks/promoter/models");
    auto doc = ParseJson(models_list.body);
    promoter_model_ = (*doc)["default_model"].GetString();
    // From here on every response is checked against the document each gateway serves.
    for (int i = 0; i < kReplicas; ++i) {
      if (!LoadGatewayDocument(gateway(i), failure)) return false;
    }
    return true;
  }

  std::string dir_;
  std::optional<RedisServer> redis_;
  LaunchedWorker workers_[kReplicas];
  LaunchedGateway gateways_[kReplicas];
  ChildProcess runners_[kReplicas];
  std::string workers_spec_;
  std::string generous_key_;
  std::string quota_key_;
  std::string promoter_model_;
};

#define REQUIRE_TOPOLOGY(var)                     \
  std::string var##_failure;                      \
  Topology* var = Topology::Get(&var##_failure);  \
  UndocumentedElsewhereGuard var##_documented;    \
  INFO(var##_failure);                            \
  REQUIRE(var != nullptr)

std::string ErrorCode(const HttpResult& r) {
  auto doc = ParseJson(r.body);
  REQUIRE((*doc).HasMember("error"));
  return (*doc)["error"]["code"].GetString();
}

// Waits until both gateways of the topology see both workers in rotation again.
bool BothWorkersInRotation(Topology* t) {
  for (int g = 0; g < kReplicas; ++g) {
    if (!WaitFor(
            [&] {
              return MetricSample(t->gateway_admin(g),
                            "dnaserve_worker_replicas{task=\"promoter\",state=\"in_rotation\"}") == 2;
            },
            std::chrono::seconds(30))) {
      return false;
    }
  }
  return true;
}

// Kills worker 0, then makes ten calls with `call(id)` (ids from `first_id`): each must succeed,
// served by worker 1.
template <typename Call>
void KillWorkerZeroThenCallTen(Topology* t, const Call& call, int first_id) {
  t->KillWorker(0);
  const double survivor_before = t->WorkerCalls(1);
  for (int i = 0; i < 10; ++i) {
    auto r = call(first_id + i);
    INFO(r.status().message());
    CHECK(r.ok());
  }
  CHECK(t->WorkerCalls(1) - survivor_before == 10);
}

}  // namespace

TEST_CASE("requests through both gateways are spread over both workers", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  const double before[2] = {t->WorkerCalls(0), t->WorkerCalls(1)};
  constexpr int kRequests = 20;
  std::string request_id_via_second_gateway;
  for (int i = 0; i < kRequests; ++i) {
    auto r = t->Post(i % 2, "/v1/tasks/promoter/predict", MinimalBody("promoter"), t->generous_key());
    INFO(r.body);
    REQUIRE(r.status == 200);
    if (i % 2 == 1) request_id_via_second_gateway = *r.Header("x-request-id");
  }
  const double served[2] = {t->WorkerCalls(0) - before[0], t->WorkerCalls(1) - before[1]};
  INFO("worker 0 served " << served[0] << ", worker 1 served " << served[1]);
  CHECK(served[0] + served[1] == kRequests);
  // Each gateway alternates between the two replicas: an even split.
  CHECK(served[0] == kRequests / 2);
  CHECK(served[1] == kRequests / 2);
  // The request id reached whichever worker ran the call, through gRPC metadata.
  const std::string id = "\"request_id\":\"" + request_id_via_second_gateway + "\"";
  CHECK((t->worker_log(0).find(id) != std::string::npos) !=
        (t->worker_log(1).find(id) != std::string::npos));
}

TEST_CASE("a job submitted through one gateway is polled through the other", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  auto submitted = t->Post(0, "/v1/tasks/promoter/predict", MinimalBody("promoter", 20000),
                           t->generous_key(), {"Prefer: respond-async"});
  REQUIRE(submitted.status == 202);
  const std::string job_id = (*ParseJson(submitted.body))["data"]["job_id"].GetString();
  HttpResult poll;
  REQUIRE(WaitFor(
      [&] {
        poll = t->Get(1, "/v1/tasks/jobs/" + job_id, t->generous_key());
        return poll.status != 202;
      },
      std::chrono::seconds(120)));
  INFO(poll.body);
  CHECK(poll.status == 200);
  auto result = ParseJson(poll.body);
  CHECK(std::string((*result)["meta"]["model"].GetString()) == t->promoter_model());
  // Both gateways return the same stored result, and list the job for its owner only.
  CHECK(t->Get(0, "/v1/tasks/jobs/" + job_id, t->generous_key()).body == poll.body);
  CHECK(t->Get(1, "/v1/tasks/jobs", t->generous_key()).body.find(job_id) != std::string::npos);
  CHECK(t->Get(1, "/v1/tasks/jobs/" + job_id, t->quota_key()).status == 404);
}

TEST_CASE("a gateway killed right after accepting 20 async jobs loses none of them",
          "[topology]") {
  REQUIRE_TOPOLOGY(t);
  constexpr int kJobs = 20;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    auto r = t->Post(0, "/v1/tasks/promoter/predict", MinimalBody("promoter", 5000 + i),
                     t->generous_key(), {"Prefer: respond-async"});
    INFO(r.body);
    REQUIRE(r.status == 202);
    ids.push_back((*ParseJson(r.body))["data"]["job_id"].GetString());
  }
  t->KillGateway(0);  // SIGKILL: no drain, nothing handed over
  for (size_t i = 0; i < ids.size(); ++i) {
    HttpResult poll;
    REQUIRE(WaitFor(
        [&] {
          poll = t->Get(1, "/v1/tasks/jobs/" + ids[i], t->generous_key());
          return poll.status != 202;
        },
        std::chrono::seconds(120)));
    INFO("job " << i << ": " << poll.body);
    CHECK(poll.status == 200);
    auto result = ParseJson(poll.body);
    CHECK((*result)["meta"]["sequence_length"].GetInt() == static_cast<int>(5000 + i));
  }
  REQUIRE(t->RestartGateway(0));
}

TEST_CASE("a runner killed mid-job leaves it to the other runner", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  // Long jobs, so that each runner is surely running one when runner 0 is killed.
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto r = t->Post(1, "/v1/tasks/promoter/predict", MinimalBody("promoter", 400000 + i),
                     t->generous_key(), {"Prefer: respond-async"});
    REQUIRE(r.status == 202);
    ids.push_back((*ParseJson(r.body))["data"]["job_id"].GetString());
  }
  // Runner 0 takes a job, and is killed while it runs.
  REQUIRE(WaitFor([&] { return t->runner_log(0).find("runner_job_started") != std::string::npos; },
                  std::chrono::seconds(60)));
  t->KillRunner(0);
  for (const auto& id : ids) {
    HttpResult poll;
    REQUIRE(WaitFor(
        [&] {
          poll = t->Get(1, "/v1/tasks/jobs/" + id, t->generous_key());
          return poll.status != 202;
        },
        std::chrono::seconds(240)));
    INFO(poll.body.substr(0, 500));
    CHECK(poll.status == 200);
  }
  // Runner 1 took over what runner 0 held.
  CHECK(t->runner_log(1).find("runner_job_reclaimed") != std::string::npos);
  REQUIRE(t->RestartRunner(0));
}

TEST_CASE("a key's quota holds across both gateways", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  // Let any earlier use of the key refill completely.
  std::this_thread::sleep_for(std::chrono::seconds(kQuotaCapacity + 1));
  constexpr int kRequests = 40;
  constexpr int kThreads = 8;
  std::atomic<int> next{0};
  std::atomic<int> admitted[2] = {0, 0};
  std::atomic<int> refused{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&] {
      for (int i = next++; i < kRequests; i = next++) {
        const int g = i % 2;
        auto r = t->Post(g, "/v1/tasks/promoter/predict", MinimalBody("promoter", 300),
                         t->quota_key());
        if (r.status == 200) {
          ++admitted[g];
        } else if (r.status == 429 && r.Header("retry-after") &&
                   r.body.find("\"code\":\"too_many_requests\"") != std::string::npos) {
          ++refused;
        } else {
          std::lock_guard<std::mutex> lock(failures_mu);
          failures.push_back(std::to_string(r.status) + " " + r.body);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(failures.empty());
  const int total = admitted[0] + admitted[1];
  INFO("admitted " << admitted[0] << " + " << admitted[1] << " in " << elapsed << " s, refused "
                   << refused);
  // The shared bucket: its 10 tokens plus one per second of the run, whichever gateway asks.
  CHECK(total >= kQuotaCapacity);
  CHECK(total <= kQuotaCapacity + static_cast<int>(elapsed) + 1);
  CHECK(admitted[0] > 0);
  CHECK(admitted[1] > 0);
  CHECK(total + refused == kRequests);
}

TEST_CASE("a killed worker fails its in-flight calls cleanly, new calls go to the other",
          "[topology]") {
  REQUIRE_TOPOLOGY(t);
  // Four long sync calls through gateway 0: round-robin puts two on each worker.
  constexpr int kInFlight = 4;
  struct Outcome {
    HttpResult response;
    std::chrono::steady_clock::time_point finished;
  };
  std::vector<std::future<Outcome>> calls;
  for (int i = 0; i < kInFlight; ++i) {
    calls.push_back(std::async(std::launch::async, [t] {
      Outcome o;
      o.response = t->Post(0, "/v1/tasks/promoter/predict", MinimalBody("promoter", 500000),
                           t->generous_key());
      o.finished = std::chrono::steady_clock::now();
      return o;
    }));
  }
  REQUIRE(WaitFor(
      [&] {
        return MetricSample(t->worker_admin(0), "dnaserve_worker_predict_in_flight") >= 1 &&
               MetricSample(t->worker_admin(1), "dnaserve_worker_predict_in_flight") >= 1;
      },
      std::chrono::seconds(30)));
  const double survivor_before = t->WorkerCalls(1);
  t->KillWorker(0);
  const auto killed_at = std::chrono::steady_clock::now();

  int ok = 0;
  int unavailable = 0;
  for (auto& call : calls) {
    Outcome o = call.get();
    INFO(o.response.status << " " << o.response.body.substr(0, 300));
    if (o.response.status == 200) {
      ++ok;
      continue;
    }
    REQUIRE(o.response.status == 503);
    CHECK(ErrorCode(o.response) == "service_unavailable");
    CHECK(o.response.Header("x-request-id"));
    CHECK(o.finished - killed_at < std::chrono::seconds(5));
    ++unavailable;
  }
  CHECK(unavailable >= 1);  // the killed worker's
  CHECK(ok >= 1);           // the survivor's
  CHECK(ok + unavailable == kInFlight);

  // Out of rotation on both gateways (the one whose calls failed at once; the other by its
  // health checks), and every new call is served by the survivor.
  for (int g = 0; g < kReplicas; ++g) {
    CHECK(WaitFor(
        [&] {
          return MetricSample(t->gateway_admin(g),
                        "dnaserve_worker_replicas{task=\"promoter\",state=\"in_rotation\"}") == 1;
        },
        std::chrono::seconds(5)));
  }
  const double survivor_mid = t->WorkerCalls(1);
  for (int i = 0; i < 10; ++i) {
    auto r = t->Post(i % 2, "/v1/tasks/promoter/predict", MinimalBody("promoter"), t->generous_key());
    INFO(r.body);
    CHECK(r.status == 200);
  }
  CHECK(t->WorkerCalls(1) - survivor_mid == 10);
  CHECK(t->WorkerCalls(1) - survivor_before >= 10);
  CHECK(HttpRequest("GET", t->gateway_admin(0) + "/ready").status == 200);

  // Restarted on the same address: back in rotation within a few health checks, and served.
  REQUIRE(t->RestartWorker(0));
  CHECK(BothWorkersInRotation(t));
  const double revived_before = t->WorkerCalls(0);
  for (int i = 0; i < 10; ++i) {
    CHECK(t->Post(i % 2, "/v1/tasks/promoter/predict", MinimalBody("promoter"), t->generous_key())
              .status == 200);
  }
  CHECK(t->WorkerCalls(0) - revived_before >= 4);
}

TEST_CASE("one address naming several workers spreads calls over them and skips a dead one",
          "[topology]") {
  REQUIRE_TOPOLOGY(t);
  // What a Kubernetes headless Service gives the gateway: one name, every pod's address.
  dnaserve::core::GrpcInferenceBackend::Options options;
  options.endpoints.addresses[dnaserve::Task::kPromoter] = {t->both_workers_target()};
  dnaserve::core::GrpcInferenceBackend backend(options);
  auto validated =
      dnaserve::core::ValidatePredictBody(dnaserve::Task::kPromoter, MinimalBody("promoter"));
  REQUIRE(validated.ok());
  const auto& request = validated->request;
  auto call = [&](int i) {
    dnaserve::core::CallContext context;
    context.request_id = "headless-" + std::to_string(i);
    return backend.Predict(dnaserve::Task::kPromoter, request, context, nullptr);
  };

  const double before[2] = {t->WorkerCalls(0), t->WorkerCalls(1)};
  for (int i = 0; i < 20; ++i) {
    auto r = call(i);
    INFO(r.status().message());
    REQUIRE(r.ok());
  }
  const double served[2] = {t->WorkerCalls(0) - before[0], t->WorkerCalls(1) - before[1]};
  INFO("worker 0 served " << served[0] << ", worker 1 served " << served[1]);
  CHECK(served[0] + served[1] == 20);
  CHECK(served[0] >= 5);
  CHECK(served[1] >= 5);

  // One pod dies: every call still succeeds (a call that cannot reach it goes to the other).
  KillWorkerZeroThenCallTen(t, call, 100);

  // It comes back: the channel reconnects and its health watch lets calls reach it again.
  REQUIRE(t->RestartWorker(0));
  const double revived_before = t->WorkerCalls(0);
  CHECK(WaitFor(
      [&] {
        CHECK(call(200).ok());
        return t->WorkerCalls(0) > revived_before;
      },
      std::chrono::seconds(30)));
}

TEST_CASE("a worker call ends at its deadline even when the worker never answers", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  auto validated =
      dnaserve::core::ValidatePredictBody(dnaserve::Task::kPromoter, MinimalBody("promoter"));
  REQUIRE(validated.ok());
  struct Case {
    const char* what;
    std::chrono::seconds per_call_cap;  // the backend's predict_deadline (async jobs)
    std::optional<std::chrono::milliseconds> caller_budget;  // what a sync request has left
    std::chrono::milliseconds expected;
  };
  const Case cases[] = {
      {"the caller's deadline (a sync request's remaining budget)", std::chrono::seconds(300),
       std::chrono::milliseconds(700), std::chrono::milliseconds(700)},
      {"the backend's per-call cap (no caller deadline)", std::chrono::seconds(1), std::nullopt,
       std::chrono::milliseconds(1000)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    dnaserve::core::GrpcInferenceBackend::Options options;
    options.endpoints.addresses[dnaserve::Task::kPromoter] = {t->worker_address(1)};
    options.predict_deadline = c.per_call_cap;
    dnaserve::core::GrpcInferenceBackend backend(options);
    dnaserve::core::CallContext context;
    context.request_id = "deadline-test";
    REQUIRE(backend.Predict(dnaserve::Task::kPromoter, validated->request, context, nullptr).ok());

    // Stopped, the worker keeps its connections but answers nothing (a hung process): only the
    // deadline can end the call, and nothing is retried (the call may have reached the worker).
    t->PauseWorker(1, true);
    const auto started = std::chrono::steady_clock::now();
    if (c.caller_budget) context.deadline = started + *c.caller_budget;
    auto r = backend.Predict(dnaserve::Task::kPromoter, validated->request, context, nullptr);
    const auto took = std::chrono::steady_clock::now() - started;
    t->PauseWorker(1, false);
    INFO("took " << std::chrono::duration<double>(took).count() << " s: "
                 << r.status().message());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == dnaserve::ErrorCode::kServiceUnavailable);
    CHECK(took >= c.expected - std::chrono::milliseconds(50));
    CHECK(took < c.expected + std::chrono::seconds(2));
    CHECK(backend.retries() == 0);
  }
  // The gateways' health checks timed out while the worker was stopped; it comes back.
  CHECK(BothWorkersInRotation(t));
}

TEST_CASE("a call that never reached a worker goes to the other replica", "[topology]") {
  REQUIRE_TOPOLOGY(t);
  dnaserve::core::GrpcInferenceBackend::Options options;
  options.endpoints.addresses[dnaserve::Task::kPromoter] = {t->worker_address(0),
                                                            t->worker_address(1)};
  // One health round at start-up and none after: only calls can find the dead worker.
  options.health_interval = std::chrono::hours(1);
  dnaserve::core::GrpcInferenceBackend backend(options);
  auto validated =
      dnaserve::core::ValidatePredictBody(dnaserve::Task::kPromoter, MinimalBody("promoter"));
  REQUIRE(validated.ok());
  auto call = [&](int i) {
    dnaserve::core::CallContext context;
    context.request_id = "retry-" + std::to_string(i);
    return backend.Predict(dnaserve::Task::kPromoter, validated->request, context, nullptr);
  };
  // Both connections up and used, no retry needed.
  for (int i = 0; i < 4; ++i) REQUIRE(call(i).ok());
  REQUIRE(backend.retries() == 0);

  KillWorkerZeroThenCallTen(t, call, 10);
  // The one call whose turn fell on the dead worker failed before any handler accepted it and
  // was sent on; that failure took the worker out of rotation, so the rest went straight over.
  CHECK(backend.retries() == 1);
  CHECK(backend.Replicas()[dnaserve::Task::kPromoter].in_rotation == 1);

  REQUIRE(t->RestartWorker(0));
  CHECK(BothWorkersInRotation(t));
}
