#include "gateway/handlers/job_runner.h"

#include <algorithm>
#include <utility>
#include <vector>
#include <thread>

#include "common/log.h"
#include "gateway/http/error_response.h"
#include "core/jobs/job_store_common.h"
#include "core/jobs/run_guarded.h"
#include "gateway/observability/gateway_metrics.h"

namespace dnaserve::gateway {
namespace {

// Progress is written at most this often; polls need no finer grain.
constexpr std::chrono::milliseconds kProgressWriteInterval(500);
// A sync job is created as running at admission; most end well within this, and writing their
// progress or heartbeat would only cost Redis round trips nobody reads. Past it, a sync job is
// written like any other (a poll sees its progress; its heartbeat keeps it from being declared
// lost, which takes kJobHeartbeatTimeoutSeconds).
constexpr std::chrono::seconds kSyncQuietPeriod(2);
// How often the heartbeat thread looks for such jobs whose quiet period has ended.
constexpr std::chrono::milliseconds kQuietCheck(250);

Status StoppedWhileRunning() {
  return Status(ErrorCode::kServiceUnavailable,
                "the service stopped while this job was running; resubmit the request")
      .set_retry_after_seconds(5);
}

// A sync job's reply. A success's body is not a copy: it is the result's own buffer, through a
// shared_ptr aliasing `stored` (the after-reply store holds `stored` too), so the client is
// written from, and the store then gzips, one buffer, freed when both are done with it. A copy
// here was the largest part of the gateway's peak memory for a large answer (BENCHMARKS.md J).
HttpResponse SyncReply(const std::shared_ptr<const StatusOr<core::JobOutput>>& stored,
                       const std::string& request_id) {
  if (!stored->ok()) return ErrorResponse(stored->status(), request_id);
  HttpResponse response;
  response.content_type = (*stored)->content_type;
  response.body =
      ResponseBody::Shared(std::shared_ptr<const std::string>(stored, &(*stored)->body));
  return response;
}

}  // namespace

JobRunner::JobRunner(core::JobStore* jobs, core::Executor* executor, std::chrono::seconds heartbeat_interval)
    : jobs_(jobs),
      executor_(executor),
      heartbeat_interval_(heartbeat_interval),
      sync_quiet_period_(kSyncQuietPeriod) {}

JobRunner::~JobRunner() { Stop(); }

void JobRunner::Start() {
  after_reply_.Start();
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
}

void JobRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [id, active] : active_) active->cancellation.Cancel();
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  // Jobs running without a thread end on gRPC's thread, in code that uses this object and what
  // the caller passed in (metrics, the backend): wait for them. Cancelled above, a call ends
  // within a round trip to its worker.
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return async_calls_ == 0; });
}

bool JobRunner::Submit(JobSubmission job, std::function<void(HttpResponse)> on_done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  const auto submitted = std::chrono::steady_clock::now();
  if (on_done && StartWithoutThread(job, on_done, submitted)) return true;
  const std::string task = job.task;
  auto shared_job = std::make_shared<JobSubmission>(std::move(job));
  const bool queued = executor_->TrySubmit([this, shared_job, on_done = std::move(on_done),
                                            submitted] {
    auto running = Begin(std::move(*shared_job), on_done, submitted);
    End(*running, core::RunGuarded(running->job.job_id, [&running] {
      return running->job.work->Run(running->context);
    }));
    Ended();
  });
  if (!queued) {
    Ended();
    if (metrics_) metrics_->JobRefused(task);
  }
  return queued;
}

