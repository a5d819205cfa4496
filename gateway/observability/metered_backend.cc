#include "gateway/observability/metered_backend.h"

#include <chrono>

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

}  // namespace dnaserve::gateway
