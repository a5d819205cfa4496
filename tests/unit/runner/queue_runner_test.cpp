// The runner's queue and engine against a real redis-server: per-client bounds, fair turns
// between clients, jobs of a dead runner taken over and re-run (then given up), a sync job
// cancelled when its client leaves, and jobs handed back on a stop.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <atomic>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "common/ids.h"
#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/clock.h"
#include "tests/support/in_memory_quota_store.h"
#include "runner/queue_runner.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

// Enhancer calls; a sequence of `kSlowLength` bp blocks until released (or cancelled).
constexpr size_t kSlowLength = 500;

class GatedBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task, const pb::PredictRequest& request,
                                      const core::CallContext& context,
                                      const core::ProgressCallback&) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++started_;
      started_sequences_.insert(request.sequence().size());
    }
    cv_.notify_all();
    if (request.sequence().size() == kSlowLength) {
      std::unique_lock<std::mutex> lock(mu_);
      while (!released_ && !(context.cancelled && context.cancelled->load())) {
        cv_.wait_for(lock, std::chrono::milliseconds(10));
      }
      if (!released_) return Unavailable("the call was cancelled");
    }
    pb::PredictResult result;
    result.set_model(request.model());
    result.set_windows_processed(1);
    auto* w = result.mutable_enhancer()->add_windows();
    w->set_end(249);
    w->set_dev(0.5);
    w->set_hk(-0.25);
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int started_ = 0;
  std::set<size_t> started_sequences_;
};

struct QueueHarness {
  std::optional<testing::RedisServer> redis = testing::RedisServer::Start();
  std::shared_ptr<core::RedisConnection> connection = Connect();
  core::RedisJobStore jobs{connection};
  core::RedisJobQueue queue;
  core::ManualClock clock;
  core::InMemoryQuotaStore quotas{&clock};
  GatedBackend backend;
  core::ModelCatalogue catalogue;
  std::vector<std::unique_ptr<runner::QueueRunner>> runners;

  explicit QueueHarness(core::JobQueueOptions queue_options = {})
      : queue(connection, std::move(queue_options)) {
    pb::ModelInfo m;
    m.set_id("enhancer-test");
    m.set_task(pb::TASK_ENHANCER);
    m.set_is_default(true);
    catalogue.SetModels(Task::kEnhancer, {m});
  }
  ~QueueHarness() {
    backend.Release();
    for (auto& r : runners) r->Stop();
  }

  std::shared_ptr<core::RedisConnection> Connect() {
    REQUIRE(redis.has_value());
    auto c = core::RedisConnection::Create(redis->url());
    REQUIRE(c.ok());
    return *c;
  }

  runner::QueueRunner& StartRunner(const std::string& name, runner::QueueRunnerOptions options = {}) {
    runner::JobServices services;
    services.backend = &backend;
    services.catalogue = &catalogue;
    options.consumer = name;
    options.poll_interval = std::chrono::milliseconds(10);
    runners.push_back(std::make_unique<runner::QueueRunner>(&queue, &jobs, &quotas, services,
                                                            options));
    runners.back()->Start();
    return *runners.back();
  }

  // What a gateway does for an async (or sync) enhancer call: the lease, the record, the entry
  // (carrying the admitted command; with `legacy`, the HTTP request as the release before wrote
  // its entries).
  std::string Submit(const std::string& client, size_t length, const std::string& mode = "async",
                     int max_concurrency = 8, bool legacy = false) {
    const std::string job_id = NewUuidV4();
    Principal principal{client, 6000, max_concurrency};
    REQUIRE(quotas.Admit(principal, job_id, core::kQueuedLeaseTtlMs).status.ok());
    core::JobRecord record;
    record.job_id = job_id;
    record.request_id = "req-" + job_id.substr(0, 8);
    record.owner = client;
    record.task = "enhancer";
    record.mode = mode;
    record.queued = true;
    REQUIRE(jobs.Create(record).ok());
    core::QueuedJob job;
    job.job_id = job_id;
    job.request_id = record.request_id;
    job.client_id = client;
    job.rate_per_minute = principal.rate_per_minute;
    job.max_concurrency = principal.max_concurrency;
    job.kind = "predict";
    job.mode = mode;
    const std::string body = "{\"sequence\": \"" + std::string(length, 'A') + "\"}";
    if (legacy) {
      // The entry exactly as the release before wrote it (no command: the request itself).
      const std::string stream = queue.ClientStream(client);
      (void)connection->Command({"XGROUP", "CREATE", stream, "runners", "0", "MKSTREAM"});
      REQUIRE(connection
                  ->Command({"XADD", stream, "*", "job_id", job_id, "request_id", job.request_id,
                             "client_id", client, "rate", "6000", "concurrency",
                             std::to_string(max_concurrency), "kind", "predict", "mode", mode,
                             "task", "enhancer", "format", "", "accept", "", "deadline_ms", "0",
                             "body", body})
                  .ok());
      REQUIRE(connection->Command({"SADD", "dnaserve:queue:clients", client}).ok());
      return job_id;
    } else {
      core::CallInput call;
      call.body = body;
      call.async = mode == "async";
      auto admitted = core::AdmitPredict("enhancer", call, catalogue);
      REQUIRE(admitted.ok());
      job.command = core::PredictCommandFor(std::move(admitted).value()).SerializeAsString();
    }
    REQUIRE(queue.Enqueue(job).ok());
    return job_id;
  }

