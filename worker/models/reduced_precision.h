// Applies a package's "precision" (worker/manifest/precision.h) to its loaded TorchScript module.
// Includes LibTorch: only torchscript_model.cc and the precision tools include this header.
#pragma once

#include <torch/script.h>

#include <optional>
#include <string>

#include "common/status.h"
#include "worker/manifest/precision.h"

namespace dnaserve::worker {

// This machine and LibTorch build (the module runs on the CPU: the worker has no device option).
PrecisionSupport DetectPrecisionSupport();

struct PrecisionReport {
  int rewritten_ops = 0;      // ops now running in bf16 or as int8 Linear
  bool already_int8 = false;  // the weights file was int8 already (saved by this conversion)
  bool already_bf16 = false;  // the module was exported in bfloat16 (export_hf_bert --precision)
  // CUDA only: forward passes run under autocast to this dtype (bf16 maps to float16 there).
  std::optional<at::ScalarType> cuda_autocast;
};

// Rewrites `module`'s forward graph in place for `precision` (fp32: unchanged). The module is
// frozen first when it is not (weights must be graph constants to be converted).
//  - bf16: every linear/conv/matmul-class op (and the fused transformer encoder layer) takes its
//    tensor inputs in bfloat16 and hands a float result on; constant weights are converted once,
//    here, so they are stored in bfloat16. Everything between those ops stays fp32.
//  - int8: every aten::linear whose weight is a constant becomes quantized::linear_dynamic with
//    that weight quantized per output channel (symmetric int8); activations are quantized per
//    call (dynamic). Linears fused into a transformer layer and convolutions stay fp32.
// A weights file that holds int8 ops already is accepted for int8 and refused for the others,
// and one whose weights are bfloat16 (a module exported in bf16, activations and all, which runs
// about 2x faster than the bf16 rewrite) likewise for bf16: the manifest must say what the
// weights are. Errors name `what` (the weights path).
// On CUDA (`support.cuda`) nothing is rewritten: bf16 becomes autocast to float16 around each
// forward pass (CudaAutocastScope), the usual half-precision inference on GPUs.
StatusOr<PrecisionReport> ApplyReducedPrecision(torch::jit::Module* module, Precision precision,
                                                const PrecisionSupport& support,
                                                const std::string& what);

// Turns CUDA autocast on for one forward pass when `dtype` is set, and restores it after. Only
// at::autocast's device-neutral switches are used, so it compiles (and does nothing) in a CPU-only
// LibTorch build.
class CudaAutocastScope {
 public:
  explicit CudaAutocastScope(std::optional<at::ScalarType> dtype);
  ~CudaAutocastScope();
  CudaAutocastScope(const CudaAutocastScope&) = delete;
  CudaAutocastScope& operator=(const CudaAutocastScope&) = delete;

 private:
  bool active_ = false;
  bool was_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kHalf;
};

}  // namespace dnaserve::worker
