// A Job that can also run without a thread of its own: it starts its work and reports the
// result through a callback (see core/dispatch/async_predictor.h for why). Whoever runs jobs
// asks for this interface with dynamic_cast and falls back to Job::Run on a thread when a job
// lacks it or cannot run this way (RunsAsync is false).
#pragma once

#include <functional>

#include "common/status.h"
#include "core/jobs/job.h"

namespace dnaserve::core {

class AsyncJob {
 public:
  using Done = std::function<void(StatusOr<JobOutput>)>;
  // Runs work too heavy for the thread the job's completion arrives on (a thread shared by
  // every call in flight), e.g. on an executor thread.
  using Offload = std::function<void(std::function<void()>)>;
  virtual ~AsyncJob() = default;
  // False when this job cannot run without a thread (e.g. its backend has no asynchronous call).
  virtual bool RunsAsync() const = 0;
  // REQUIRES: RunsAsync(). Starts the work; `done` runs exactly once, on this thread or another,
  // with what Run would have returned. `context` and this job must outlive that call (`done`
  // may destroy them). Heavy steps go through `offload`. Never throws.
  virtual void StartAsync(const JobContext& context, Offload offload, Done done) = 0;
};

}  // namespace dnaserve::core
