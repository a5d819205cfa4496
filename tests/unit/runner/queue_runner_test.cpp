// The runner's queue and engine against a real redis-server: per-client bounds, fair turns
// between clients, jobs of a dead runner taken over and re-run (then given up), a sync job
// cancelled when its client leaves, and jobs handed back on a stop. Waiting without polling:
// an idle runner's Redis commands counted with MONITOR, a job queued to it started at once, its
// blocked reads ended by Stop and carried over a Redis restart. Entry formats: one of the
// previous release written by hand and run, one of a later release left for a reader of it.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <atomic>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/ids.h"
#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/clock.h"
#include "tests/support/in_memory_quota_store.h"
#include "runner/queue_runner.h"
#include "tests/support/redis_monitor.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

// Enhancer calls; a sequence of `kSlowLength` bp blocks until released (or cancelled), one of
// `kThrowingLength` bp throws (a foreign exception escaping the job).
constexpr size_t kSlowLength = 500;
constexpr size_t kThrowingLength = 400;

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
    if (request.sequence().size() == kThrowingLength) throw std::runtime_error("boom");
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

// The body of an enhancer predict call of `length` bases.
std::string EnhancerBody(size_t length) {
  return "{\"sequence\": \"" + std::string(length, 'A') + "\"}";
}

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

  runner::QueueRunner& StartRunner(const std::string& name, runner::QueueRunnerOptions options = {},
                                   metrics::Registry* registry = nullptr) {
    runner::JobServices services;
    services.backend = &backend;
    services.catalogue = &catalogue;
    options.consumer = name;
    options.poll_interval = std::chrono::milliseconds(10);
    runners.push_back(std::make_unique<runner::QueueRunner>(&queue, &jobs, &quotas, services,
                                                            options, registry));
    runners.back()->Start();
    return *runners.back();
  }

  // What a gateway does for an async (or sync) enhancer call: the lease, the record, the entry
  // (carrying the admitted command; with `legacy`, the HTTP request as the release before wrote
  // its entries).
  std::string Submit(const std::string& client, size_t length, const std::string& mode = "async",
                     int max_concurrency = 8) {
    QueuedJob job = Accept(client, length, mode, max_concurrency);
    REQUIRE(queue.Enqueue(job).ok());
    return job.job_id;
  }

  // Submit's lease and record, and the entry it would queue (carrying the admitted command).
  QueuedJob Accept(const std::string& client, size_t length, const std::string& mode = "async",
                   int max_concurrency = 8) {
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
    core::CallInput call;
    const std::string body = EnhancerBody(length);
    call.body = body;
    call.async = mode == "async";
    auto admitted = core::AdmitPredict("enhancer", call, catalogue);
    REQUIRE(admitted.ok());
    job.command = core::PredictCommandFor(std::move(admitted).value()).SerializeAsString();
    return job;
  }

  // An entry written by hand with Redis's own commands, as another release would write it:
  // the stream's group, the entry, the client in the clients set ("" for none).
  std::string WriteEntry(const std::string& stream, const std::string& client,
                         const std::vector<std::string>& fields) {
    (void)connection->Command({"XGROUP", "CREATE", stream, "runners", "0", "MKSTREAM"});
    std::vector<std::string> xadd = {"XADD", stream, "*"};
    xadd.insert(xadd.end(), fields.begin(), fields.end());
    auto id = connection->Command(xadd);
    REQUIRE(id.ok());
    REQUIRE_FALSE(id->IsError());
    if (!client.empty()) REQUIRE(connection->Command({"SADD", "dnaserve:queue:clients", client}).ok());
    return id->str;
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

// One sample ("name{labels}") of the registry's exposition; 0 when absent.
double Sample(const metrics::Registry& registry, const std::string& series) {
  const std::string text = registry.Render();
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::strtod(text.c_str() + at + 1 + series.size() + 1, nullptr);
}

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

TEST_CASE("runner: a command of a kind this release does not know fails its job as bad_request",
          "[runner][queue][versions]") {
  QueueHarness h;
  h.StartRunner("r1");
  const std::string job_id = h.Submit("alice", 300);
  // A command as a newer release's unknown kind would look: a field this release does not
  // know (15, empty), no kind it does.
  core::QueuedJob job = h.Accept("alice", 300);
  job.command = std::string("\x7a\x00", 2);
  REQUIRE(h.queue.Enqueue(job).ok());
  REQUIRE(Eventually([&] { return h.Finished(job.job_id, "alice"); }));
  core::JobRecord failed = h.Record(job.job_id, "alice");
  CHECK(failed.code == ErrorCode::kBadRequest);
  CHECK(failed.body.find("does not know") != std::string::npos);
  REQUIRE(Eventually([&] { return h.Finished(job_id, "alice"); }));
}

TEST_CASE("runner: a job that throws fails as internal_error and the runner keeps working",
          "[runner][queue]") {
  QueueHarness h;
  h.StartRunner("r1");
  const std::string bad = h.Submit("alice", kThrowingLength);
  REQUIRE(Eventually([&] { return h.Finished(bad, "alice"); }));
  core::JobRecord failed = h.Record(bad, "alice");
  INFO(failed.body);
  CHECK(failed.state == core::JobState::kFailed);
  CHECK(failed.code == ErrorCode::kInternal);
  CHECK(failed.body.find("internal_error") != std::string::npos);
  // What clients see of any internal failure: the envelope's fixed text, not the exception's.
  CHECK(failed.body.find("internal server error; quote the request_id") != std::string::npos);
  CHECK(failed.body.find("boom") == std::string::npos);  // the exception never reaches the wire

  const std::string good = h.Submit("alice", 300);
  REQUIRE(Eventually([&] { return h.Finished(good, "alice"); }));
  CHECK(h.Record(good, "alice").code == ErrorCode::kOk);
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

// ---- waiting without polling

TEST_CASE("runner: an idle runner sends Redis at most one command a second",
          "[runner][queue][idle]") {
  QueueHarness h;
  // The default claim timeout (30 s): it looks for dead runners' jobs every 10 s.
  h.StartRunner("idle");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past its first looks
  testing::RedisMonitor monitor;
  REQUIRE(monitor.Start(h.redis->port()));
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const auto commands = monitor.Lines();
  // The control: the monitor sees a command sent now.
  REQUIRE(h.connection->Command({"PING"}).ok());
  REQUIRE(Eventually([&] { return monitor.Count() > commands.size(); }));
  monitor.Stop();
  for (const auto& line : commands) UNSCOPED_INFO(line);
  // Polling every 10 ms (the harness's old setting) sent about 300 a second.
  CHECK(commands.size() <= 6);
}

TEST_CASE("runner: a job queued to an idle runner starts at once, not at its next look",
          "[runner][queue][idle]") {
  QueueHarness h;
  h.StartRunner("idle");  // looks on its own every 10 s: only the wake-up can start these
  for (int i = 1; i <= 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // waiting again
    const std::string job = h.Submit("alice", 300);
    INFO("job " << i);
    REQUIRE(Eventually([&] { return h.backend.started() == i; }, std::chrono::seconds(1)));
    REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }));
  }
}

