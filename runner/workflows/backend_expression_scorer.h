// The variant workflow's ExpressionScorer on the gateway's InferenceBackend: one expression-task
// PredictRequest per window (the 9,198 bp sequence with its TSS at 4599, the tissue as the
// description), a record's batch spread over up to `concurrency` calls at once. The expression
// worker batches concurrent calls into shared forward passes, so this is where the workflow's
// throughput comes from (the engine itself is three orders of magnitude faster than the model).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch/executor.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "runner/variant/expression_scorer.h"

namespace dnaserve::runner {

class BackendExpressionScorer : public variant::ExpressionScorer {
 public:
  // `executor` may be null (then every call runs on the caller's thread, one at a time). The
  // caller always takes part in its own batch, so a full executor slows a job down but never
  // deadlocks it. `call` carries the job's ids and cancellation flag to every worker call.
  BackendExpressionScorer(core::InferenceBackend* backend, const core::ModelCatalogue* catalogue,
                          core::Executor* executor, int concurrency, core::CallContext call);

  // The first worker error (service_unavailable, model_loading, ...) fails the batch as is;
  // calls not yet started are not made.
  StatusOr<std::vector<double>> Score(const std::vector<variant::ScoreRequest>& batch,
                                      const std::atomic<bool>* cancelled) override;
  // The expression task's default model, resolved once and then pinned: every window of the job
  // is scored by the model this names (503 while the worker has not reported its models).
  StatusOr<std::string> ModelId() override;
  // One expression call on an all-N window with `description`: the worker's description_match
  // (nullopt when the model's package carries no contexts).
  StatusOr<std::optional<variant::TissueMatch>> MatchTissue(
      std::string_view description, const std::atomic<bool>* cancelled) override;

  int64_t calls() const { return calls_.load(); }

 private:
  core::InferenceBackend* backend_;
  const core::ModelCatalogue* catalogue_;
  core::Executor* executor_;
  int concurrency_;
  core::CallContext call_;
  std::mutex mu_;
  std::optional<std::string> model_;
  std::atomic<int64_t> calls_{0};
};

}  // namespace dnaserve::runner
