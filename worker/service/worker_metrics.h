// A worker's Prometheus metrics, served by its admin listener (--admin-listen) at /metrics.
// The `model` label is always a model id from this worker's own packages ("unknown" for a
// request naming none of them), so callers cannot grow the label set.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/observability/metrics.h"
#include "worker/batching/batching_model.h"
#include "worker/models/model_registry.h"

namespace dnaserve::worker {

class WorkerMetrics {
 public:
  // `task` labels nothing (one worker serves one task) but is published in worker_info.
  WorkerMetrics(metrics::Registry* registry, const std::string& task);

  // Predict calls: started (in flight until finished) and finished with an error code name
  // ("ok" on success).
  void PredictStarted();
  void PredictFinished(const std::string& model, const std::string& code, double seconds);
  // One weights load (`ok` false: it failed) and how long it took.
  void ModelLoaded(const std::string& model, bool ok, double seconds);
  // The batching queue of a loaded model: its passes are observed from now on and its queue and
  // cumulative statistics are read at scrape time.
  void WatchBatcher(const std::shared_ptr<BatchingModel>& batcher);
  // Hook for BatchingOptions::on_pass.
  void BatchPass(const std::string& model, size_t calls, int64_t rows);
  // Models with weights in memory, read at scrape time.
  void WatchRegistry(const ModelRegistry* registry);

 private:
  metrics::Registry* registry_;
  metrics::Family<metrics::Counter>& predicts_;
  metrics::Family<metrics::Histogram>& predict_seconds_;
  metrics::Gauge& in_flight_;
  metrics::Family<metrics::Counter>& loads_;
  metrics::Family<metrics::Gauge>& load_seconds_;
  metrics::Family<metrics::Histogram>& pass_rows_;
  metrics::Family<metrics::Histogram>& pass_calls_;

  std::mutex mu_;
  std::vector<std::weak_ptr<BatchingModel>> batchers_;
};

}  // namespace dnaserve::worker
