// Forward passes of one fixed batch shape, so that a row's output never depends on what shares
// its batch (issue 25, "same answer every time").
//
// Measured with LibTorch 1.13 on CPU (BENCHMARKS.md, "Deterministic batching"): the same window's
// float outputs change with the number of rows M of the forward pass that holds it, and only
// with M: not with what the other rows hold, nor with the row's place among them. Two libraries
// choose their kernels by M:
//   * ATen runs a conv1d of one small row (N*C*L <= 20480) with its own im2col + GEMM and every
//     other batch with oneDNN;
//   * OpenBLAS's sgemm (Linear layers) switches kernels with M (M = 1 is a GEMV; small
//     M*N*K products take its small-matrix kernels).
// Each kernel sums in its own order, so the last bits differ (chromatin-human: outputs for
// M = 1, 2-4, 5-12 and >= 15 form four classes). GPU libraries pick kernels by shape too.
//
// FixedRowsModel runs every batch-major forward call as passes of exactly `rows` rows: the
// call's rows cut into pieces of `rows`, the last piece filled up with copies of its own first
// row (valid input for any model; the filler's outputs are dropped). Calls whose inputs are not
// batch-major (SignatureOf(...).mergeable false) go through unchanged.
//
// With a PassWidth (pass_width.h) the rows of a pass are a function of the row width: a call of
// rows w wide runs as passes of exactly PassWidth::RowsFor(w) rows, so narrow rows share one
// forward while the rows of the serving window still run R to a pass.
#pragma once

#include <cstdint>
#include <memory>

#include "worker/batching/pass_width.h"
#include "worker/models/model.h"

namespace dnaserve::worker {

class FixedRowsModel final : public Model {
 public:
  // Passes of exactly `rows` rows whatever the width. REQUIRES: rows >= 1.
  FixedRowsModel(std::shared_ptr<Model> model, int64_t rows);
  // Passes of width.RowsFor(the call's row width) rows.
  FixedRowsModel(std::shared_ptr<Model> model, PassWidth width);

  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override;

  // Rows of a pass of serving-window rows (R).
  int64_t rows() const { return width_.rows_per_pass; }
  const PassWidth& width() const { return width_; }

 private:
  const std::shared_ptr<Model> model_;
  const PassWidth width_;
};

}  // namespace dnaserve::worker
