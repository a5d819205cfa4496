// A prediction that holds no thread while the worker computes: started on the caller's thread,
// finished by a callback on one of gRPC's threads when the worker's reply arrives.
//
// Why: a sync predict used to be handed from the HTTP reactor to an executor thread that then
// sat blocked in a gRPC call, and every hand-off is a wake-up (a futex system call, often two)
// and a context switch on each side. An InferenceBackend that also implements this interface
// lets the gateway start the call from the reactor and answer from gRPC's completion instead
// (gateway/handlers/job_runner.cc). Backends without it (test doubles) keep the blocking path.
#pragma once

#include <functional>

#include "common/status.h"
#include "common/task.h"
#include "core/dispatch/inference_backend.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

class AsyncPredictor {
 public:
  using Done = std::function<void(StatusOr<worker::v1::PredictResult>)>;
  virtual ~AsyncPredictor() = default;
  // The same call as InferenceBackend::Predict (routing, retries, deadlines, cancellation and
  // errors alike), but returns at once. `done` runs exactly once: on a gRPC thread, or on this
  // thread when the call ends before it starts (no worker configured, cancelled, budget spent).
  // `request`, the context's cancellation objects and `on_progress`'s captures must outlive
  // `done`'s call. `done` must not block for long: it runs on a thread gRPC shares.
  virtual void PredictAsync(Task task, const worker::v1::PredictRequest& request,
                            const CallContext& context, ProgressCallback on_progress,
                            Done done) = 0;
  // False for a decorator whose inner backend cannot call asynchronously (then neither can it).
  virtual bool SupportsAsync() const { return true; }
};

// `backend` as an AsyncPredictor, or null when it cannot call without blocking a thread.
inline AsyncPredictor* AsyncPredictorOf(InferenceBackend* backend) {
  auto* async = dynamic_cast<AsyncPredictor*>(backend);
  return async != nullptr && async->SupportsAsync() ? async : nullptr;
}

}  // namespace dnaserve::core
