#include "worker/models/model_registry.h"

#include <algorithm>

#include "common/log.h"

namespace dnaserve::worker {
namespace {

constexpr int64_t kModelLoadingRetryAfterSeconds = 30;

int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

Status LoadFailed(const std::string& id, const std::string& reason) {
  return Status(ErrorCode::kModelLoading, "model '" + id + "' could not be loaded: " + reason)
      .set_retry_after_seconds(kModelLoadingRetryAfterSeconds);
}

}  // namespace

ModelRegistry::ModelRegistry(std::vector<ModelManifest> manifests, ModelLoader loader,
                             std::chrono::milliseconds load_wait)
    : loader_(std::move(loader)), load_wait_(load_wait) {
  std::sort(manifests.begin(), manifests.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  for (auto& m : manifests) entries_.push_back(std::make_unique<Entry>(std::move(m)));
}

std::vector<const ModelManifest*> ModelRegistry::manifests() const {
  std::vector<const ModelManifest*> out;
  for (const auto& e : entries_) out.push_back(&e->manifest);
  return out;
}

const ModelManifest* ModelRegistry::DefaultManifest() const {
  for (const auto& e : entries_) {
    if (e->manifest.is_default) return &e->manifest;
  }
  return entries_.empty() ? nullptr : &entries_.front()->manifest;
}

ModelRegistry::Entry* ModelRegistry::Find(const std::string& id) const {
  for (const auto& e : entries_) {
    if (e->manifest.id == id) return e.get();
  }
  return nullptr;
}

StatusOr<ModelLease> ModelRegistry::Acquire(const std::string& id) {
  const ModelManifest* fallback = id.empty() ? DefaultManifest() : nullptr;
  Entry* entry = Find(id.empty() ? (fallback ? fallback->id : std::string()) : id);
  if (entry == nullptr) {
    ModelNotFoundDetails details;
    for (const auto& e : entries_) details.available_models.push_back(e->manifest.id);
    if (id.empty())
      return Status(ErrorCode::kModelNotFound, "this worker serves no models", details);
    return Status(ErrorCode::kModelNotFound, "model '" + id + "' is not served by this worker",
                  details);
  }

  const auto started = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(entry->mu);
  if (entry->model) return ModelLease{entry->model, &entry->manifest, false, 0, entry->tokenizer};

  if (entry->loading) {
    // Someone else is loading it: share that load instead of starting a second one.
    entry->loaded_or_failed.wait_for(lock, load_wait_, [&] { return !entry->loading; });
    if (entry->model) {
      return ModelLease{entry->model, &entry->manifest, true, MillisSince(started),
                        entry->tokenizer};
    }
    if (entry->loading) {
      return Status(ErrorCode::kModelLoading,
                    "model '" + entry->manifest.id + "' is still loading; retry shortly")
          .set_retry_after_seconds(kModelLoadingRetryAfterSeconds);
    }
    return LoadFailed(entry->manifest.id, entry->last_error);
  }

  entry->loading = true;
  lock.unlock();
  // The load runs unlocked so that other requests can queue on the condition variable.
  auto tokenizer = LoadTokenizer(entry->manifest);  // cheap next to the weights; fails first
  StatusOr<std::shared_ptr<Model>> loaded =
      tokenizer.ok() ? loader_(entry->manifest) : tokenizer.status();
  const int64_t elapsed = MillisSince(started);
  lock.lock();
  entry->loading = false;
  if (loaded.ok() && loaded.value() == nullptr) loaded = Internal("the loader returned no model");
  if (!loaded.ok()) {
    entry->last_error = loaded.status().message();
    entry->loaded_or_failed.notify_all();
    log::Error(
        "model_load_failed",
        {{"model", entry->manifest.id}, {"error", entry->last_error}, {"load_time_ms", elapsed}});
    return LoadFailed(entry->manifest.id, entry->last_error);
  }
  entry->model = loaded.value();
  entry->tokenizer = std::move(tokenizer).value();
  entry->last_error.clear();
  entry->loaded_or_failed.notify_all();
  log::Info("model_loaded", {{"model", entry->manifest.id}, {"load_time_ms", elapsed}});
  return ModelLease{entry->model, &entry->manifest, true, elapsed, entry->tokenizer};
}

int ModelRegistry::LoadedCount() const {
  int n = 0;
  for (const auto& e : entries_) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->model) ++n;
  }
  return n;
}

}  // namespace dnaserve::worker
