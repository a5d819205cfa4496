// Keeps the ModelCatalogue in step with the workers: asks every task family for its models at
// start-up (retrying every few seconds until it answers) and then periodically.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"

namespace dnaserve::core {

class CatalogueRefresher {
 public:
  CatalogueRefresher(InferenceBackend* backend, ModelCatalogue* catalogue,
                     std::chrono::seconds retry_interval = std::chrono::seconds(2),
                     std::chrono::seconds refresh_interval = std::chrono::seconds(60));
  ~CatalogueRefresher();

  void Start();
  void Stop();
  // One pass over all tasks; returns the number of tasks whose roster is known afterwards.
  int RefreshOnce();

 private:
  void Loop();

  InferenceBackend* backend_;
  ModelCatalogue* catalogue_;
  std::chrono::seconds retry_interval_;
  std::chrono::seconds refresh_interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dnaserve::core
