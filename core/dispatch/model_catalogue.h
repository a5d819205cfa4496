// The model roster the gateway publishes and resolves against: built from the workers'
// ListModels answers, refreshed in the background, read by handlers and the OpenAPI builder.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

class ModelCatalogue {
 public:
  // Replaces the roster of one task (after a successful ListModels).
  void SetModels(Task task, std::vector<worker::v1::ModelInfo> models);
  // True once the task's roster has been fetched at least once.
  bool Known(Task task) const;
  std::vector<worker::v1::ModelInfo> Models(Task task) const;
  std::optional<std::string> DefaultModel(Task task) const;

  // `requested` empty/nullopt -> the task's default. Unknown id -> 404 model_not_found with
  // {available_models}; id of another task -> 422 task_not_supported_by_model with
  // {task, supported_tasks}; roster not yet known -> 503 service_unavailable.
  StatusOr<worker::v1::ModelInfo> Resolve(Task task,
                                          const std::optional<std::string>& requested) const;
  // The task whose roster lists `model` (any task); unknown -> 404 model_not_found with every
  // listed model in {available_models}.
  StatusOr<Task> TaskOfModel(const std::string& model) const;

 private:
  mutable std::mutex mu_;
  std::map<Task, std::vector<worker::v1::ModelInfo>> models_;
};

}  // namespace dnaserve::core
