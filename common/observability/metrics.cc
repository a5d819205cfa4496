#include "common/observability/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

#include "common/version.h"

namespace dnaserve::metrics {
namespace {

void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
std::string Escape(const std::string& s, bool quotes) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// `{a="x",b="y"}` (empty when there are no labels); `extra` is appended last (histogram "le").
std::string LabelSet(const std::vector<std::string>& names, const LabelValues& values,
                     const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + Escape(i < values.size() ? values[i] : "", true) + "\"";
  }
  if (!extra.empty()) out += (out.empty() ? "{" : ",") + extra;
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

void Counter::Inc(double amount) {
  if (amount > 0) AtomicAdd(value_, amount);
}

void Gauge::Add(double amount) { AtomicAdd(value_, amount); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<uint64_t>[upper_bounds_.size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) counts_[i] = 0;
}

void Histogram::Observe(double value) {
  // Buckets are "less than or equal": the first bound >= value.
  size_t bucket = static_cast<size_t>(
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, value);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative_counts.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

std::vector<double> PowersOfTwo(double max) {
  std::vector<double> out;
  for (double b = 1; b <= max; b *= 2) out.push_back(b);
  return out;
}

struct Registry::Entry {
  std::string name;
  std::string help;
  std::string type;
  std::variant<std::monostate, std::unique_ptr<Family<Counter>>, std::unique_ptr<Family<Gauge>>,
               std::unique_ptr<Family<Histogram>>>
      family;
  std::vector<std::string> callback_labels;
  SampleFunction callback;
};

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Entry& Registry::Add(const std::string& name, const std::string& help,
                               const std::string& type) {
  std::lock_guard<std::mutex> lock(mu_);
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->help = help;
  entry->type = type;
  entries_.push_back(std::move(entry));
  return *entries_.back();
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  auto family = std::make_unique<Family<Counter>>(std::move(label_names),
                                                  [] { return std::make_unique<Counter>(); });
  auto& ref = *family;
  Add(name, help, "counter").family = std::move(family);
  return ref;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  auto family = std::make_unique<Family<Gauge>>(std::move(label_names),
                                                [] { return std::make_unique<Gauge>(); });
  auto& ref = *family;
  Add(name, help, "gauge").family = std::move(family);
  return ref;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> upper_bounds) {
  std::sort(upper_bounds.begin(), upper_bounds.end());
  upper_bounds.erase(std::unique(upper_bounds.begin(), upper_bounds.end()), upper_bounds.end());
  auto family = std::make_unique<Family<Histogram>>(
      std::move(label_names),
      [upper_bounds] { return std::make_unique<Histogram>(upper_bounds); });
  auto& ref = *family;
  Add(name, help, "histogram").family = std::move(family);
  return ref;
}

void Registry::AddCallback(const std::string& name, const std::string& help,
                           const std::string& type, std::vector<std::string> label_names,
                           SampleFunction samples) {
  Entry& entry = Add(name, help, type == "counter" ? "counter" : "gauge");
  entry.callback_labels = std::move(label_names);
  entry.callback = std::move(samples);
}

std::string Registry::Render() const {
  std::vector<const Entry*> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries_) entries.push_back(e.get());
  }
  std::string out;
  for (const Entry* e : entries) {
    out += "# HELP " + e->name + " " + Escape(e->help, false) + "\n";
    out += "# TYPE " + e->name + " " + e->type + "\n";
    if (e->callback) {
      for (const auto& [values, value] : e->callback()) {
        out += e->name + LabelSet(e->callback_labels, values) + " " + FormatValue(value) + "\n";
      }
    } else if (auto* counters = std::get_if<std::unique_ptr<Family<Counter>>>(&e->family)) {
      for (const auto& [values, c] : (*counters)->Children()) {
        out += e->name + LabelSet((*counters)->label_names(), values) + " " +
               FormatValue(c->Value()) + "\n";
      }
    } else if (auto* gauges = std::get_if<std::unique_ptr<Family<Gauge>>>(&e->family)) {
      for (const auto& [values, g] : (*gauges)->Children()) {
        out += e->name + LabelSet((*gauges)->label_names(), values) + " " +
               FormatValue(g->Value()) + "\n";
      }
    } else if (auto* histograms = std::get_if<std::unique_ptr<Family<Histogram>>>(&e->family)) {
      const auto& names = (*histograms)->label_names();
      for (const auto& [values, h] : (*histograms)->Children()) {
        Histogram::Snapshot s = h->Read();
        for (size_t i = 0; i < s.cumulative_counts.size(); ++i) {
          std::string le = i < s.upper_bounds.size() ? FormatValue(s.upper_bounds[i]) : "+Inf";
          out += e->name + "_bucket" + LabelSet(names, values, "le=\"" + le + "\"") + " " +
                 FormatValue(static_cast<double>(s.cumulative_counts[i])) + "\n";
        }
        out += e->name + "_sum" + LabelSet(names, values) + " " + FormatValue(s.sum) + "\n";
        out += e->name + "_count" + LabelSet(names, values) + " " +
               FormatValue(static_cast<double>(s.count)) + "\n";
      }
    }
  }
  return out;
}

void AddBuildInfo(Registry* registry) {
  registry->AddGauge("dnaserve_build_info", "Always 1; the version label names the build",
                     {"version"})
      .With({std::string(ServiceVersion())})
      .Set(1);
}

}  // namespace dnaserve::metrics
