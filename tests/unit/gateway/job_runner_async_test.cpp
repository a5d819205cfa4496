// The JobRunner's path for sync jobs that run without a thread (core/jobs/async_job.h): such a
// job starts on the submitting thread, needs no executor thread, is answered and stored like
// any other, is cancelled at once when its client leaves or the runner stops, and falls back to
// the executor past the limit.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "core/jobs/async_job.h"
#include "gateway/handlers/job_runner.h"
#include "tests/support/counting_quota_store.h"
#include "tests/support/in_memory_job_store.h"
#include "tests/support/job_submissions.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;

namespace {

// Runs without a thread: StartAsync keeps `done`; the test answers it from a thread of its own
// (as gRPC's would), or the job's cancellation does, at once (as TryCancel ends a call).
class CallbackJob : public core::Job, public core::AsyncJob {
 public:
  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    core::JobOutput out;
    out.body = "{\"ran\":\"on a thread\",\"job\":\"" + context.call.job_id + "\"}";
    return out;
  }
  bool RunsAsync() const override { return true; }
  void StartAsync(const core::JobContext& context, Offload, Done done) override {
    state_->done = std::move(done);
    // The callback outlives neither the registration nor the state it holds.
    state_->cancel = context.call.cancellation->OnCancel([state = state_] {
      std::thread([state] { Answer(state, Unavailable("the worker call was cancelled")); })
          .detach();
    });
    state_->started.set_value();
  }
  // Answers from a new thread (unless already answered).
  void AnswerLater(const std::string& body) {
    std::thread([state = state_, body] {
      core::JobOutput out;
      out.body = body;
      Answer(state, std::move(out));
    }).detach();
  }
  std::future<void> Started() { return state_->started.get_future(); }

 private:
  struct State {
    std::mutex mu;
    Done done;
    Cancellation::Registration cancel;
    std::promise<void> started;
  };
  static void Answer(const std::shared_ptr<State>& state, StatusOr<core::JobOutput> result) {
    Done done;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      done = std::move(state->done);
      state->done = nullptr;
      if (!done) return;  // answered already
    }
    state->cancel = Cancellation::Registration();  // before the job's Cancellation can go
    done(std::move(result));                        // may destroy the job
  }
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Holds an executor thread until released.
class HoldingJob : public core::Job {
 public:
  explicit HoldingJob(std::shared_future<void> release) : release_(std::move(release)) {}
  StatusOr<core::JobOutput> Run(const core::JobContext&) override {
    running.set_value();
    release_.wait_for(std::chrono::seconds(30));
    return core::JobOutput{"application/json", "{}"};
  }
  std::promise<void> running;

 private:
  std::shared_future<void> release_;
};

struct Harness {
  core::ManualClock clock;
  core::InMemoryJobStore jobs{&clock};
  testing::CountingQuotaStore quotas;
  core::Executor executor{1, 1};  // one thread, one queued job: easy to fill
  JobRunner runner{&jobs, &executor, std::chrono::seconds(1)};
  int next = 0;

  explicit Harness(int64_t async_limit) {
    runner.set_async_call_limit(async_limit);
    runner.Start();
  }
  ~Harness() {
    runner.Stop();
    executor.Shutdown();
  }

  // Creates the record and submits `work`; returns the job id, or "" when refused.
  std::string Submit(std::unique_ptr<core::Job> work, std::function<void(HttpResponse)> on_done,
                     std::shared_ptr<Cancellation> client_gone = nullptr) {
    std::string id = testing::TestJobId(++next);
    return runner.Submit(
               testing::RecordedSubmission(jobs, quotas, id, "sync", core::JobState::kRunning,
                                           clock.NowMs(), std::move(work), std::move(client_gone)),
               std::move(on_done))
               ? id
               : "";
  }

