#pragma once

// The name and category of each chromatin feature in a worker's reply, wherever the worker put
// them: on every feature (workers older than ChromatinOptions.labels_once, and callers that do
// not ask for it), or once per output index in ChromatinResult.labels. Renderers read labels only
// through this, so the JSON is the same bytes either way.

#include <cstddef>
#include <string_view>
#include <vector>

#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

class ChromatinLabels {
 public:
  // Keeps pointers into `chromatin`, which must outlive this object.
  explicit ChromatinLabels(const worker::v1::ChromatinResult& chromatin);

  std::string_view Name(const worker::v1::ChromatinFeature& feature) const;
  std::string_view Category(const worker::v1::ChromatinFeature& feature) const;

  // What the JSON spends on names the reply sent once: each feature repeats its label's name
  // there. The body's size estimate adds it, since the reply's own size no longer counts it.
  size_t RepeatedNameBytes(const worker::v1::ChromatinResult& chromatin) const;

 private:
  const worker::v1::ChromatinFeatureLabel* Label(const worker::v1::ChromatinFeature& f) const;

  // By output index; null where the reply sent no label (the feature names itself).
  std::vector<const worker::v1::ChromatinFeatureLabel*> by_index_;
};

}  // namespace dnaserve::core