  core::JobRecord Record(const std::string& job_id, const std::string& client) {
    auto r = jobs.Get(job_id, client);
    REQUIRE(r.ok());
    return *r;
  }
  bool Finished(const std::string& job_id, const std::string& client) {
    auto state = Record(job_id, client).state;
    return state == core::JobState::kCompleted || state == core::JobState::kFailed;
  }
};

bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

}  // namespace

TEST_CASE("queue: a client's queued and running jobs are bounded, others are not affected",
          "[runner][queue]") {
  core::JobQueueOptions options;
  options.max_jobs_per_client = 2;
  QueueHarness h(options);
  h.Submit("greedy", 300);
  h.Submit("greedy", 300);
  core::QueuedJob third;
  third.job_id = NewUuidV4();
  third.client_id = "greedy";
  third.kind = "predict";
  Status refused = h.queue.Enqueue(third);
  CHECK(refused.code() == ErrorCode::kTooManyRequests);
  REQUIRE(refused.retry_after_seconds().has_value());
  CHECK(*refused.retry_after_seconds() > 0);
  // Another client still gets in.
  h.Submit("modest", 300);
  auto depth = h.queue.Depth();
  REQUIRE(depth.ok());
  CHECK(*depth == 3);
}

TEST_CASE("runner: jobs run, results are stored, leases freed and entries removed",
          "[runner][queue]") {
  QueueHarness h;
  h.StartRunner("r1");
  const std::string job = h.Submit("alice", 300, "async", /*max_concurrency=*/1);
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }));
  core::JobRecord record = h.Record(job, "alice");
  INFO(record.body);
  CHECK(record.code == ErrorCode::kOk);
  rapidjson::Document d;
  d.Parse(record.body.c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(std::string(d["meta"]["job_id"].GetString()) == job);
  CHECK(std::string(d["data"]["task"].GetString()) == "enhancer");
  // The seat is free again, the entry gone.
  CHECK(h.quotas.Admit(Principal{"alice", 6000, 1}, "next", core::kLeaseTtlMs).status.ok());
  REQUIRE(Eventually([&] { return *h.queue.Depth() == 0; }));
}

TEST_CASE("runner: an entry of the release before (the HTTP request, no command) still runs",
          "[runner][queue][versions]") {
  QueueHarness h;
  h.StartRunner("r1");
  const std::string job = h.Submit("alice", 300, "async", /*max_concurrency=*/1, /*legacy=*/true);
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }));
  core::JobRecord record = h.Record(job, "alice");
  INFO(record.body);
  CHECK(record.code == ErrorCode::kOk);
  rapidjson::Document d;
  d.Parse(record.body.c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(std::string(d["data"]["task"].GetString()) == "enhancer");
  CHECK(std::string(d["meta"]["model"].GetString()) == "enhancer-test");
}

TEST_CASE("runner: a command this release cannot read fails its job, it is never retried",
          "[runner][queue][versions]") {
  QueueHarness h;
  h.StartRunner("r1");
  const std::string job_id = h.Submit("alice", 300);
  // Rewrite the entry's command as a newer release's unknown kind would look: an empty oneof.
  core::QueuedJob job;
  job.job_id = NewUuidV4();
  job.request_id = "req-unknown";
  job.client_id = "alice";
  job.rate_per_minute = 6000;
  job.max_concurrency = 8;
  job.kind = "predict";
  job.mode = "async";
  job.command = std::string("\x22\x00", 2);  // field 4 (unknown to this release), empty
  core::JobRecord record;
  record.job_id = job.job_id;
  record.request_id = job.request_id;
  record.owner = "alice";
  record.task = "enhancer";
  record.mode = "async";
  record.queued = true;
  REQUIRE(h.jobs.Create(record).ok());
  REQUIRE(h.queue.Enqueue(job).ok());
  REQUIRE(Eventually([&] { return h.Finished(job.job_id, "alice"); }));
  core::JobRecord failed = h.Record(job.job_id, "alice");
  CHECK(failed.code == ErrorCode::kBadRequest);
  CHECK(failed.body.find("does not know") != std::string::npos);
  REQUIRE(Eventually([&] { return h.Finished(job_id, "alice"); }));
}

