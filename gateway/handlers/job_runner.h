// Runs jobs (gateway/jobs/job.h) on the executor: stores each one's final response as the job's
// result and hands it to the waiting client for sync calls. While jobs run it refreshes their
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
#include <string>
#include <thread>

#include "gateway/dispatch/executor.h"
#include "gateway/handlers/services.h"
#include "gateway/jobs/job.h"
#include "gateway/jobs/job_store.h"

namespace dnaserve::gateway {

struct JobSubmission {
  std::string job_id;  // the record already exists in the job store
  std::string request_id;
  std::shared_ptr<QuotaLease> lease;  // held until the job ends
  std::unique_ptr<Job> work;
};

class JobRunner {
 public:
  JobRunner(JobStore* jobs, Executor* executor,
            std::chrono::seconds heartbeat_interval = std::chrono::seconds(15));
  ~JobRunner();

  // Queues the job. `on_done` (sync calls) receives the final response; async callers pass
  // nullptr and the result is only stored. False when the executor is full: nothing runs.
  bool Submit(JobSubmission job, std::function<void(HttpResponse)> on_done);

  void Start();
  // Cancels running jobs (and any that start later) and stops the heartbeat. A job cut short
  // this way is stored as 503 service_unavailable asking the client to resubmit.
  void Stop();

 private:
  struct Active {
    std::shared_ptr<QuotaLease> lease;
    double percent = 0;
    std::string message;
    std::atomic<bool> cancelled{false};
  };

  void Run(JobSubmission& job, const std::function<void(HttpResponse)>& on_done);
  HttpResponse RunGuarded(JobSubmission& job, const JobContext& context);
  void StoreResult(const std::string& job_id, const HttpResponse& response);
  void HeartbeatLoop();

  JobStore* jobs_;
  Executor* executor_;
  std::chrono::seconds heartbeat_interval_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Active>> active_;
  std::thread heartbeat_;
};

}  // namespace dnaserve::gateway