TEST_CASE("runner: a client at its slot limit gets its next job as soon as one of its own ends",
          "[runner][queue][idle][fairness]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.slots = 2;
  options.client_slots = 1;
  h.StartRunner("r1", options);  // its own looks are 10 s apart
  std::vector<std::string> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(h.Submit("client-a", 300));
  // One at a time, each started when the one before ended (with a free slot, waiting on
  // Redis), not at the runner's next look.
  for (const auto& id : jobs) {
    REQUIRE(Eventually([&] { return h.Finished(id, "client-a"); }, std::chrono::seconds(5)));
  }
}

TEST_CASE("runner: stopping an idle runner does not wait for its blocked reads",
          "[runner][queue][idle]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::seconds(90);  // blocked reads of up to 30 s
  auto& idle = h.StartRunner("idle", options);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto stopping = std::chrono::steady_clock::now();
  idle.Stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopping).count();
  INFO("Stop took " << seconds << " s");
  CHECK(seconds < 5);
}

TEST_CASE("runner: an idle runner carries on after Redis restarts", "[runner][queue][idle]") {
  QueueHarness h;
  h.StartRunner("idle");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // blocked in its reads
  REQUIRE(h.redis->Restart());  // persistence is off: streams, groups and records are gone
  // A pooled connection whose connect failed during the outage refuses commands for its
  // reconnect back-off (100 ms): let that pass before submitting.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string job = h.Submit("alice", 300);
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }));
  CHECK(h.Record(job, "alice").code == ErrorCode::kOk);
  // The admission loop too, on a stream (and group) Redis no longer had: an admission is
  // answered (refused here: this runner has no variant workflow).
  QueuedJob admission;
  admission.job_id = NewUuidV4();
  admission.client_id = "alice";
  admission.kind = "variant";
  admission.command = "{}";  // unreadable: the verdict refuses it
  REQUIRE(h.queue.EnqueueAdmission(admission).ok());
  REQUIRE(Eventually([&] {
    auto verdict = h.queue.Verdict(admission.job_id);
    return verdict.ok() && verdict->has_value();
  }));
}

