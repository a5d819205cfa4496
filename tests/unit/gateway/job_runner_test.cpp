// The JobRunner with jobs of its own kind (core/jobs/job.h): progress reaches the store,
// heartbeats renew leases, Stop cancels long work promptly, a sync job whose client went away
// is cancelled at once, a throwing job is contained, a sync job's worker calls get its remaining
// budget.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <optional>
#include <thread>

#include "gateway/handlers/job_runner.h"
#include "gateway/http/error_response.h"
#include "tests/support/counting_quota_store.h"
#include "tests/support/in_memory_job_store.h"
#include "tests/support/job_submissions.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;

namespace {

// Counts progress writes; Finish waits for `finish_gate` when one is set.
class WatchedJobStore : public core::InMemoryJobStore {
 public:
  using core::InMemoryJobStore::InMemoryJobStore;
  Status UpdateProgress(const std::string& job_id, double percent,
                        const std::string& message) override {
    ++progress_writes;
    return core::InMemoryJobStore::UpdateProgress(job_id, percent, message);
  }
  Status Finish(const std::string& job_id, ErrorCode code, const std::string& content_type,
                const std::string& body) override {
    // Bounded: a test that fails before opening the gate must not hang the run.
    if (finish_gate) finish_gate->wait_for(std::chrono::seconds(15));
    return core::InMemoryJobStore::Finish(job_id, code, content_type, body);
  }
  std::atomic<int> progress_writes{0};
  std::shared_future<void>* finish_gate = nullptr;
};

// Reports progress, then waits for `release` (or cancellation) before answering.
class GatedJob : public core::Job {
 public:
  explicit GatedJob(std::shared_future<void> release) : release_(std::move(release)) {}
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    context.Progress(40, "stage one: 2 of 5");
    while (release_.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      if (context.Cancelled()) {
        return Unavailable("cancelled mid-way");
      }
    }
    core::JobOutput done;
    done.body = "{\"data\":{},\"meta\":{\"job_id\":\"" + context.call.job_id + "\"}}";
    return done;
  }

 private:
  std::shared_future<void> release_;
};

// Blocks like a worker call does (not polling): only the cancellation's callback wakes it.
class BlockedJob : public core::Job {
 public:
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    auto woken = std::make_shared<std::promise<void>>();
    REQUIRE(context.call.cancellation != nullptr);
    Cancellation::Registration registration =
        context.call.cancellation->OnCancel([woken] { woken->set_value(); });
    started.set_value();
    if (woken->get_future().wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      return core::JobOutput{};  // never woken: the test sees a success and fails
    }
    return Unavailable("the worker call was cancelled");
  }
  std::promise<void> started;
};

class ThrowingJob : public core::Job {
 public:
  StatusOr<core::JobOutput> Run(const core::JobContext&) override { throw std::runtime_error("boom"); }
};

class ValidationFailingJob : public core::Job {
 public:
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    while (!context.Cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return ValidationFailed({"body"}, "bad", "value_error");
  }
};

// Reports progress every 10 ms until `release`.
class ProgressingJob : public core::Job {
 public:
  explicit ProgressingJob(std::shared_future<void> release) : release_(std::move(release)) {}
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    for (int step = 1; release_.wait_for(std::chrono::milliseconds(10)) !=
                       std::future_status::ready;
         ++step) {
      context.Progress(std::min(step, 99), "step " + std::to_string(step));
    }
    core::JobOutput done;
    done.body = "{}";
    return done;
  }

 private:
  std::shared_future<void> release_;
};

// Reports the deadline its worker calls would be given, then answers at once.
class DeadlineProbe : public core::Job {
 public:
  using Seen = std::promise<std::optional<std::chrono::steady_clock::time_point>>;
  explicit DeadlineProbe(Seen* seen) : seen_(seen) {}
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    seen_->set_value(context.call.deadline);
    core::JobOutput done;
    done.body = "{}";
    return done;
  }

 private:
  Seen* seen_;
};

struct Harness {
  core::ManualClock clock;
  WatchedJobStore jobs{&clock};
  testing::CountingQuotaStore quotas;
  core::Executor executor{2, 4};
  JobRunner runner{&jobs, &executor, std::chrono::seconds(1)};
  int next = 0;

