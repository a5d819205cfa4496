// The one expression-window geometry (common/tss_window.h): both strands, and the TSS base
// landing at index 4599 once the window is read on the gene's sense strand.
#include "common/tss_window.h"

#include <catch2/catch.hpp>

#include <string>

#include "common/sequence.h"

using namespace dnaserve;

TEST_CASE("a '+' gene's window is tss-4599 up to tss+4599 (exclusive) on the plus strand",
          "[tss_window]") {
  const PlusStrandSpan span = TssWindowSpan(10000, /*minus_strand=*/false);
  CHECK(span.start == 10000 - 4599);
  CHECK(span.end == 10000 + 4599);
  CHECK(span.end - span.start == kExpressionWindowBp);
}

TEST_CASE("a '-' gene's window is tss-4598 up to tss+4600 (exclusive) on the plus strand",
          "[tss_window]") {
  const PlusStrandSpan span = TssWindowSpan(10000, /*minus_strand=*/true);
  CHECK(span.start == 10000 - 4598);
  CHECK(span.end == 10000 + 4600);
  CHECK(span.end - span.start == kExpressionWindowBp);
}

TEST_CASE("read on the sense strand, the TSS base is at kTssIndexInWindow on both strands",
          "[tss_window]") {
  // Every base distinct from its neighbours' pattern: mark the TSS with the only G.
  const int64_t length = 3 * kExpressionWindowBp;
  const int64_t tss = kExpressionWindowBp + 123;
  std::string plus(static_cast<size_t>(length), 'A');
  plus[static_cast<size_t>(tss)] = 'G';
  for (bool minus : {false, true}) {
    const PlusStrandSpan span = TssWindowSpan(tss, minus);
    std::string window = plus.substr(static_cast<size_t>(span.start),
                                     static_cast<size_t>(span.end - span.start));
    if (minus) window = ReverseComplement(window);
    INFO("minus strand: " << minus);
    CHECK(window.find(minus ? 'C' : 'G') == static_cast<size_t>(kTssIndexInWindow));
    CHECK(kTssIndexInWindow == 4599);
  }
}

TEST_CASE("the span may reach past either end of a sequence (callers pad)", "[tss_window]") {
  CHECK(TssWindowSpan(0, false).start == -4599);
  CHECK(TssWindowSpan(0, true).start == -4598);
}