TEST_CASE("runner: a job handed back by a stopping runner is taken at once by an idle one",
          "[runner][queue][idle]") {
  QueueHarness h;
  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::seconds(60);  // own looks for such jobs 20 s apart
  auto& first = h.StartRunner("first", options);
  const std::string job = h.Submit("alice", kSlowLength);
  REQUIRE(Eventually([&] { return h.backend.started() == 1; }));
  h.StartRunner("second", options);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // idle, waiting
  first.Stop();
  h.backend.Release();
  REQUIRE(Eventually([&] { return h.Finished(job, "alice"); }, std::chrono::seconds(10)));
  CHECK(h.Record(job, "alice").code == ErrorCode::kOk);
  CHECK(h.backend.started() == 2);
}

// ---- entry formats

TEST_CASE("queue: an entry of the previous release's format (no version field) is read as "
          "version 1 and run",
          "[runner][queue][version]") {
  QueueHarness h;
  // The fields the release before versions wrote (job_queue.cc, EntryFields), in its order.
  auto golden = [&](const QueuedJob& j) {
    return std::vector<std::string>{
        "job_id", j.job_id, "request_id", j.request_id, "client_id", j.client_id, "rate", "6000",
        "concurrency", "8", "kind", "predict", "mode", "async", "task", "enhancer", "format", "",
        "accept", "", "deadline_ms", "0", "body", EnhancerBody(300), "fact.model", "enhancer-test"};
  };
  const QueuedJob inspected = h.Accept("inspector", 300);
  h.WriteEntry(h.queue.ClientStream("inspector"), "inspector", golden(inspected));
  auto read = h.queue.ReadNew("inspector", "reader");
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  const Delivery& d = **read;
  CHECK(d.version == 1);
  CHECK(d.Readable());
  CHECK(d.job.job_id == inspected.job_id);
  CHECK(d.job.rate_per_minute == 6000);
  CHECK(d.job.max_concurrency == 8);
  CHECK(d.job.command.empty());
  CHECK(d.job.legacy_request.body == EnhancerBody(300));
  CHECK(d.job.Fact("model") == "enhancer-test");

  // And a runner runs one (the previous release wrote no wake-up: found by its first look).
  const QueuedJob job = h.Accept("alice", 300);
  h.WriteEntry(h.queue.ClientStream("alice"), "alice", golden(job));
  h.StartRunner("r1");
  REQUIRE(Eventually([&] { return h.Finished(job.job_id, "alice"); }));
  // Its request, admitted by the runner (the release before queued no command), ran.
  const core::JobRecord ran = h.Record(job.job_id, "alice");
  INFO(ran.body);
  CHECK(ran.code == ErrorCode::kOk);
  CHECK(ran.body.find("\"enhancer-test\"") != std::string::npos);
}

