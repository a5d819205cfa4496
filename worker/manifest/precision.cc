#include "worker/manifest/precision.h"

namespace dnaserve::worker {

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kInt8: return "int8";
  }
  return "fp32";
}

std::optional<Precision> PrecisionFromName(std::string_view name) {
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kInt8}) {
    if (name == PrecisionName(p)) return p;
  }
  return std::nullopt;
}

Status CheckPrecisionSupported(Precision precision, const PrecisionSupport& support,
                               const std::string& model_id) {
  const std::string asks =
      "model '" + model_id + "' asks for precision " + PrecisionName(precision) + ", but ";
  switch (precision) {
    case Precision::kFp32:
      return Status::Ok();
    case Precision::kBf16:
      // On CUDA bf16 maps to autocast (reduced_precision.cc); on a CPU without native bf16 dot
      // products oneDNN emulates them, slower than fp32: the setting would only cost accuracy.
      if (support.cuda || support.cpu_bf16) return Status::Ok();
      return Internal(asks + "this CPU has no native bfloat16 instructions (AVX512-BF16 or AMX): "
                             "set \"precision\": \"fp32\" in its manifest to serve it here");
    case Precision::kInt8:
      // Dynamic int8 Linear layers are CPU kernels only.
      if (support.cuda) {
        return Internal(asks + "dynamic int8 quantization has no CUDA kernels: serve it on CPU or "
                               "set \"precision\": \"bf16\"");
      }
      if (support.quantized_engine) return Status::Ok();
      return Internal(asks + "this LibTorch build has no quantized engine (oneDNN, FBGEMM or "
                             "QNNPACK)");
  }
  return Status::Ok();
}

}  // namespace dnaserve::worker
