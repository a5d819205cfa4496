// The one interface between task logic and a model runtime. Tensors are plain row-major buffers
// so windowing, stitching and the task runners never include LibTorch (and tests can substitute a
// fake model).
#pragma once

#include <cstdint>
#include <functional>
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

// True once the caller of a forward pass has gone away (client gone, deadline, job dropped).
using CancelCheck = std::function<bool()>;

class Model {
 public:
  virtual ~Model() = default;
  // One forward pass. A model returning a tuple yields one FloatTensor per element, in order.
  // Runtime failures (bad shapes, ids out of range, out of memory) come back as internal errors;
  // nothing is thrown. Safe to call from several threads at once.
  virtual StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) = 0;

  // Forward for a caller that may go away. A model that queues work (worker/batching) polls
  // `cancelled`, on the calling thread only, while the call waits for its turn, and withdraws the
  // call once it returns true: the result is then ForwardCancelledStatus(). A model that runs at
  // once checks it once, before starting. `cancelled` may be empty.
  virtual StatusOr<std::vector<FloatTensor>> ForwardUnlessCancelled(
      const std::vector<IdTensor>& inputs, const CancelCheck& cancelled) {
    if (cancelled && cancelled()) return ForwardCancelledStatus();
    return Forward(inputs);
  }

  static Status ForwardCancelledStatus() {
    return Status(ErrorCode::kServiceUnavailable, "the forward pass was withdrawn: caller gone");
  }
  static bool IsForwardCancelled(const Status& status) {
    return status.code() == ErrorCode::kServiceUnavailable &&
           status.message() == ForwardCancelledStatus().message();
  }
};

}  // namespace dnaserve::worker
