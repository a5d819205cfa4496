// The models one worker serves: manifests read at startup, weights loaded lazily on first use and
// kept warm. Concurrent first requests for a model share one load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::worker {

using ModelLoader = std::function<StatusOr<std::shared_ptr<Model>>(const ModelManifest&)>;

struct ModelLease {
  std::shared_ptr<Model> model;
  const ModelManifest* manifest = nullptr;  // owned by the registry, lives as long as it
  bool cold_start = false;                  // the model was not ready when the request arrived
  int64_t load_time_ms = 0;  // time this request spent loading or waiting for the load
  std::shared_ptr<const Tokenizer> tokenizer;  // the package's, loaded with the model
};

class ModelRegistry {
 public:
  // `manifests` are the valid packages of one task (see ScanModelsDir). A request arriving while
  // another loads the same model waits up to `load_wait`, then gets model_loading.
  ModelRegistry(std::vector<ModelManifest> manifests, ModelLoader loader,
                std::chrono::milliseconds load_wait = std::chrono::seconds(120));

  std::vector<const ModelManifest*> manifests() const;
  // The manifest marked is_default; the first by id when none is; nullptr when there are none.
  const ModelManifest* DefaultManifest() const;

  // `id` empty -> the default model. Unknown id -> model_not_found {available_models}. A load
  // that fails -> model_loading (503, Retry-After 30) with the reason; the next request retries.
  // Loading builds the package's tokenizer (LoadTokenizer) before the weights: a tokenizer that
  // cannot be read or cannot encode ACGTN fails the load the same way.
  StatusOr<ModelLease> Acquire(const std::string& id);

  // Models currently loaded (for logs and tests).
  int LoadedCount() const;

 private:
  struct Entry {
    explicit Entry(ModelManifest m) : manifest(std::move(m)) {}
    ModelManifest manifest;
    std::mutex mu;
    std::condition_variable loaded_or_failed;
    std::shared_ptr<Model> model;
    std::shared_ptr<const Tokenizer> tokenizer;  // set together with `model`
    bool loading = false;
    std::string last_error;
  };

  Entry* Find(const std::string& id) const;

  std::vector<std::unique_ptr<Entry>> entries_;  // sorted by id; never resized after construction
  ModelLoader loader_;
  std::chrono::milliseconds load_wait_;
};

}  // namespace dnaserve::worker
