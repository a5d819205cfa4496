// Rows per forward pass that scale with the row width (issue 25, splice-scorer throughput).
//
// A fixed-shape pass (fixed_rows_model.h) of R rows was sized for rows of the package's serving
// window. Narrower rows (the splice variant scorer's 2,165 bp blocks against splice-human's 15 kb
// window) then ran R to a pass too, so with the splice default R = 1 every block was a forward of
// its own. Here a pass holds up to R x (the serving window's width) of input instead: narrow rows
// share one forward, a row of the full window still runs R to a pass, and the pass's bases are
// bounded exactly as before.
//
// The rows a pass of width w holds are a function of w and the settings only, never of what else
// is queued, so a row's outputs still depend only on its own input (the kernels depend on the
// pass's shape, rows x width, and both are fixed by the row).
#pragma once

#include <cstdint>
#include <vector>

#include "worker/models/model.h"

namespace dnaserve::worker {

// Most rows a width-scaled pass takes when no explicit cap is set: a row of a few bases never
// makes a pass of thousands of rows (each row has its per-row costs: copies, filler).
inline constexpr int64_t kMaxWidthScaledRows = 64;

struct PassWidth {
  int64_t rows_per_pass = 1;  // R: rows of a pass of serving-window rows (>= 1)
  // Most rows of any pass; 0 = kMaxWidthScaledRows. An operator's explicit --batch-rows-per-pass
  // is the cap, so narrow rows then run exactly R to a pass, as before.
  int64_t max_rows = 0;
  // Values per row of the first input for one serving window (its tokens); 0 = unknown (the
  // tokenizer's count depends on the bases): every pass then has exactly R rows.
  int64_t window_columns = 0;
  int64_t window_bases = 1;  // the serving window's bases (context_window_bp)

  // Rows of every pass of rows `row_columns` wide: R x window_columns / row_columns, at least 1,
  // at most the cap; R when the width is unknown or not positive.
  int64_t RowsFor(int64_t row_columns) const;
  // Bases a row of `row_columns` stands for (the budget's unit): its share of the serving
  // window, rounded up; window_bases when the width is unknown.
  int64_t RowBases(int64_t row_columns) const;
  // The bases of a pass of full serving-window rows: R x window_bases.
  int64_t PassBases() const;
};

// Values per row of the first input (its tokens); 0 for no inputs or a first input without rows.
int64_t RowColumns(const std::vector<IdTensor>& inputs);

}  // namespace dnaserve::worker