bool JobRunner::StartWithoutThread(JobSubmission& job,
                                   const std::function<void(HttpResponse)>& on_done,
                                   std::chrono::steady_clock::time_point submitted) {
  auto* async = dynamic_cast<core::AsyncJob*>(job.work.get());
  if (async == nullptr || !async->RunsAsync()) return false;
  {
    // Bounded like the executor's threads: past the limit, calls wait for a thread as before.
    std::lock_guard<std::mutex> lock(mu_);
    if (async_calls_ >= async_call_limit_) return false;
    ++async_calls_;
  }
  std::shared_ptr<Running> running = Begin(std::move(job), on_done, submitted);
  // `running` (the job, its context) lives until the callback has run End.
  auto offload = [this](std::function<void()> work) {
    if (!executor_->TrySubmit(work)) work();  // the executor is full: here, late but answered
  };
  async->StartAsync(running->context, offload, [this, running](StatusOr<core::JobOutput> result) {
    End(*running, std::move(result));
    std::lock_guard<std::mutex> lock(mu_);
    --pending_;
    // WaitIdle waits for pending_, Stop for async_calls_.
    if (--async_calls_ == 0 || pending_ == 0) idle_cv_.notify_all();
  });
  return true;
}

void JobRunner::Ended() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--pending_ == 0) idle_cv_.notify_all();
}

bool JobRunner::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  bool jobs_ended;
  {
    std::unique_lock<std::mutex> lock(mu_);
    jobs_ended = idle_cv_.wait_until(lock, deadline, [this] { return pending_ == 0; });
  }
  // Then the answered jobs' stored results, within what is left of the drain time.
  const bool written = after_reply_.Flush(deadline);
  return jobs_ended && written;
}

bool JobRunner::Visible(const Active& active, std::chrono::steady_clock::time_point now) const {
  return !active.sync || now - active.started >= sync_quiet_period_;
}

JobRunner::Counts JobRunner::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.running = static_cast<int64_t>(active_.size());
  c.queued = pending_ - c.running;
  return c;
}

std::shared_ptr<JobRunner::Running> JobRunner::Begin(
    JobSubmission job, std::function<void(HttpResponse)> on_done,
    std::chrono::steady_clock::time_point submitted) {
  auto running = std::make_shared<Running>();
  running->job = std::move(job);
  running->on_done = std::move(on_done);
  JobSubmission& submission = running->job;
  auto active = std::make_shared<Active>();
  running->active = active;
  active->lease = submission.lease;
  active->sync = static_cast<bool>(running->on_done);
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_[submission.job_id] = active;
    if (stopping_) active->cancellation.Cancel();  // queued behind the shutdown: no work
  }
  // Registered before the work starts: a client that left while the job was queued cancels it
  // here, at once.
  if (submission.client_gone) {
    running->client_gone = submission.client_gone->OnCancel([active] {
      active->client_gone = true;
      active->cancellation.Cancel();
    });
  }
  // A sync job's record was created running; an async one moves there now.
  if (!active->sync) jobs_->UpdateProgress(submission.job_id, 0, "running");

  core::JobContext& context = running->context;
  context.call.request_id = submission.request_id;
  context.call.job_id = submission.job_id;
  context.call.cancelled = active->cancellation.flag();
  context.call.cancellation = &active->cancellation;
  if (running->on_done && sync_budget_) context.call.deadline = submitted + *sync_budget_;
  running->last_write = std::chrono::steady_clock::now() - kProgressWriteInterval;
  Running* r = running.get();  // the context is a member of *r: it cannot outlive it
  context.report_progress = [this, r](double percent, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      r->active->percent = percent;
      r->active->message = message;
    }
    auto now = std::chrono::steady_clock::now();
    if (!Visible(*r->active, now)) {
      std::lock_guard<std::mutex> lock(mu_);
      r->active->progress_unwritten = true;  // the heartbeat writes it once the quiet period ends
      return;
    }
    if (now - r->last_write >= kProgressWriteInterval) {
      r->last_write = now;
      jobs_->UpdateProgress(r->job.job_id, percent, message);
    }
  };
  return running;
}

