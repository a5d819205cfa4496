// The worker's only LibTorch translation unit (slow to compile: keep it small).
#include "worker/models/torchscript_model.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include "worker/models/reduced_precision.h"

#include <exception>
#include <string>
#include <utility>

namespace dnaserve::worker {
namespace {

// Keeps the first line of a LibTorch message: the rest is a C++/TorchScript backtrace.
std::string FirstLine(const char* what) {
  std::string text(what ? what : "");
  size_t newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

Status AppendTensor(const at::Tensor& tensor, std::vector<FloatTensor>* out) {
  at::Tensor t = tensor.to(at::kFloat).contiguous();
  FloatTensor result;
  result.shape.assign(t.sizes().begin(), t.sizes().end());
  const float* data = t.data_ptr<float>();
  result.data.assign(data, data + t.numel());
  out->push_back(std::move(result));
  return Status::Ok();
}

Status Flatten(const c10::IValue& value, std::vector<FloatTensor>* out) {
  if (value.isTensor()) return AppendTensor(value.toTensor(), out);
  if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) {
      DNASERVE_RETURN_IF_ERROR(Flatten(element, out));
    }
    return Status::Ok();
  }
  if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector())
      DNASERVE_RETURN_IF_ERROR(AppendTensor(t, out));
    return Status::Ok();
  }
  return Internal("the model returned " + value.tagKind() + ", expected tensors");
}

// LibTorch's intra-op thread count (SetTorchThreads) is an OpenMP setting of each thread. ATen
// applies it to a new thread only at that thread's first at::parallel_for; until then oneDNN and
// OpenBLAS, which ask OpenMP directly, run teams of every CPU. Forward passes run on the gRPC
// handler threads of their requests, which gRPC creates and retires as load changes, so without
// this a fresh thread's pass oversubscribed the CPUs (measured: chromatin-human over gRPC took
// 40 ms instead of 2.5 ms for 10 kb on the 2-vCPU VM).
void ApplyThreadCountOnThisThread() {
  thread_local bool applied = false;
  if (!applied) {
    at::init_num_threads();
    applied = true;
  }
}

class TorchScriptModel final : public Model {
 public:
  TorchScriptModel(torch::jit::Module module, std::optional<at::ScalarType> cuda_autocast)
      : module_(std::move(module)), cuda_autocast_(cuda_autocast) {}

  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    try {
      ApplyThreadCountOnThisThread();
      c10::InferenceMode guard;
      CudaAutocastScope autocast(cuda_autocast_);  // reduced precision on CUDA; CPU: nothing
      std::vector<c10::IValue> args;
      args.reserve(inputs.size());
      for (const auto& input : inputs) {
        // from_blob does not copy; the input outlives the call and the model does not write to it.
        args.emplace_back(torch::from_blob(const_cast<int64_t*>(input.data.data()), input.shape,
                                           torch::TensorOptions().dtype(torch::kLong)));
      }
      c10::IValue output = module_.forward(std::move(args));
      std::vector<FloatTensor> out;
      DNASERVE_RETURN_IF_ERROR(Flatten(output, &out));
      return out;
    } catch (const c10::Error& e) {
      return Internal("model forward failed: " + FirstLine(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return Internal(std::string("model forward failed: ") + FirstLine(e.what()));
    }
  }

 private:
  torch::jit::Module module_;
  std::optional<at::ScalarType> cuda_autocast_;
};

}  // namespace

StatusOr<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path,
                                                      Precision precision,
                                                      const std::string& model_id) {
  try {
    const PrecisionSupport support = DetectPrecisionSupport();
    DNASERVE_RETURN_IF_ERROR(
        CheckPrecisionSupported(precision, support, model_id.empty() ? path : model_id));
    torch::jit::Module module = torch::jit::load(path);
    module.eval();
    auto applied = ApplyReducedPrecision(&module, precision, support, path);
    if (!applied.ok()) return applied.status();
    return std::shared_ptr<Model>(
        std::make_shared<TorchScriptModel>(std::move(module), applied->cuda_autocast));
  } catch (const c10::Error& e) {
    return Internal("cannot load TorchScript file " + path + ": " +
                    FirstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Internal("cannot load TorchScript file " + path + ": " + FirstLine(e.what()));
  }
}

void SetTorchThreads(int n) {
  if (n > 0) at::set_num_threads(n);
}

int TorchThreads() { return at::get_num_threads(); }

}  // namespace dnaserve::worker
