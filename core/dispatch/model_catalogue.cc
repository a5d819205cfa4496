#include "core/dispatch/model_catalogue.h"

namespace dnaserve::core {

void ModelCatalogue::SetModels(Task task, std::vector<worker::v1::ModelInfo> models) {
  std::lock_guard<std::mutex> lock(mu_);
  models_[task] = std::move(models);
}

bool ModelCatalogue::Known(Task task) const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.count(task) > 0;
}

std::vector<worker::v1::ModelInfo> ModelCatalogue::Models(Task task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(task);
  return it == models_.end() ? std::vector<worker::v1::ModelInfo>{} : it->second;
}

std::optional<std::string> ModelCatalogue::DefaultModel(Task task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(task);
  if (it == models_.end()) return std::nullopt;
  for (const auto& m : it->second) {
    if (m.is_default()) return m.id();
  }
  if (!it->second.empty()) return it->second.front().id();
  return std::nullopt;
}

StatusOr<worker::v1::ModelInfo> ModelCatalogue::Resolve(
    Task task, const std::optional<std::string>& requested) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(task);
  if (it == models_.end() || it->second.empty()) {
    return Status(ErrorCode::kServiceUnavailable,
                  "the " + std::string(TaskName(task)) +
                      " models are not available yet; retry shortly")
        .set_retry_after_seconds(5);
  }
  const auto& roster = it->second;
  if (!requested || requested->empty()) {
    for (const auto& m : roster) {
      if (m.is_default()) return m;
    }
    return roster.front();
  }
  for (const auto& m : roster) {
    if (m.id() == *requested) return m;
  }
  // Known under another task?
  TaskNotSupportedDetails other;
  for (const auto& [other_task, other_roster] : models_) {
    for (const auto& m : other_roster) {
      if (m.id() == *requested) other.supported_tasks.emplace_back(TaskName(other_task));
    }
  }
  if (!other.supported_tasks.empty()) {
    other.task = std::string(TaskName(task));
    return Status(ErrorCode::kTaskNotSupportedByModel,
                  "model '" + *requested + "' does not support the " + other.task + " task",
                  std::move(other));
  }
  ModelNotFoundDetails missing;
  for (const auto& m : roster) missing.available_models.push_back(m.id());
  return Status(ErrorCode::kModelNotFound,
                "model '" + *requested + "' is not served for the " +
                    std::string(TaskName(task)) + " task",
                std::move(missing));
}

StatusOr<Task> ModelCatalogue::TaskOfModel(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  ModelNotFoundDetails missing;
  for (const auto& [task, roster] : models_) {
    for (const auto& m : roster) {
      if (m.id() == model) return task;
      missing.available_models.push_back(m.id());
    }
  }
  return Status(ErrorCode::kModelNotFound, "no model '" + model + "' is served",
                std::move(missing));
}

}  // namespace dnaserve::core
