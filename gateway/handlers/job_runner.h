// Runs predict jobs on the executor: calls the worker, renders the response, stores it as the
// job's result, and answers the waiting client for sync calls. While jobs run it refreshes
// their heartbeat (so a poll can tell a live job from one whose gateway died) and renews
// their concurrency leases.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/task.h"
#include "gateway/dispatch/executor.h"
#include "gateway/dispatch/inference_backend.h"
#include "gateway/handlers/services.h"
#include "gateway/jobs/job_store.h"
#include "gateway/validation/predict_request.h"

namespace dnaserve::gateway {

struct PredictJob {
  std::string job_id;
  std::string request_id;
  ValidatedPredict input;
  OutputFormat format = OutputFormat::kJson;
  std::shared_ptr<QuotaLease> lease;
};

class JobRunner {
 public:
  JobRunner(JobStore* jobs, InferenceBackend* backend, Executor* executor,
            std::chrono::seconds heartbeat_interval = std::chrono::seconds(15));
  ~JobRunner();

  // Queues the job. `on_done` (sync calls) receives the final response; async callers pass
  // nullptr and the result is only stored. False when the executor is full: nothing runs.
  bool Submit(PredictJob job, std::function<void(HttpResponse)> on_done);

  void Start();
  // Abandons running jobs (their worker calls are cancelled) and stops the heartbeat.
  void Stop();

 private:
  struct Active {
    std::shared_ptr<QuotaLease> lease;
    double percent = 0;
    std::string message;
    std::atomic<bool> cancelled{false};
  };

  void Run(PredictJob& job, const std::function<void(HttpResponse)>& on_done);
  HttpResponse Execute(PredictJob& job, Active& active);
  void StoreResult(const std::string& job_id, const HttpResponse& response);
  void HeartbeatLoop();

  JobStore* jobs_;
  InferenceBackend* backend_;
  Executor* executor_;
  std::chrono::seconds heartbeat_interval_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Active>> active_;
  std::thread heartbeat_;
};

}  // namespace dnaserve::gateway