  // Sync jobs' progress is written from their start (quiet period 0) unless a test says not.
  explicit Harness(std::chrono::milliseconds sync_quiet_period = std::chrono::milliseconds(0)) {
    runner.set_sync_quiet_period(sync_quiet_period);
    runner.Start();
  }
  ~Harness() {
    runner.Stop();
    executor.Shutdown();
  }

  // Creates the record and submits `work`; returns the job id.
  std::string Submit(std::unique_ptr<core::Job> work, std::function<void(HttpResponse)> on_done = {},
                     std::shared_ptr<Cancellation> client_gone = nullptr) {
    std::string id = testing::TestJobId(++next);
    REQUIRE(runner.Submit(
        testing::RecordedSubmission(jobs, quotas, id, "async", core::JobState::kAccepted,
                                    clock.NowMs(), std::move(work), std::move(client_gone)),
        std::move(on_done)));
    return id;
  }

  core::JobRecord WaitForState(const std::string& id, bool finished) {
    for (int i = 0; i < 2000; ++i) {
      auto job = jobs.Get(id, "alice");
      REQUIRE(job.ok());
      const bool done = job->state == core::JobState::kCompleted || job->state == core::JobState::kFailed;
      if (done == finished && (finished || job->progress_percent > 0)) return *job;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("job " << id << " never reached the expected state");
    return {};
  }
};

}  // namespace

TEST_CASE("a job's progress reaches the store and its response is stored verbatim", "[jobs]") {
  Harness h;
  std::promise<void> release;
  std::promise<HttpResponse> answered;
  std::string id = h.Submit(std::make_unique<GatedJob>(release.get_future().share()),
                            [&](HttpResponse r) { answered.set_value(std::move(r)); });
  core::JobRecord running = h.WaitForState(id, /*finished=*/false);
  CHECK(running.state == core::JobState::kRunning);
  CHECK(running.progress_percent == 40);
  CHECK(running.progress_message == "stage one: 2 of 5");

  release.set_value();
  auto future = answered.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  HttpResponse response = future.get();
  CHECK(response.status == 200);
  CHECK(*response.FindHeader("X-Job-Id") == id);
  core::JobRecord done = h.WaitForState(id, /*finished=*/true);
  CHECK(done.state == core::JobState::kCompleted);
  CHECK(done.body == response.body);
  CHECK(h.quotas.released == 1);  // the lease went with the job
}

