// The benchmark's only LibTorch translation unit.
#include "tests/bench/bare_forward.h"

#include <torch/script.h>

#include <chrono>
#include <exception>
#include <utility>

namespace dnaserve::bench {

struct BareForward::Impl {
  torch::jit::Module module;
  std::vector<std::vector<c10::IValue>> calls;
};

BareForward::BareForward(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BareForward::~BareForward() = default;

StatusOr<std::unique_ptr<BareForward>> BareForward::Load(const std::string& path,
                                                         double* load_seconds) {
  try {
    const auto started = std::chrono::steady_clock::now();
    auto impl = std::make_unique<Impl>();
    impl->module = torch::jit::load(path);
    impl->module.eval();
    *load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::unique_ptr<BareForward>(new BareForward(std::move(impl)));
  } catch (const c10::Error& e) {
    return Internal("cannot load " + path + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Internal("cannot load " + path + ": " + e.what());
  }
}

void BareForward::Prepare(const std::vector<CallInputs>& calls) {
  impl_->calls.clear();
  for (const CallInputs& inputs : calls) {
    std::vector<c10::IValue> args;
    for (const worker::IdTensor& input : inputs) {
      // clone(): the tensor owns its data, so the recording can go away.
      args.emplace_back(torch::from_blob(const_cast<int64_t*>(input.data.data()), input.shape,
                                         torch::TensorOptions().dtype(torch::kLong))
                            .clone());
    }
    impl_->calls.push_back(std::move(args));
  }
}

StatusOr<double> BareForward::RunAll() {
  try {
    c10::InferenceMode guard;
    const auto started = std::chrono::steady_clock::now();
    for (const auto& args : impl_->calls) {
      c10::IValue out = impl_->module.forward(args);
      (void)out;  // CPU execution is synchronous: the outputs exist when forward returns
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  } catch (const c10::Error& e) {
    return Internal(std::string("bare forward failed: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Internal(std::string("bare forward failed: ") + e.what());
  }
}

}  // namespace dnaserve::bench
