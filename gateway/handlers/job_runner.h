// Runs jobs (core/jobs/job.h) on the executor: stores each one's final response as the job's
// result and hands it to the waiting client for sync calls. A sync job that can run without a
// thread (core/jobs/async_job.h: a predict job on the gRPC backend) is started on the caller's
// thread instead and ends on gRPC's, when the worker answers: no executor hand-off, no thread
// blocked on the call (async_predictor.h says why). While jobs run it refreshes their
// heartbeat (so a poll can tell a live job from one whose gateway died), renews their
// concurrency leases and writes their progress; on Stop it cancels them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/cancellation.h"
#include "core/dispatch/executor.h"
#include "gateway/handlers/after_reply_writes.h"
#include "gateway/handlers/services.h"
#include "core/jobs/async_job.h"
#include "core/jobs/job.h"
#include "core/jobs/job_store.h"

namespace dnaserve::gateway {

class GatewayMetrics;

struct JobSubmission {
  std::string job_id;  // the record already exists in the job store
  std::string task;    // the job record's task, e.g. "promoter" (a metrics label)
  std::string request_id;
  std::shared_ptr<QuotaLease> lease;  // held until the job ends
  std::unique_ptr<core::Job> work;
  // Sync jobs: the client's connection (HttpRequest::connection_closed). When it closes, the job
  // is cancelled (its worker calls at once): nobody is left to read the answer. Async jobs leave
  // it null, since they outlive their submitting connection by design.
  std::shared_ptr<Cancellation> client_gone;
};

class JobRunner {
 public:
  JobRunner(core::JobStore* jobs, core::Executor* executor,
            std::chrono::seconds heartbeat_interval = std::chrono::seconds(15));
  ~JobRunner();  // Stop()

  // Queues the job. `on_done` (sync calls) receives the final response; async callers pass
  // nullptr and the result is only stored. False when the executor is full: nothing runs.
  bool Submit(JobSubmission job, std::function<void(HttpResponse)> on_done);

  // Optional; set before Start. Counts finished and refused jobs and times worker calls.
  void set_metrics(GatewayMetrics* metrics) { metrics_ = metrics; }
  // Optional; set before Start. A sync job's worker calls end this long after it was submitted
  // (the edge stops waiting then), time spent queued for an executor thread included.
  void set_sync_budget(std::chrono::seconds budget) { sync_budget_ = budget; }
  // Optional (tests); set before Start. How long a sync job runs before its progress and
  // heartbeat are written (default 2 s; shorter ones never are: the record says running).
  void set_sync_quiet_period(std::chrono::milliseconds period) { sync_quiet_period_ = period; }
  // Optional; set before Start. At most this many sync jobs run without a thread at once (the
  // executor's thread count is the natural figure: the same number of concurrent worker calls);
  // more wait for an executor thread. 0: every job runs on the executor.
  void set_async_call_limit(int64_t limit) { async_call_limit_ = limit; }

  void Start();
  // Graceful termination: waits until every submitted job (queued or running, sync or async)
  // has ended and the results of answered sync jobs are stored, or `deadline` passes. True when
  // none is left. Results still unstored then are lost (their clients have them).
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

  // Admission refused a client for concurrency: releases, here and now, the leases of its sync
  // jobs that were answered and whose release is still queued. True when there was one.
  // `releases_seen`: lease_releases_done() read before the refused admission.
  bool ReleaseAnsweredLeases(const std::string& client_id, uint64_t releases_seen) {
    return after_reply_.ReleasePendingFor(client_id, releases_seen);
  }
  uint64_t lease_releases_done() const { return after_reply_.releases_done(); }
  AfterReplyWrites::Counts after_reply_counts() { return after_reply_.counts(); }
  // Cancels running jobs (and any that start later) and stops the heartbeat. A job cut short
  // this way is stored as 503 service_unavailable asking the client to resubmit. (A sync job
  // whose client disconnected is cancelled the same way and stored as 503 saying so.) Returns
  // once the jobs running without a thread have ended (at most 10 s): their callbacks use this
  // object and the services it was given.
  void Stop();

  // Jobs submitted and not yet ended: waiting for an executor thread, and running.
  struct Counts {
    int64_t queued = 0;
    int64_t running = 0;
  };
  Counts counts();

 private:
  struct Active {
    std::shared_ptr<QuotaLease> lease;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    bool sync = false;
    // A sync job reported progress during its quiet period: not written yet (guarded by mu_).
    bool progress_unwritten = false;
    double percent = 0;
    std::string message;
    Cancellation cancellation;  // shutdown, or the sync client went away
    std::atomic<bool> client_gone{false};
  };

  // One job from its start to its end, wherever it ends (an executor thread, gRPC's thread).
  struct Running {
    JobSubmission job;
    std::function<void(HttpResponse)> on_done;  // sync jobs
    std::shared_ptr<Active> active;
    Cancellation::Registration client_gone;  // destroyed before `job` (holds its Cancellation)
    core::JobContext context;
    std::chrono::steady_clock::time_point last_write;  // of progress
  };
  // Starts a sync job without a thread when it can (see the class comment). False: nothing
  // was done, `job` is untouched.
  bool StartWithoutThread(JobSubmission& job, const std::function<void(HttpResponse)>& on_done,
                          std::chrono::steady_clock::time_point submitted);
  // Registers the job as running and builds its context.
  std::shared_ptr<Running> Begin(JobSubmission job, std::function<void(HttpResponse)> on_done,
                                 std::chrono::steady_clock::time_point submitted);
  // Answers a sync client, stores the result (after the reply for sync jobs).
  void End(Running& running, StatusOr<core::JobOutput> result);
  // A submitted job has ended (or was refused).
  void Ended();
  void StoreResult(const std::string& job_id, const std::string& request_id,
                   const StatusOr<core::JobOutput>& result);
  // Whether the heartbeat and progress writes concern this job yet (see kSyncQuietPeriod).
  bool Visible(const Active& active, std::chrono::steady_clock::time_point now) const;
  void HeartbeatLoop();

  core::JobStore* jobs_;
  core::Executor* executor_;
  std::chrono::seconds heartbeat_interval_;

  GatewayMetrics* metrics_ = nullptr;
  std::optional<std::chrono::seconds> sync_budget_;
  std::chrono::milliseconds sync_quiet_period_;

  std::mutex mu_;
  std::condition_variable cv_;       // heartbeat: stop
  std::condition_variable idle_cv_;  // WaitIdle: a job ended
  bool stopping_ = false;
  int64_t pending_ = 0;  // submitted and not yet ended (queued + running)
  int64_t async_calls_ = 0;  // of those, running without a thread
  int64_t async_call_limit_ = 0;
  std::map<std::string, std::shared_ptr<Active>> active_;
  std::thread heartbeat_;
  // Declared last: destroyed first, flushing writes that still use jobs_.
  AfterReplyWrites after_reply_;
};

}  // namespace dnaserve::gateway