TEST_CASE("heartbeats keep a long job alive and renew its lease", "[jobs]") {
  Harness h;
  std::promise<void> release;
  std::string id = h.Submit(std::make_unique<GatedJob>(release.get_future().share()));
  h.WaitForState(id, /*finished=*/false);
  // Far past the stale-job timeout by the store's clock, but heartbeats keep arriving.
  for (int step = 0; step < 3; ++step) {
    h.clock.AdvanceMs(core::kJobHeartbeatTimeoutSeconds * 1000 - 5000);
    int before = h.quotas.renewed;
    for (int i = 0; i < 1000 && h.quotas.renewed == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(h.quotas.renewed > before);
    auto job = h.jobs.Get(id, "alice");
    REQUIRE(job.ok());
    CHECK(job->state == core::JobState::kRunning);
    CHECK(job->progress_message == "stage one: 2 of 5");
  }
  release.set_value();
  CHECK(h.WaitForState(id, /*finished=*/true).code == ErrorCode::kOk);
}

TEST_CASE("Stop cancels running and queued jobs, they ask the client to resubmit", "[jobs]") {
  Harness h;
  std::promise<void> never;
  auto gate = never.get_future().share();
  std::string running = h.Submit(std::make_unique<GatedJob>(gate));
  h.WaitForState(running, /*finished=*/false);
  std::string second = h.Submit(std::make_unique<GatedJob>(gate));
  std::string queued = h.Submit(std::make_unique<GatedJob>(gate));  // both threads are busy

  auto started = std::chrono::steady_clock::now();
  h.runner.Stop();
  h.executor.Shutdown();  // runs the queued job, which must not start real work
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  for (const std::string& id : {running, second, queued}) {
    INFO(id);
    auto job = h.jobs.Get(id, "alice");
    REQUIRE(job.ok());
    CHECK(job->state == core::JobState::kFailed);
    CHECK(job->code == ErrorCode::kServiceUnavailable);
    CHECK(job->body.find("service_unavailable") != std::string::npos);
    CHECK(job->body.find("resubmit") != std::string::npos);
  }
  CHECK(h.quotas.released == 3);
}

TEST_CASE("a sync job whose client goes away is cancelled at once and stored as such", "[jobs]") {
  Harness h;
  auto connection = std::make_shared<Cancellation>();
  auto job = std::make_unique<BlockedJob>();
  std::future<void> started = job->started.get_future();
  std::promise<HttpResponse> answered;
  std::string id = h.Submit(
      std::move(job), [&](HttpResponse r) { answered.set_value(std::move(r)); }, connection);
  REQUIRE(started.wait_for(std::chrono::seconds(10)) == std::future_status::ready);

  const auto closed_at = std::chrono::steady_clock::now();
  connection->Cancel();  // what the HTTP server does when the client's connection closes
  auto reply = answered.get_future();
  REQUIRE(reply.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - closed_at < std::chrono::seconds(2));
  const HttpResponse response = reply.get();
  CHECK(response.status == 503);
  CHECK(response.body.find("closed its connection") != std::string::npos);
  core::JobRecord stored = h.WaitForState(id, /*finished=*/true);
  CHECK(stored.code == ErrorCode::kServiceUnavailable);
  CHECK(stored.body.find("closed its connection") != std::string::npos);
  CHECK(h.quotas.released == 1);
}

TEST_CASE("a sync job whose client left while it was queued stops before its work", "[jobs]") {
  Harness h;
  auto connection = std::make_shared<Cancellation>();
  connection->Cancel();
  std::promise<void> never;
  std::string id = h.Submit(std::make_unique<GatedJob>(never.get_future().share()), {}, connection);
  core::JobRecord stored = h.WaitForState(id, /*finished=*/true);  // GatedJob would wait forever
  CHECK(stored.code == ErrorCode::kServiceUnavailable);
  CHECK(stored.body.find("closed its connection") != std::string::npos);
  // Another connection's job is untouched.
  std::promise<void> release;
  release.set_value();
  std::string other = h.Submit(std::make_unique<GatedJob>(release.get_future().share()), {},
                               std::make_shared<Cancellation>());
  CHECK(h.WaitForState(other, /*finished=*/true).code == ErrorCode::kOk);
}

TEST_CASE("a 4xx a cancelled job reached is kept as its answer", "[jobs]") {
  Harness h;
  std::string id = h.Submit(std::make_unique<ValidationFailingJob>());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  h.runner.Stop();
  core::JobRecord done = h.WaitForState(id, /*finished=*/true);
  CHECK(done.code == ErrorCode::kValidationFailed);
  CHECK(done.body.find("validation_failed") != std::string::npos);
}

TEST_CASE("a job that throws fails with 500 and the runner keeps working", "[jobs]") {
  Harness h;
  std::string bad = h.Submit(std::make_unique<ThrowingJob>());
  core::JobRecord failed = h.WaitForState(bad, /*finished=*/true);
  CHECK(failed.code == ErrorCode::kInternal);
  CHECK(failed.body.find("internal_error") != std::string::npos);
  CHECK(failed.body.find("boom") == std::string::npos);  // the exception never reaches the wire

  std::promise<void> release;
  release.set_value();
  std::string good = h.Submit(std::make_unique<GatedJob>(release.get_future().share()));
  CHECK(h.WaitForState(good, /*finished=*/true).code == ErrorCode::kOk);
}

TEST_CASE("a sync job's worker calls end by its budget counted from submission, queueing included",
          "[jobs]") {
  DeadlineProbe::Seen sync_seen;
  DeadlineProbe::Seen async_seen;
  std::promise<void> release;
  Harness h;
  h.runner.set_sync_budget(std::chrono::seconds(300));
  // Both executor threads busy: the two probes wait in the queue, and that wait is spent budget.
  auto gate = release.get_future().share();
  h.Submit(std::make_unique<GatedJob>(gate));
  h.Submit(std::make_unique<GatedJob>(gate));
  const auto before = std::chrono::steady_clock::now();
  h.Submit(std::make_unique<DeadlineProbe>(&sync_seen), [](HttpResponse) {});
  const auto after = std::chrono::steady_clock::now();
  h.Submit(std::make_unique<DeadlineProbe>(&async_seen));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  release.set_value();

  auto sync_future = sync_seen.get_future();
  REQUIRE(sync_future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  auto sync_deadline = sync_future.get();
  REQUIRE(sync_deadline.has_value());
  CHECK(*sync_deadline >= before + std::chrono::seconds(300));
  CHECK(*sync_deadline <= after + std::chrono::seconds(300));
  // Async jobs have no client waiting: each worker call gets the backend's own cap instead.
  auto async_future = async_seen.get_future();
  REQUIRE(async_future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK_FALSE(async_future.get().has_value());
}

TEST_CASE("a sync job's client is answered before its result is stored and its lease released",
          "[jobs]") {
  Harness h;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  h.jobs.finish_gate = &gate;  // the store's Finish blocks until the test opens it
  std::promise<void> release;
  release.set_value();
  std::promise<HttpResponse> answered;
  std::string id = h.Submit(std::make_unique<GatedJob>(release.get_future().share()),
                            [&](HttpResponse r) { answered.set_value(std::move(r)); });
  auto reply = answered.get_future();
  // With the result stored before the reply, this would wait for the gate: never.
  REQUIRE(reply.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(reply.get().status == 200);
  auto before = h.jobs.Get(id, "alice");
  REQUIRE(before.ok());
  CHECK(before->state == core::JobState::kRunning);  // a poll now: still running
  // The lease goes first, ahead of the blocked write.
  for (int i = 0; i < 1000 && h.quotas.released == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(h.quotas.released == 1);
  open.set_value();
  CHECK(h.WaitForState(id, /*finished=*/true).state == core::JobState::kCompleted);
}

TEST_CASE("a short sync job writes no progress, a longer one does", "[jobs]") {
  Harness h(/*sync_quiet_period=*/std::chrono::milliseconds(300));
  std::promise<void> release_now;
  release_now.set_value();
  std::promise<void> short_done;
  h.Submit(std::make_unique<ProgressingJob>(release_now.get_future().share()),
           [&](HttpResponse) { short_done.set_value(); });
  REQUIRE(short_done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(h.jobs.progress_writes == 0);

  // Past the quiet period its progress is written as any job's.
  std::promise<void> release;
  std::promise<void> long_done;
  std::string id = h.Submit(std::make_unique<ProgressingJob>(release.get_future().share()),
                            [&](HttpResponse) { long_done.set_value(); });
  for (int i = 0; i < 1000 && h.jobs.progress_writes == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(h.jobs.progress_writes > 0);
  auto running = h.jobs.Get(id, "alice");
  REQUIRE(running.ok());
  CHECK(running->progress_percent > 0);
  release.set_value();
  REQUIRE(long_done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
}

TEST_CASE("WaitIdle stores answered sync jobs' results within the drain time", "[jobs]") {
  Harness h;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  h.jobs.finish_gate = &gate;
  std::promise<void> release;
  release.set_value();
  std::promise<void> answered;
  std::string id = h.Submit(std::make_unique<GatedJob>(release.get_future().share()),
                            [&](HttpResponse) { answered.set_value(); });
  REQUIRE(answered.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  // The write is held: a drain that ends first says it left something behind.
  CHECK_FALSE(h.runner.WaitIdle(std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
  open.set_value();
  CHECK(h.WaitForState(id, /*finished=*/true).state == core::JobState::kCompleted);
}

TEST_CASE("WaitIdle returns once the answered jobs' results are stored", "[jobs]") {
  Harness h;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  h.jobs.finish_gate = &gate;
  std::promise<void> release;
  release.set_value();
  std::promise<void> answered;
  std::string id = h.Submit(std::make_unique<GatedJob>(release.get_future().share()),
                            [&](HttpResponse) { answered.set_value(); });
  REQUIRE(answered.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    open.set_value();
  });
  CHECK(h.runner.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  opener.join();
  auto stored = h.jobs.Get(id, "alice");  // at once: WaitIdle waited for it
  REQUIRE(stored.ok());
  CHECK(stored->state == core::JobState::kCompleted);
}
