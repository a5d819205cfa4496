// The numeric precision a package asks the worker to run it in (manifest key "precision";
// worker/README.md, "Reduced precision"). LibTorch-free: the manifest validator and the tests use
// it; worker/models/reduced_precision.cc applies it to a loaded module.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dnaserve::worker {

enum class Precision {
  kFp32,  // as exported (the default when the key is absent)
  kBf16,  // matmul/conv-class ops in bfloat16 through oneDNN, weights stored in bfloat16
  kInt8,  // Linear layers as dynamically quantized int8 (weights int8 per output channel)
};

// "fp32", "bf16", "int8".
const char* PrecisionName(Precision precision);
std::optional<Precision> PrecisionFromName(std::string_view name);

// What the running build and machine can honour. Filled by DetectPrecisionSupport()
// (reduced_precision.h) from the CPU and LibTorch; tests construct it by hand.
struct PrecisionSupport {
  bool cuda = false;             // the module runs on a CUDA device
  bool cpu_bf16 = false;         // the CPU has native bfloat16 dot products (AVX512-BF16 or AMX)
  bool quantized_engine = false; // LibTorch has a quantized engine (oneDNN, FBGEMM or QNNPACK)
};

// Ok, or why `model_id`'s `precision` cannot run here. A setting the machine cannot honour is a
// load error, never a silent fallback to fp32: the same package must give the same scores on
// every worker that serves it (worker/README.md, "Reduced precision").
Status CheckPrecisionSupported(Precision precision, const PrecisionSupport& support,
                               const std::string& model_id);

}  // namespace dnaserve::worker
