#include "worker/service/worker_metrics.h"

namespace dnaserve::worker {
namespace {

using Samples = std::vector<std::pair<metrics::LabelValues, double>>;

}  // namespace

WorkerMetrics::WorkerMetrics(metrics::Registry* registry, const std::string& task)
    : registry_(registry),
      predicts_(registry->AddCounter("dnaserve_worker_predict_requests_total",
                                     "Predict calls finished, by model and outcome code",
                                     {"model", "code"})),
      predict_seconds_(registry->AddHistogram(
          "dnaserve_worker_predict_duration_seconds",
          "Predict call duration from arrival to result, including model loading",
          {"model"}, metrics::LatencyBuckets())),
      in_flight_(registry->AddGauge("dnaserve_worker_predict_in_flight",
                                    "Predict calls being served now")
                     .With({})),
      loads_(registry->AddCounter("dnaserve_worker_model_loads_total",
                                  "Weights loads, by model and result (ok or failed)",
                                  {"model", "result"})),
      load_seconds_(registry->AddGauge("dnaserve_worker_model_load_seconds",
                                       "Duration of the latest weights load of each model",
                                       {"model"})),
      pass_rows_(registry->AddHistogram(
          "dnaserve_worker_batch_rows",
          "Rows (model input windows) per forward pass of the batching queue", {"model"},
          metrics::PowersOfTwo(1024))),
      pass_calls_(registry->AddHistogram(
          "dnaserve_worker_batch_calls",
          "Calls (from concurrent requests) stacked into one forward pass", {"model"},
          metrics::PowersOfTwo(256))) {
  registry->AddGauge("dnaserve_worker_info", "Always 1; the task label names the worker's task",
                     {"task"})
      .With({task})
      .Set(1);
  auto batch_samples = [this](auto read) {
    return [this, read] {
      Samples out;
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& weak : batchers_) {
        if (auto batcher = weak.lock()) {
          out.push_back({{batcher->options().model_id}, read(batcher->stats())});
        }
      }
      return out;
    };
  };
  registry->AddCallback(
      "dnaserve_worker_batch_queue_calls", "Calls waiting in a model's batching queue", "gauge",
      {"model"}, batch_samples([](const BatchingStats& s) { return double(s.queued_calls); }));
  registry->AddCallback(
      "dnaserve_worker_batch_queue_bases", "Bases waiting in a model's batching queue", "gauge",
      {"model"}, batch_samples([](const BatchingStats& s) { return double(s.queued_bases); }));
  registry->AddCallback(
      "dnaserve_worker_batch_admitted_requests",
      "Requests admitted to a model's batching queue and not yet finished", "gauge", {"model"},
      batch_samples([](const BatchingStats& s) { return double(s.admitted_requests); }));
  registry->AddCallback(
      "dnaserve_worker_batch_admitted_bases",
      "Bases held by the admitted requests' seats (refusals start at --queue-max-bases)",
      "gauge", {"model"},
      batch_samples([](const BatchingStats& s) { return double(s.admitted_bases); }));
  registry->AddCallback(
      "dnaserve_worker_batch_refused_total",
      "Requests refused with 503 at their first forward pass because the model's seats were taken",
      "counter", {"model"}, batch_samples([](const BatchingStats& s) { return double(s.refused); }));
  registry->AddCallback(
      "dnaserve_worker_batch_direct_passes_total",
      "Forward passes of a lone call that ran at once on its request's thread, never queued",
      "counter", {"model"},
      batch_samples([](const BatchingStats& s) { return double(s.direct_passes); }));
  registry->AddCallback(
      "dnaserve_worker_batch_withdrawn_total",
      "Calls withdrawn from the batching queue by cancelled requests before they ran", "counter",
      {"model"}, batch_samples([](const BatchingStats& s) { return double(s.withdrawn); }));
}

void WorkerMetrics::PredictStarted() { in_flight_.Add(1); }

void WorkerMetrics::PredictFinished(const std::string& model, const std::string& code,
                                    double seconds) {
  in_flight_.Add(-1);
  predicts_.With({model, code}).Inc();
  predict_seconds_.With({model}).Observe(seconds);
}

void WorkerMetrics::ModelLoaded(const std::string& model, bool ok, double seconds) {
  loads_.With({model, ok ? "ok" : "failed"}).Inc();
  if (ok) load_seconds_.With({model}).Set(seconds);
}

void WorkerMetrics::WatchBatcher(const std::shared_ptr<BatchingModel>& batcher) {
  std::lock_guard<std::mutex> lock(mu_);
  batchers_.push_back(batcher);
}

void WorkerMetrics::BatchPass(const std::string& model, size_t calls, int64_t rows) {
  pass_rows_.With({model}).Observe(static_cast<double>(rows));
  pass_calls_.With({model}).Observe(static_cast<double>(calls));
}

void WorkerMetrics::WatchRegistry(const ModelRegistry* models) {
  registry_->AddCallback("dnaserve_worker_models_loaded", "Models whose weights are in memory",
                         "gauge", {}, [models] {
                           return Samples{{{}, static_cast<double>(models->LoadedCount())}};
                         });
}

}  // namespace dnaserve::worker
