// The machine's measured limit for a BERT encoder: the matrix products one encoder layer makes,
// timed alone with LibTorch (the library the worker runs the model with), in fp32 and bf16, at a
// given intra-op thread count. The large-model suite (large_bench.h) divides every model row's
// achieved GFLOP/s by this limit.
//
// FLOPs are counted from the architecture (a multiply-add is 2 FLOPs). For one window of L tokens
// (the template's [CLS]/[SEP] included) through an encoder of hidden size h, intermediate size f:
//   per layer: Q, K, V and output projections 4 x 2*L*h*h, FFN up and down 2 x 2*L*h*f,
//              attention scores Q.K^T 2*L*L*h and probabilities x V 2*L*L*h
//            = 8*L*h^2 + 4*L*h*f + 4*L^2*h;
//   model: layers x that, summed over windows. Embeddings, LayerNorm, softmax, GELU, the pooler
//   and the classifier are not counted (under 1% of the products' FLOPs at h = 768, L = 512).
// The limit for the layer is its FLOPs over the sum of each product's FLOPs / its measured rate:
// the rate the layer would reach if its matrix products ran as fast as they do alone and
// everything else were free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dnaserve::bench {

struct EncoderShape {
  int64_t layers = 0, hidden = 0, heads = 0, intermediate = 0;
};

// FLOPs of the encoder's matrix products for one window of `tokens` tokens (formula above).
double EncoderFlops(const EncoderShape& shape, int64_t tokens);

struct MatmulFigure {
  std::string name;      // "QKV/out projection", "FFN up", ...
  std::string dims;      // "[512 x 768] x [768 x 768]"
  int per_layer = 0;     // how many of it one layer makes
  double flops = 0;      // FLOPs of one
  double fp32_gflops = 0;
  double bf16_gflops = 0;  // 0 when bf16 failed (error says why)
  std::string error;
};

struct MatmulLimit {
  int threads = 0;
  int64_t tokens = 0;
  std::vector<MatmulFigure> products;
  double fp32_gflops = 0;  // the layer's limit, fp32
  double bf16_gflops = 0;  // the layer's limit, bf16 (0 if not measured)
};

// Times each product for at least `min_seconds` (after a warm-up) at `threads` intra-op threads,
// restoring the previous thread count afterwards.
StatusOr<MatmulLimit> MeasureMatmulLimit(const EncoderShape& shape, int64_t tokens, int threads,
                                         double min_seconds);

}  // namespace dnaserve::bench
