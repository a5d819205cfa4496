// A job is a unit of work run by a gateway (a sync prediction) or a runner (everything queued):
// a predict call, a workflow. Whoever runs it owns everything generic (the job record,
// heartbeats, lease renewal, storing the result, cancellation on shutdown); a Job only does its
// work, reports progress and produces its result: the output, or the Status it failed with.
// Neither knows HTTP: the gateway maps a Status to its response in one place.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "core/dispatch/inference_backend.h"

namespace dnaserve::core {

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

// A finished job's output: the rendered result and its media type.
struct JobOutput {
  std::string content_type = "application/json";
  std::string body;
};

class Job {
 public:
  virtual ~Job() = default;
  // Does the work and returns its output or the status it failed with. Never throws. Long work
  // checks context.Cancelled() between steps and returns promptly once it is set (the process
  // is shutting down, or a sync client left); whoever runs it stores whatever comes back.
  virtual StatusOr<JobOutput> Run(const JobContext& context) = 0;
};

}  // namespace dnaserve::core
