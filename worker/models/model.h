// The one interface between task logic and a model runtime. Tensors are plain row-major buffers
// so windowing, stitching and the task runners never include LibTorch (and tests can substitute a
// fake model).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

struct IdTensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> data;  // row-major, product(shape) values
};

struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, product(shape) values
  int64_t dim(size_t i) const { return i < shape.size() ? shape[i] : 0; }
};

class Model {
 public:
  virtual ~Model() = default;
  // One forward pass. A model returning a tuple yields one FloatTensor per element, in order.
  // Runtime failures (bad shapes, ids out of range, out of memory) come back as internal errors;
  // nothing is thrown. Safe to call from several threads at once.
  virtual StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) = 0;
};

}  // namespace dnaserve::worker