void JobRunner::End(Running& running, StatusOr<core::JobOutput> result) {
  JobSubmission& job = running.job;
  const std::shared_ptr<Active>& active = running.active;
  const std::function<void(HttpResponse)>& on_done = running.on_done;
  running.client_gone = Cancellation::Registration();  // the work is over: nothing to cancel
  // A job cut short by the shutdown ends in a server-side error of its own (its worker call
  // was cancelled); the client is told plainly to resubmit. A request error it reached is a
  // genuine answer and stays.
  if (active->cancellation.cancelled() && !result.ok() && IsServerSide(result.status().code())) {
    const bool client_left = active->client_gone.load();
    result = client_left ? core::ClientWentAway() : StoppedWhileRunning();
    if (client_left) {
      log::Info("job_cancelled_client_gone", {{"job_id", job.job_id},
                                              {"request_id", job.request_id},
                                              {"task", job.task}});
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_.erase(job.job_id);
    active->lease.reset();
  }
  job.work.reset();
  if (!on_done) {
    StoreResult(job.job_id, job.request_id, result);
    if (metrics_) metrics_->JobFinished(job.task, "async", result.status().code());
    job.lease.reset();  // the last holder: the concurrency slot is free
    return;
  }
  // A sync job: the client hears first, with no Redis call in between. Its lease is released
  // on the writer's thread, ahead of any queued write (a client that asks again at once must
  // find its slot free; an admission refused for concurrency releases it itself), and then its
  // result is stored, off this thread: gzip and the Finish script cost the client nothing.
  // Immutable from here: the reply and the after-reply store read it, maybe at once.
  auto stored = std::make_shared<const StatusOr<core::JobOutput>>(std::move(result));
  HttpResponse response = SyncReply(stored, job.request_id);
  response.SetHeader("X-Job-Id", job.job_id);
  if (metrics_) metrics_->JobFinished(job.task, "sync", stored->status().code());
  // Handed over before the reply: from now on an admission refused for concurrency can find it.
  after_reply_.ReleaseLease(std::move(job.lease));
  on_done(std::move(response));
  after_reply_.Write([this, job_id = job.job_id, request_id = job.request_id,
                      stored = std::move(stored)] { StoreResult(job_id, request_id, *stored); });
}

void JobRunner::StoreResult(const std::string& job_id, const std::string& request_id,
                            const StatusOr<core::JobOutput>& result) {
  // A Redis restart must not lose a finished job: retry with backoff for ~10 s.
  const std::chrono::milliseconds backoff[] = {std::chrono::milliseconds(0),
                                               std::chrono::milliseconds(200),
                                               std::chrono::milliseconds(1000),
                                               std::chrono::milliseconds(3000),
                                               std::chrono::milliseconds(6000)};
  Status status;
  for (auto delay : backoff) {
    std::this_thread::sleep_for(delay);
    status = result.ok()
                 ? jobs_->Finish(job_id, ErrorCode::kOk, result->content_type, result->body)
                 : jobs_->Fail(job_id, result.status(), request_id);
    if (status.ok()) return;
  }
  log::Error("job_result_not_stored", {{"job_id", job_id}, {"error", status.ToString()}});
}

void JobRunner::HeartbeatLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto next_beat = std::chrono::steady_clock::now() + heartbeat_interval_;
  while (!stopping_) {
    // Woken often enough to write, soon after it passes its quiet period, the progress a sync
    // job reported before (an MCP client watching it is waiting for that); a beat itself comes
    // every heartbeat_interval_.
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(heartbeat_interval_,
                                                                        kQuietCheck),
                 [this] { return stopping_; });
    if (stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool beat = now >= next_beat;
    if (beat) next_beat = now + heartbeat_interval_;
    std::vector<std::pair<std::string, std::shared_ptr<Active>>> due;
    for (auto& [job_id, active] : active_) {
      if (!Visible(*active, now)) continue;  // a short sync job: its record says running
      if (beat || active->progress_unwritten) {
        active->progress_unwritten = false;
        due.emplace_back(job_id, active);
      }
    }
    lock.unlock();
    for (auto& [job_id, active] : due) {
      double percent;
      std::string message;
      std::shared_ptr<QuotaLease> lease;
      {
        std::lock_guard<std::mutex> guard(mu_);
        percent = active->percent;
        message = active->message.empty() ? "running" : active->message;
        lease = active->lease;
      }
      jobs_->UpdateProgress(job_id, percent, message);
      if (beat && lease) lease->Renew(core::kLeaseTtlMs);
    }
    lock.lock();
  }
}

}  // namespace dnaserve::gateway
