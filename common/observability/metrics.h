// Prometheus metrics: counters, gauges and histograms with labels, rendered in the text
// exposition format (version 0.0.4) that every Prometheus server scrapes.
//
// Why not prometheus-cpp: Debian 12's prometheus-cpp-dev depends on libcurl4-openssl-dev, which
// conflicts with the libcurl4-gnutls-dev that htslib's -dev package needs, so the two cannot be
// installed together. What we need of it is small: the three metric types and the text format.
//
// Usage: a component asks a Registry for a family once (at construction) and keeps the family
// reference; per event it takes the child for its label values (`family.With({"predict", "200"})`,
// a map lookup under a mutex) and updates it with atomics. Children live as long as the registry.
// Label values must come from small closed sets (route patterns, task names, model ids, status
// codes): never client ids, keys, paths with ids, or anything a caller chooses.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dnaserve::metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  void Inc(double amount = 1);  // negative amounts are ignored: counters only go up
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // sorted; +Inf is implicit
  void Observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; last = +Inf
  std::atomic<double> sum_{0};
};

// Bucket bounds for request latencies in seconds: 5 ms .. 300 s (the sync budget).
std::vector<double> LatencyBuckets();
// 1, 2, 4, ... up to and including `max` (batch sizes, rows).
std::vector<double> PowersOfTwo(double max);

template <typename Metric>
class Family {
 public:
  Family(std::vector<std::string> label_names, std::function<std::unique_ptr<Metric>()> make)
      : label_names_(std::move(label_names)), make_(std::move(make)) {}

  // The child for these label values (one per label name), created on first use.
  Metric& With(const LabelValues& values);
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Every child, sorted by label values (for rendering).
  std::vector<std::pair<LabelValues, const Metric*>> Children() const;

 private:
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<Metric>()> make_;
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<Metric>> children_;
};

// Samples computed when the registry is rendered, for values another component already keeps
// (queue lengths, cumulative statistics): the function returns (label values, value) pairs.
using SampleFunction = std::function<std::vector<std::pair<LabelValues, double>>()>;

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names,
                                  std::vector<double> upper_bounds);
  // Counter or gauge samples read at render time. `type` is "counter" or "gauge".
  void AddCallback(const std::string& name, const std::string& help, const std::string& type,
                   std::vector<std::string> label_names, SampleFunction samples);

  // The text exposition format, families in registration order.
  std::string Render() const;

 private:
  struct Entry;
  Entry& Add(const std::string& name, const std::string& help, const std::string& type);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// dnaserve_build_info{version="..."} 1: which build a replica runs.
void AddBuildInfo(Registry* registry);

// The media type of Registry::Render's output.
inline constexpr const char* kTextFormatContentType = "text/plain; version=0.0.4; charset=utf-8";

template <typename Metric>
Metric& Family<Metric>::With(const LabelValues& values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = children_[values];
  if (!slot) slot = make_();
  return *slot;
}

template <typename Metric>
std::vector<std::pair<LabelValues, const Metric*>> Family<Metric>::Children() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<LabelValues, const Metric*>> out;
  for (const auto& [values, metric] : children_) out.emplace_back(values, metric.get());
  return out;
}

}  // namespace dnaserve::metrics
