// The one interface between task logic and a model runtime. Tensors are plain row-major buffers
// so windowing, stitching and the task runners never include LibTorch (and tests can substitute a
// fake model).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
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

  // The model as one request sees it: the request's forward calls, made one after another by a
  // caller that may go away (`cancelled`, may be empty). A model that queues work
  // (worker/batching) admits or refuses the request as a whole at its first call, polls
  // `cancelled` on the calling thread while a call waits for its turn, and withdraws the call once
  // it returns true: that call's result is then ForwardCancelledStatus(). A model that runs at
  // once checks `cancelled` before each call. The view must not outlive this model.
  virtual std::unique_ptr<Model> ForRequest(CancelCheck cancelled);

  // One forward call for a caller that may go away: a request of one call.
  StatusOr<std::vector<FloatTensor>> ForwardUnlessCancelled(const std::vector<IdTensor>& inputs,
                                                            CancelCheck cancelled) {
    return ForRequest(std::move(cancelled))->Forward(inputs);
  }

  static Status ForwardCancelledStatus() {
    return Cancelled("the forward pass was withdrawn: caller gone");
  }
  static bool IsForwardCancelled(const Status& status) {
    return status.code() == ErrorCode::kCancelled;
  }
};

// The default per-request view: checks the caller before each call, then runs it.
class CheckedRequest final : public Model {
 public:
  CheckedRequest(Model& model, CancelCheck cancelled)
      : model_(model), cancelled_(std::move(cancelled)) {}
  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    if (cancelled_ && cancelled_()) return ForwardCancelledStatus();
    return model_.Forward(inputs);
  }

 private:
  Model& model_;
  CancelCheck cancelled_;
};

inline std::unique_ptr<Model> Model::ForRequest(CancelCheck cancelled) {
  return std::make_unique<CheckedRequest>(*this, std::move(cancelled));
}

}  // namespace dnaserve::worker