TEST_CASE("queue: an entry carries the oldest format version that can read its kind",
          "[runner][queue][version]") {
  // A predict entry stays readable by runners of format 2 (the release before variant
  // scoring); only a variant-score entry needs a reader of format 3.
  QueueHarness h;
  h.Submit("alice", 300);
  QueuedJob score = h.Accept("alice", 300);
  score.kind = std::string(kVariantScoreKind);
  REQUIRE(h.queue.Enqueue(score).ok());
  // A variant score whose command names another scorer than splice needs a reader of format 4
  // (core/admission VariantScoreEntryVersion says so for the command).
  QueuedJob scorers = h.Accept("alice", 300);
  scorers.kind = std::string(kVariantScoreKind);
  scorers.command_version = 4;
  REQUIRE(h.queue.Enqueue(scorers).ok());
  // An interval request needs a reader of format 4 (a runner of 3 would run it without bases).
  QueuedJob interval = h.Accept("alice", 300);
  interval.kind = std::string(kIntervalKind);
  REQUIRE(h.queue.Enqueue(interval).ok());
  // An ISM request needs a reader of format 5 (a runner of 4 does not know its command).
  QueuedJob ism = h.Accept("alice", 300);
  ism.kind = std::string(kIsmKind);
  REQUIRE(h.queue.Enqueue(ism).ok());
  // An interval expression whose window reaches past the interval needs a reader of format 6
  // (core/admission IntervalEntryVersion says so for the command).
  QueuedJob past_edge = h.Accept("alice", 300);
  past_edge.kind = std::string(kIntervalKind);
  past_edge.command_version = 6;
  REQUIRE(h.queue.Enqueue(past_edge).ok());
  // An ISM with the expression scorer needs a reader of format 7 (core/admission
  // IsmEntryVersion; a runner of 6 refuses the command as damaged).
  QueuedJob ism_expression = h.Accept("alice", 300);
  ism_expression.kind = std::string(kIsmKind);
  ism_expression.command_version = 7;
  REQUIRE(h.queue.Enqueue(ism_expression).ok());
  auto entries = h.connection->Command({"XRANGE", h.queue.ClientStream("alice"), "-", "+"});
  REQUIRE(entries.ok());
  REQUIRE(entries->elements.size() == 7);
  std::vector<std::string> versions;
  for (const auto& entry : entries->elements) {
    const auto& fields = entry.elements[1].elements;
    REQUIRE(fields.size() >= 2);
    CHECK(fields[0].str == "version");
    versions.push_back(fields[1].str);
  }
  CHECK(versions == std::vector<std::string>{"2", "3", "4", "4", "5", "6", "7"});
  CHECK(kQueueFormatVersion == 7);
  for (int64_t expected : {2, 3, 4, 4, 5, 6, 7}) {
    auto read = h.queue.ReadNew("alice", "reader");
    REQUIRE(read.ok());
    REQUIRE(read->has_value());
    CHECK((*read)->version == expected);
    CHECK((*read)->Readable());
  }
  for (const char* kind : {"predict", "find_genes", "variant"}) {
    QueuedJob job;
    job.kind = kind;
    CHECK(EntryFormatVersion(job) == 2);
  }
}

