// Pure helpers of dynamic batching: which forward calls may share one forward pass, and how their
// inputs are stacked along dim 0 and the outputs cut apart again. No threads, no LibTorch.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker/models/model.h"

namespace dnaserve::worker {

// What two calls must share to be stacked: the number of inputs and every input's shape without
// its first (batch) dimension. A call is mergeable when every input has at least one dimension,
// holds product(shape) values, and all its inputs agree on dim 0 (its row count); an unmergeable
// call still runs, alone.
struct RowSignature {
  bool mergeable = false;
  int64_t rows = 0;                              // dim 0 shared by the inputs (0 when unmergeable)
  std::vector<std::vector<int64_t>> row_shapes;  // per input: shape[1:]

  // Two calls may share a forward pass when both are mergeable with equal row shapes.
  bool MergesWith(const RowSignature& other) const {
    return mergeable && other.mergeable && row_shapes == other.row_shapes;
  }
};

RowSignature SignatureOf(const std::vector<IdTensor>& inputs);

// Stacks the calls' inputs along dim 0, in order: input k of the result is input k of every call
// concatenated. REQUIRES: the calls' signatures merge with each other.
std::vector<IdTensor> StackRows(const std::vector<const std::vector<IdTensor>*>& calls);

// Cuts the outputs of a stacked forward pass back into one output list per call, `rows[i]` rows
// for call i, in order. Every output must be batch-major: at least one dimension, dim 0 equal to
// the sum of `rows`, product(shape) values; otherwise an internal error naming the output.
// The outputs are consumed: the first call keeps their buffers (its rows come first), so only
// the other calls' rows are copied.
StatusOr<std::vector<std::vector<FloatTensor>>> SplitRows(std::vector<FloatTensor> outputs,
                                                          const std::vector<int64_t>& rows);

// Rows [first, first + count) of every input. REQUIRES: SignatureOf(inputs).mergeable and the
// range within its rows.
std::vector<IdTensor> SliceRows(const std::vector<IdTensor>& inputs, int64_t first, int64_t count);

// The inputs grown to `rows` rows: their own rows, then copies of their first row as filler.
// REQUIRES: SignatureOf(inputs).mergeable with at most `rows` rows.
std::vector<IdTensor> PadRows(std::vector<IdTensor> inputs, int64_t rows);

// Appends the first `keep` rows of each output of a forward pass of `rows` rows to the matching
// output in `into` (empty: the first part). Every output must be batch-major with `rows` rows,
// and parts must agree in output count and row shapes; otherwise an internal error.
Status AppendRows(std::vector<FloatTensor> part, int64_t rows, int64_t keep,
                  std::vector<FloatTensor>* into);

}  // namespace dnaserve::worker
