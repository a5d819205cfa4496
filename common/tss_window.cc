#include "common/tss_window.h"

namespace dnaserve {

PlusStrandSpan TssWindowSpan(int64_t tss, bool minus_strand) {
  // Read right to left, the TSS must land at kTssIndexInWindow, so it sits that far from the
  // window's plus-strand end, not its start.
  const int64_t bases_before = minus_strand ? kExpressionWindowBp - 1 - kTssIndexInWindow
                                            : kTssIndexInWindow;
  const int64_t start = tss - bases_before;
  return {start, start + kExpressionWindowBp};
}

}  // namespace dnaserve
