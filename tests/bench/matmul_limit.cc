// LibTorch translation unit of the matmul limit (matmul_limit.h).
#include "tests/bench/matmul_limit.h"

#include <torch/torch.h>

#include <chrono>
#include <functional>

namespace dnaserve::bench {
namespace {

// Seconds per call of `op`, averaged over as many calls as fit in min_seconds (at least 3).
double SecondsPerCall(const std::function<void()>& op, double min_seconds) {
  op();  // warm-up: oneDNN picks and caches its kernel on the first call
  op();
  int calls = 0;
  const auto started = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (calls < 3 || elapsed < min_seconds) {
    op();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return elapsed / calls;
}

struct Product {
  std::string name;
  int per_layer;
  int64_t rows, inner, cols;  // linear: [rows x inner] x [inner x cols]; batched: per head
  int64_t batch;              // heads for the attention products, 1 for linear layers
  bool linear;                // nn.Linear (with bias), as the model runs it
};

std::string Dims(const Product& p) {
  std::string d = "[" + std::to_string(p.rows) + " x " + std::to_string(p.inner) + "] x [" +
                  std::to_string(p.inner) + " x " + std::to_string(p.cols) + "]";
  return p.batch > 1 ? std::to_string(p.batch) + " x " + d : d;
}

double TimeProduct(const Product& p, torch::ScalarType dtype, double min_seconds) {
  const auto options = torch::TensorOptions().dtype(dtype);
  if (p.linear) {
    torch::Tensor x = torch::randn({p.rows, p.inner}, options);
    torch::Tensor w = torch::randn({p.cols, p.inner}, options) * 0.02;
    torch::Tensor b = torch::randn({p.cols}, options);
    return SecondsPerCall([&] { torch::Tensor y = torch::linear(x, w, b); }, min_seconds);
  }
  torch::Tensor a = torch::randn({p.batch, p.rows, p.inner}, options);
  torch::Tensor b = torch::randn({p.batch, p.inner, p.cols}, options);
  return SecondsPerCall([&] { torch::Tensor y = torch::matmul(a, b); }, min_seconds);
}

}  // namespace

double EncoderFlops(const EncoderShape& s, int64_t tokens) {
  const double l = static_cast<double>(tokens), h = static_cast<double>(s.hidden),
               f = static_cast<double>(s.intermediate);
  return static_cast<double>(s.layers) * (8 * l * h * h + 4 * l * h * f + 4 * l * l * h);
}

StatusOr<MatmulLimit> MeasureMatmulLimit(const EncoderShape& s, int64_t tokens, int threads,
                                         double min_seconds) {
  if (s.hidden <= 0 || s.heads <= 0 || s.hidden % s.heads != 0 || tokens <= 0) {
    return BadRequest("matmul limit: bad encoder shape");
  }
  const int64_t d = s.hidden / s.heads;
  const std::vector<Product> products = {
      {"QKV/out projection", 4, tokens, s.hidden, s.hidden, 1, true},
      {"FFN up", 1, tokens, s.hidden, s.intermediate, 1, true},
      {"FFN down", 1, tokens, s.intermediate, s.hidden, 1, true},
      {"attention scores Q.K^T", 1, tokens, d, tokens, s.heads, false},
      {"attention probs x V", 1, tokens, tokens, d, s.heads, false},
  };
  MatmulLimit limit;
  limit.threads = threads;
  limit.tokens = tokens;
  const int previous = at::get_num_threads();
  at::set_num_threads(threads);
  c10::InferenceMode guard;
  double fp32_time = 0, bf16_time = 0, total = 0;
  bool bf16_ok = true;
  for (const Product& p : products) {
    MatmulFigure f;
    f.name = p.name;
    f.dims = Dims(p);
    f.per_layer = p.per_layer;
    f.flops = 2.0 * p.batch * p.rows * p.inner * p.cols;
    try {
      f.fp32_gflops = f.flops / TimeProduct(p, torch::kFloat, min_seconds) / 1e9;
    } catch (const c10::Error& e) {
      at::set_num_threads(previous);
      return Internal(std::string("matmul limit (fp32): ") + e.what_without_backtrace());
    }
    try {
      f.bf16_gflops = f.flops / TimeProduct(p, torch::kBFloat16, min_seconds) / 1e9;
    } catch (const c10::Error& e) {
      f.error = e.what_without_backtrace();
      bf16_ok = false;
    }
    total += p.per_layer * f.flops;
    fp32_time += p.per_layer * f.flops / f.fp32_gflops;
    if (f.bf16_gflops > 0) bf16_time += p.per_layer * f.flops / f.bf16_gflops;
    limit.products.push_back(std::move(f));
  }
  at::set_num_threads(previous);
  limit.fp32_gflops = total / fp32_time;
  limit.bf16_gflops = bf16_ok ? total / bf16_time : 0;
  return limit;
}

}  // namespace dnaserve::bench
