// The bare TorchScript forward pass: the denominator of every throughput ratio. The same
// model.pt the worker serves, loaded with torch::jit::load, run over exactly the window tensors
// the worker's runner sent (recorded by RecordingModel), in the same batch sizes, with nothing
// else: no tokenising, no output copies, no stitching. LibTorch stays inside the .cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/models/model.h"

namespace dnaserve::bench {

// The inputs of one forward call, as the runner passed them.
using CallInputs = std::vector<worker::IdTensor>;

class BareForward {
 public:
  ~BareForward();
  BareForward(const BareForward&) = delete;
  BareForward& operator=(const BareForward&) = delete;

  // torch::jit::load + eval; *load_seconds gets the wall time of both.
  static StatusOr<std::unique_ptr<BareForward>> Load(const std::string& path, double* load_seconds);

  // Builds the input tensors of `calls` once, outside any timing.
  void Prepare(const std::vector<CallInputs>& calls);
  // Runs every prepared call once, in order, under InferenceMode; returns the wall seconds.
  StatusOr<double> RunAll();

 private:
  struct Impl;
  explicit BareForward(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnaserve::bench
