// What the gateway needs from the inference workers. The gRPC implementation lives in
// worker_client.{h,cc}; tests can substitute their own.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "common/status.h"
#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

struct CallContext {
  std::string request_id;
  std::string job_id;
  // Set by the caller to abandon the call (sync client gone, job dropped, gateway shutting down).
  const std::atomic<bool>* cancelled = nullptr;
  // The same signal for calls that block (may be null): a worker call is cancelled the moment it
  // fires instead of at the worker's next progress event.
  Cancellation* cancellation = nullptr;
  // When the caller stops waiting (a sync request's 300 s budget, counted from its arrival);
  // worker calls never outlive it. nullopt: each call gets the backend's own per-call deadline.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

using ProgressCallback = std::function<void(const worker::v1::Progress&)>;

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;
  // Runs one prediction on a worker of the request's task family. Never throws; a worker that
  // is down yields service_unavailable, one that cannot load the model model_loading.
  virtual StatusOr<worker::v1::PredictResult> Predict(Task task,
                                                      const worker::v1::PredictRequest& request,
                                                      const CallContext& context,
                                                      const ProgressCallback& on_progress) = 0;
  // The models of one task family, as its workers list them.
  virtual StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) = 0;
  // One file of a model's card from a worker of its task: `file` empty for MODEL_CARD.md, else
  // a PNG the card embeds (the worker decides which names exist). Backends without cards (test
  // doubles) answer not_found.
  virtual StatusOr<worker::v1::GetModelCardResponse> GetModelCard(Task task,
                                                                   const std::string& model,
                                                                   const std::string& file) {
    (void)task, (void)model, (void)file;
    return NotFound("this backend serves no model cards");
  }
};

}  // namespace dnaserve::core