TEST_CASE("runner: a small job of B finishes while A's long jobs hold their slots",
          "[runner][queue][fairness]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.slots = 2;
  options.client_slots = 1;
  h.StartRunner("r1", options);
  std::vector<std::string> a_jobs;
  for (int i = 0; i < 4; ++i) a_jobs.push_back(h.Submit("client-a", kSlowLength));
  REQUIRE(Eventually([&] { return h.backend.started() >= 1; }));
  const auto submitted = std::chrono::steady_clock::now();
  const std::string b_job = h.Submit("client-b", 300);
  REQUIRE(Eventually([&] { return h.Finished(b_job, "client-b"); }, std::chrono::seconds(10)));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  INFO("B's job took " << seconds << " s");
  CHECK(seconds < 5);
  CHECK(h.Record(b_job, "client-b").code == ErrorCode::kOk);
  // A holds one slot, never both: its other jobs are still waiting.
  int a_finished = 0;
  for (const auto& id : a_jobs) a_finished += h.Finished(id, "client-a") ? 1 : 0;
  CHECK(a_finished == 0);
  CHECK(h.backend.started() == 2);  // A's one, B's one
  h.backend.Release();
  for (const auto& id : a_jobs) {
    REQUIRE(Eventually([&] { return h.Finished(id, "client-a"); }));
    CHECK(h.Record(id, "client-a").code == ErrorCode::kOk);
  }
}

TEST_CASE("runner: a dead runner's job is taken over and re-run, then given up after N runs",
          "[runner][queue]") {
  QueueHarness h;
  // A runner that read the job and died: the entry stays pending under its name.
  const std::string job = h.Submit("alice", 300);
  auto taken = h.queue.ReadNew("alice", "dead-runner");
  REQUIRE(taken.ok());
  REQUIRE(taken->has_value());
  // A job whose runners died as often as allowed (three deliveries so far).
  const std::string doomed = h.Submit("bob", 300);
  for (int i = 0; i < 3; ++i) {
    auto claimed = i == 0 ? h.queue.ReadNew("bob", "dead-" + std::to_string(i))
                          : h.queue.ClaimStale("bob", "dead-" + std::to_string(i), 0);
    REQUIRE(claimed.ok());
    REQUIRE(claimed->has_value());
    CHECK((*claimed)->attempts == i + 1);
  }

  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::milliseconds(500);
  options.max_attempts = 3;
  h.StartRunner("survivor", options);
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }));
  CHECK(h.Record(job, "alice").code == ErrorCode::kOk);
  REQUIRE(Eventually([&] { return h.Finished(doomed, "bob"); }));
  core::JobRecord record = h.Record(doomed, "bob");
  CHECK(record.code == ErrorCode::kServiceUnavailable);
  CHECK(record.body.find("resubmit") != std::string::npos);
  CHECK(h.quotas.Admit(Principal{"bob", 6000, 1}, "next", core::kLeaseTtlMs).status.ok());
  REQUIRE(Eventually([&] { return *h.queue.Depth() == 0; }));
}

TEST_CASE("runner: a sync job whose client left is cancelled and stored as such",
          "[runner][queue]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::milliseconds(600);  // heartbeat every 200 ms
  h.StartRunner("r1", options);
  const std::string job = h.Submit("alice", kSlowLength, "sync");
  REQUIRE(Eventually([&] { return h.backend.started() == 1; }));
  REQUIRE(h.queue.RequestCancel(job).ok());
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }, std::chrono::seconds(10)));
  core::JobRecord record = h.Record(job, "alice");
  CHECK(record.code == ErrorCode::kServiceUnavailable);
  CHECK(record.body.find("closed its connection") != std::string::npos);
}

TEST_CASE("runner: a stopping runner hands its running job back, another runs it at once",
          "[runner][queue]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::seconds(60);  // a hand-back must not wait for this
  auto& first = h.StartRunner("first", options);
  const std::string job = h.Submit("alice", kSlowLength);
  REQUIRE(Eventually([&] { return h.backend.started() == 1; }));
  first.Stop();
  CHECK_FALSE(h.Finished(job, "alice"));
  h.backend.Release();
  h.StartRunner("second", options);
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }, std::chrono::seconds(10)));
  CHECK(h.Record(job, "alice").code == ErrorCode::kOk);
}
