// A job is a unit of work the JobRunner runs on the executor: a predict call, a workflow. The
// runner owns everything generic (the job record, heartbeats, lease renewal, storing the final
// response, cancellation on shutdown); a Job only does its work, reports progress and produces
// the final HttpResponse, which is stored verbatim as the job's result.
#pragma once

#include <functional>
#include <string>

#include "gateway/dispatch/inference_backend.h"
#include "gateway/http/http_types.h"

namespace dnaserve::gateway {

// What a running job sees of the runner.
struct JobContext {
  // Ids and the cancellation flag, ready to pass to InferenceBackend::Predict.
  CallContext call;
  // Records progress (0-100 and a short message for polls). Cheap to call often: the runner
  // keeps the latest value for its heartbeat and writes to the job store at most twice a second.
  std::function<void(double percent, const std::string& message)> report_progress;

  bool Cancelled() const { return call.cancelled != nullptr && call.cancelled->load(); }
  void Progress(double percent, const std::string& message) const {
    if (report_progress) report_progress(percent, message);
  }
};

class Job {
 public:
  virtual ~Job() = default;
  // Does the work and returns the final response: the 2xx result or an error envelope. Never
  // throws. Long work checks context.Cancelled() between steps and returns promptly once it is
  // set (the gateway is shutting down); the runner then stores whatever comes back.
  virtual HttpResponse Run(const JobContext& context) = 0;
};

}  // namespace dnaserve::gateway
