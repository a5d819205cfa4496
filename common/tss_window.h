// The expression window's geometry, in one place for every caller (the expression task, the
// find-genes workflow, the variant workflow).
//
// The expression model scores kExpressionWindowBp (9,198) bases read on the gene's sense strand,
// with the TSS base at index kTssIndexInWindow (4,599). On the plus strand that window is
//
//   '+' gene:  [tss-4599, tss+4599)                          TSS at index 4599
//   '-' gene:  [tss-4598, tss+4600), reverse-complemented    TSS at index 9198-1-4599 = 4598 of
//                                                            the plus-strand slice, 4599 once read
//                                                            right to left
#pragma once

#include <cstdint>

#include "common/task.h"

namespace dnaserve {

// Where the TSS base sits in the window, read on the gene's sense strand.
inline constexpr int64_t kTssIndexInWindow = kExpressionHalfWindowBp;

// A half-open range of plus-strand positions.
struct PlusStrandSpan {
  int64_t start = 0;
  int64_t end = 0;
};

// The plus-strand bases [start, end) of the window around a TSS at plus-strand position `tss`
// of a gene on the minus strand (`minus_strand`) or the plus strand. Positions may fall outside
// the sequence: callers pad or fetch N there.
PlusStrandSpan TssWindowSpan(int64_t tss, bool minus_strand);

}  // namespace dnaserve
