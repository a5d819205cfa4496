#include "core/dispatch/catalogue_refresher.h"

#include "common/log.h"

namespace dnaserve::core {

CatalogueRefresher::CatalogueRefresher(InferenceBackend* backend, ModelCatalogue* catalogue,
                                       std::chrono::seconds retry_interval,
                                       std::chrono::seconds refresh_interval)
    : backend_(backend),
      catalogue_(catalogue),
      retry_interval_(retry_interval),
      refresh_interval_(refresh_interval) {}

CatalogueRefresher::~CatalogueRefresher() { Stop(); }

void CatalogueRefresher::Start() { thread_ = std::thread([this] { Loop(); }); }

void CatalogueRefresher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int CatalogueRefresher::RefreshOnce() {
  int known = 0;
  for (Task task : kAllTasks) {
    auto models = backend_->ListModels(task);
    if (models.ok()) {
      bool first = !catalogue_->Known(task);
      catalogue_->SetModels(task, std::move(models).value());
      if (first) {
        log::Info("model_roster_loaded", {{"task", TaskName(task)},
                                          {"models", static_cast<int64_t>(
                                                         catalogue_->Models(task).size())}});
      }
    }
    if (catalogue_->Known(task)) ++known;
  }
  return known;
}

void CatalogueRefresher::Loop() {
  for (;;) {
    int known = RefreshOnce();
    auto wait = known == static_cast<int>(kAllTasks.size()) ? refresh_interval_ : retry_interval_;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
  }
}

}  // namespace dnaserve::core
