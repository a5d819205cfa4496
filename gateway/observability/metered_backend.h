// An InferenceBackend decorator that counts and times every worker call (worker_calls_total,
// worker_call_seconds), whoever makes it: predict jobs, both stages of find-genes, the variant
// workflow's scorer. Wiring it once in main keeps metrics out of the callers.
#pragma once

#include "core/dispatch/inference_backend.h"

namespace dnaserve::gateway {

class GatewayMetrics;

class MeteredBackend final : public core::InferenceBackend {
 public:
  MeteredBackend(core::InferenceBackend* inner, GatewayMetrics* metrics)
      : inner_(inner), metrics_(metrics) {}

  StatusOr<worker::v1::PredictResult> Predict(Task task, const worker::v1::PredictRequest& request,
                                              const core::CallContext& context,
                                              const core::ProgressCallback& on_progress) override;
  StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) override {
    return inner_->ListModels(task);
  }
  StatusOr<worker::v1::GetModelCardResponse> GetModelCard(Task task, const std::string& model,
                                                          const std::string& file) override {
    return inner_->GetModelCard(task, model, file);
  }

 private:
  core::InferenceBackend* inner_;
  GatewayMetrics* metrics_;
};

}  // namespace dnaserve::gateway
