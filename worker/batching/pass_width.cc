#include "worker/batching/pass_width.h"

#include <algorithm>

namespace dnaserve::worker {

int64_t PassWidth::RowsFor(int64_t row_columns) const {
  const int64_t rows = std::max<int64_t>(1, rows_per_pass);
  if (window_columns <= 0 || row_columns <= 0) return rows;
  const int64_t cap = max_rows > 0 ? max_rows : kMaxWidthScaledRows;
  const int64_t fit = rows * window_columns / row_columns;
  return std::clamp<int64_t>(fit, 1, std::max<int64_t>(1, cap));
}

int64_t PassWidth::RowBases(int64_t row_columns) const {
  const int64_t window = std::max<int64_t>(1, window_bases);
  if (window_columns <= 0 || row_columns <= 0) return window;
  return std::max<int64_t>(1, (row_columns * window + window_columns - 1) / window_columns);
}

int64_t PassWidth::PassBases() const {
  return std::max<int64_t>(1, rows_per_pass) * std::max<int64_t>(1, window_bases);
}

int64_t RowColumns(const std::vector<IdTensor>& inputs) {
  if (inputs.empty() || inputs[0].shape.empty() || inputs[0].shape[0] <= 0) return 0;
  int64_t columns = 1;
  for (size_t d = 1; d < inputs[0].shape.size(); ++d) columns *= inputs[0].shape[d];
  return columns;
}

}  // namespace dnaserve::worker
