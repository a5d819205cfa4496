#include "core/ops/readiness.h"

#include "core/render/json_writer.h"

namespace dnaserve::core {

Readiness::Readiness(JobStore* jobs, const ModelCatalogue* catalogue, std::vector<Task> tasks,
                     std::function<void(bool up)> on_redis_checked)
    : jobs_(jobs),
      catalogue_(catalogue),
      tasks_(std::move(tasks)),
      on_redis_checked_(std::move(on_redis_checked)) {}

observability::AdminResponse Readiness::Check() {
  const bool redis_up = jobs_->Ping().ok();
  if (redis_up) redis_seen_ = true;
  if (on_redis_checked_) on_redis_checked_(redis_up);
  std::vector<Task> waiting;
  for (Task task : tasks_) {
    if (!catalogue_->Known(task)) waiting.push_back(task);
  }

  const char* state = "ready";
  if (draining_) {
    state = "draining";
  } else if (!redis_seen_ || !waiting.empty()) {
    state = "starting";
  }
  JsonWriter w;
  w.StartObject();
  w.Field("status", state);
  w.Field("redis", redis_up ? "up" : "down");
  w.Key("tasks_waiting");
  w.StartArray();
  for (Task task : waiting) w.String(TaskName(task));
  w.EndArray();
  w.EndObject();

  observability::AdminResponse response;
  response.status = std::string_view(state) == "ready" ? 200 : 503;
  response.content_type = "application/json";
  response.body = w.Take();
  return response;
}

}  // namespace dnaserve::core
