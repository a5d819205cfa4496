#include "core/render/chromatin_labels.h"

#include <cstddef>

namespace dnaserve::core {

namespace pb = worker::v1;

namespace {

// Output indices come from the worker: a label past this is malformed and ignored, so a broken
// reply cannot make the renderer allocate without bound.
constexpr int kMaxLabelIndex = 1 << 20;

}  // namespace

ChromatinLabels::ChromatinLabels(const pb::ChromatinResult& chromatin) {
  for (const pb::ChromatinFeatureLabel& label : chromatin.labels()) {
    if (label.index() < 0 || label.index() >= kMaxLabelIndex) continue;
    const auto index = static_cast<size_t>(label.index());
    if (index >= by_index_.size()) by_index_.resize(index + 1, nullptr);
    by_index_[index] = &label;
  }
}

const pb::ChromatinFeatureLabel* ChromatinLabels::Label(const pb::ChromatinFeature& f) const {
  // A feature that names itself wins: that is what every worker sent before labels existed.
  if (!f.name().empty() || f.index() < 0) return nullptr;
  const auto index = static_cast<size_t>(f.index());
  return index < by_index_.size() ? by_index_[index] : nullptr;
}

std::string_view ChromatinLabels::Name(const pb::ChromatinFeature& feature) const {
  const pb::ChromatinFeatureLabel* label = Label(feature);
  return label != nullptr ? std::string_view(label->name()) : std::string_view(feature.name());
}

std::string_view ChromatinLabels::Category(const pb::ChromatinFeature& feature) const {
  const pb::ChromatinFeatureLabel* label = Label(feature);
  return label != nullptr ? std::string_view(label->category())
                          : std::string_view(feature.category());
}

size_t ChromatinLabels::RepeatedNameBytes(const pb::ChromatinResult& chromatin) const {
  if (by_index_.empty()) return 0;
  size_t bytes = 0;
  for (const auto& window : chromatin.windows()) {
    for (const auto& feature : window.features()) {
      const pb::ChromatinFeatureLabel* label = Label(feature);
      if (label != nullptr) bytes += label->name().size();
    }
  }
  return bytes;
}

}  // namespace dnaserve::core