TEST_CASE("runner: an entry of a newer format is left for a reader of it, and others are served",
          "[runner][queue][version]") {
  QueueHarness h;
  metrics::Registry registry;
  // Ahead of alice's own job, an entry a later release wrote (with a job it accepted), and one
  // ahead of an admission.
  const QueuedJob future_job = h.Accept("alice", 300);
  const std::string newer = std::to_string(kQueueFormatVersion + 1);
  const std::vector<std::string> future = {"version", newer, "job_id", future_job.job_id,
                                           "command", std::string("\x0a\x03\x01\x02", 4)};
  const std::string future_entry = h.WriteEntry(h.queue.ClientStream("alice"), "alice", future);
  h.WriteEntry(h.queue.AdmissionStream(), "", future);
  const std::string after = h.Submit("alice", 300);
  const std::string other = h.Submit("bob", 300);
  QueuedJob admission;
  admission.job_id = NewUuidV4();
  admission.client_id = "bob";
  admission.kind = "variant";
  admission.command = "{}";  // unreadable: the verdict refuses it
  REQUIRE(h.queue.EnqueueAdmission(admission).ok());

  h.StartRunner("r1", {}, &registry);
  REQUIRE(Eventually([&] { return h.Finished(after, "alice"); }));
  REQUIRE(Eventually([&] { return h.Finished(other, "bob"); }));
  REQUIRE(Eventually([&] {
    auto verdict = h.queue.Verdict(admission.job_id);
    return verdict.ok() && verdict->has_value();
  }));
  // Left once from each stream, and not again meanwhile: no spinning on them.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(Sample(registry, "dnaserve_runner_queue_entries_left_total{version=\"" + newer + "\"}") ==
        2);
  // Not failed: its job is still waiting; not acknowledged, not lost: the entry is there.
  CHECK(h.Record(future_job.job_id, "alice").state == JobState::kAccepted);
  auto length = h.connection->Command({"XLEN", h.queue.ClientStream("alice")});
  REQUIRE(length.ok());
  CHECK(length->integer == 1);
  // A reader of the newer version claims both at once, as their first delivery.
  for (const std::string client : {"alice", ""}) {
    auto taken = h.queue.ClaimStale(client, "reader-v2", 30000);
    REQUIRE(taken.ok());
    REQUIRE(taken->has_value());
    CHECK((*taken)->version == kQueueFormatVersion + 1);
    CHECK((*taken)->attempts == 1);
    CHECK_FALSE((*taken)->Readable());
  }
}

TEST_CASE("runner: an entry of a newer format left pending is looked at once per reclaim, "
          "never more",
          "[runner][queue][version]") {
  QueueHarness h;
  metrics::Registry registry;
  const std::string newer = std::to_string(kQueueFormatVersion + 2);
  h.WriteEntry(h.queue.ClientStream("alice"), "alice", {"version", newer, "command", "x"});
  h.WriteEntry(h.queue.ClientStream("alice"), "alice", {"version", "v3", "command", "x"});
  const std::string after = h.Submit("alice", 300);
  runner::QueueRunnerOptions options;
  options.claim_timeout = std::chrono::milliseconds(600);  // looks every 200 ms
  h.StartRunner("r1", options, &registry);
  REQUIRE(Eventually([&] { return h.Finished(after, "alice"); }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // Each reclaim look takes each entry and leaves it again: about 10 looks in 2 s. Spinning on
  // them would be thousands.
  const double left =
      Sample(registry, "dnaserve_runner_queue_entries_left_total{version=\"" + newer + "\"}");
  const double invalid =
      Sample(registry, "dnaserve_runner_queue_entries_left_total{version=\"invalid\"}");
  INFO(left << " and " << invalid << " times");
  CHECK(left >= 2);
  CHECK(left <= 20);
  CHECK(invalid >= 2);
  CHECK(invalid <= 20);
  // Never counted as delivered: a reader of it would still see its first run.
  auto pending = h.connection->Command(
      {"XPENDING", h.queue.ClientStream("alice"), "runners", "-", "+", "10"});
  REQUIRE(pending.ok());
  REQUIRE(pending->elements.size() == 2);
  for (const auto& entry : pending->elements) CHECK(entry.elements[3].integer <= 1);
}
