#include "gateway/observability/metered_backend.h"

#include <chrono>
#include <utility>

#include "gateway/observability/gateway_metrics.h"

namespace dnaserve::gateway {

StatusOr<worker::v1::PredictResult> MeteredBackend::Predict(
    Task task, const worker::v1::PredictRequest& request, const core::CallContext& context,
    const core::ProgressCallback& on_progress) {
  const auto started = std::chrono::steady_clock::now();
  auto result = inner_->Predict(task, request, context, on_progress);
  metrics_->WorkerCall(
      std::string(TaskName(task)),
      result.ok() ? "ok" : std::string(ErrorCodeName(result.status().code())),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return result;
}

void MeteredBackend::PredictAsync(Task task, const worker::v1::PredictRequest& request,
                                  const core::CallContext& context,
                                  core::ProgressCallback on_progress, Done done) {
  const auto started = std::chrono::steady_clock::now();
  core::AsyncPredictorOf(inner_)->PredictAsync(
      task, request, context, std::move(on_progress),
      [this, task, started, done = std::move(done)](StatusOr<worker::v1::PredictResult> result) {
        metrics_->WorkerCall(
            std::string(TaskName(task)),
            result.ok() ? "ok" : std::string(ErrorCodeName(result.status().code())),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        done(std::move(result));
      });
}

}  // namespace dnaserve::gateway
