// TorchScript runtime for model packages. This header is LibTorch-free on purpose: only
// torchscript_model.cc includes <torch/script.h>.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "worker/manifest/precision.h"
#include "worker/models/model.h"

namespace dnaserve::worker {

// torch::jit::load + eval. Every c10::Error / std::exception is caught here and returned as an
// internal error whose message names the file (the exception text is kept for the logs).
// `precision` is the package's setting (worker/models/reduced_precision.h): a setting this
// machine cannot honour, or weights that do not match it, fail the load.
StatusOr<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path,
                                                      Precision precision = Precision::kFp32,
                                                      const std::string& model_id = "");

// LibTorch intra-op threads (at::set_num_threads); n <= 0 leaves the default.
void SetTorchThreads(int n);
int TorchThreads();

}  // namespace dnaserve::worker