  core::JobRecord WaitFinished(const std::string& id) {
    for (int i = 0; i < 2000; ++i) {
      auto job = jobs.Get(id, "alice");
      REQUIRE(job.ok());
      if (job->state == core::JobState::kCompleted || job->state == core::JobState::kFailed) {
        return *job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("job " << id << " never finished");
    return {};
  }
};

HttpResponse Await(std::promise<HttpResponse>& answered) {
  auto future = answered.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return future.get();
}

}  // namespace

TEST_CASE("a sync job that runs without a thread needs no free executor thread", "[jobs]") {
  Harness h(/*async_limit=*/4);
  std::promise<void> release;
  auto released = release.get_future().share();
  // The executor's thread is busy and its queue full: a job needing a thread is refused.
  auto holder = std::make_unique<HoldingJob>(released);
  auto holding = holder->running.get_future();
  REQUIRE_FALSE(h.Submit(std::move(holder), [](HttpResponse) {}).empty());
  REQUIRE(holding.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  REQUIRE_FALSE(h.Submit(std::make_unique<HoldingJob>(released), [](HttpResponse) {}).empty());
  REQUIRE(h.Submit(std::make_unique<HoldingJob>(released), [](HttpResponse) {}).empty());

  const int released_before = h.quotas.released;  // the refused job's lease went with it
  auto job = std::make_unique<CallbackJob>();
  CallbackJob* callback = job.get();
  auto started = job->Started();
  std::promise<HttpResponse> answered;
  const std::string id =
      h.Submit(std::move(job), [&](HttpResponse r) { answered.set_value(std::move(r)); });
  REQUIRE_FALSE(id.empty());
  // Started on this thread, before Submit returned.
  REQUIRE(started.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  callback->AnswerLater("{\"from\":\"the callback\"}");

  const HttpResponse response = Await(answered);
  CHECK(response.status == 200);
  CHECK(response.body == "{\"from\":\"the callback\"}");
  CHECK(*response.FindHeader("X-Job-Id") == id);
  const core::JobRecord stored = h.WaitFinished(id);
  CHECK(stored.code == ErrorCode::kOk);
  CHECK(stored.body == response.body);
  for (int i = 0; i < 500 && h.quotas.released < released_before + 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(h.quotas.released == released_before + 1);  // the callback job's: the holders still run
  release.set_value();
}

TEST_CASE("a sync job running without a thread is cancelled at once when its client leaves",
          "[jobs]") {
  Harness h(/*async_limit=*/4);
  auto connection = std::make_shared<Cancellation>();
  auto job = std::make_unique<CallbackJob>();
  auto started = job->Started();
  std::promise<HttpResponse> answered;
  const std::string id = h.Submit(
      std::move(job), [&](HttpResponse r) { answered.set_value(std::move(r)); }, connection);
  REQUIRE(started.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  connection->Cancel();  // what the HTTP server does when the client's connection closes
  const HttpResponse response = Await(answered);
  CHECK(response.status == 503);
  CHECK(response.body.find("closed its connection") != std::string::npos);
  const core::JobRecord stored = h.WaitFinished(id);
  CHECK(stored.code == ErrorCode::kServiceUnavailable);
  CHECK(stored.body.find("closed its connection") != std::string::npos);
}

TEST_CASE("Stop cancels sync jobs running without a thread and WaitIdle sees them end", "[jobs]") {
  Harness h(/*async_limit=*/4);
  auto job = std::make_unique<CallbackJob>();
  auto started = job->Started();
  std::promise<HttpResponse> answered;
  const std::string id =
      h.Submit(std::move(job), [&](HttpResponse r) { answered.set_value(std::move(r)); });
  REQUIRE(started.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(h.runner.counts().running == 1);
  // Still running: not idle.
  CHECK_FALSE(h.runner.WaitIdle(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  h.runner.Stop();
  const HttpResponse response = Await(answered);
  CHECK(response.status == 503);
  CHECK(response.body.find("resubmit") != std::string::npos);
  CHECK(h.WaitFinished(id).code == ErrorCode::kServiceUnavailable);
  CHECK(h.runner.counts().running == 0);
}

TEST_CASE("past the limit of calls without a thread a sync job runs on the executor", "[jobs]") {
  Harness h(/*async_limit=*/0);
  std::promise<HttpResponse> answered;
  const std::string id = h.Submit(std::make_unique<CallbackJob>(),
                                  [&](HttpResponse r) { answered.set_value(std::move(r)); });
  REQUIRE_FALSE(id.empty());
  const HttpResponse response = Await(answered);
  CHECK(response.body.find("on a thread") != std::string::npos);
  CHECK(h.WaitFinished(id).code == ErrorCode::kOk);
}
