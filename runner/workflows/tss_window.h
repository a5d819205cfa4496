// Cutting the expression window of a found gene out of the submitted region.
//
// The expression model scores one 9,198 bp window centred on a TSS, read on the gene's sense
// strand (the expression task's convention: sense[tss-4599, tss+4599), so the TSS base sits at
// index 4599 of the window). For a '+' gene that is plus[tss-4599, tss+4599); for a '-' gene
// the sense strand is the reverse complement, and the same window is
// ReverseComplement(plus[tss-4598, tss+4600)):
//
//   plus strand   ........[tss-4599 ............ T ............ tss+4599)........   '+' gene
//   plus strand   .........[tss-4598 ........... T ............. tss+4600)........  '-' gene,
//                                                                 read right to left
//
// Where the window runs past either end of the region, the missing bases are N. Up to half the
// window (4,599 bp of N in total, both sides together) is padded; a gene needing more is
// skipped, never dropped silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/tss_window.h"

namespace dnaserve::runner {

// The window is the expression task's (kExpressionWindowBp); at most half of it may be N.
inline constexpr int64_t kMaxTssPaddingBp = kExpressionHalfWindowBp;

struct TssWindowPlan {
  bool usable = false;
  std::string skip_reason;  // set when not usable
  // The plus-strand slice [start, end) of the region inside the window (clipped to the region).
  int64_t region_start = 0;
  int64_t region_end = 0;
  // N bases before and after the region's bases, in the window's (sense) orientation.
  int64_t pad_5prime = 0;
  int64_t pad_3prime = 0;

  int64_t padded_bp() const { return pad_5prime + pad_3prime; }
};

// Plans the window of a gene whose TSS the annotation reported at `tss_position` on `strand`
// ('+' or '-'). `coordinate_offset` is what shift_coordinates added to every reported
// coordinate (0 without it), so the TSS is at tss_position - coordinate_offset in the
// `region_length` bp submitted sequence. A TSS outside the region, or a strand other than + or -,
// is unusable with its reason.
TssWindowPlan PlanTssWindow(int64_t region_length, int64_t coordinate_offset,
                            int64_t tss_position, char strand);

// The kExpressionWindowBp bases of a usable plan, on the gene's sense strand, N-padded. `region` is the
// whole submitted (plus-strand, normalised) sequence the plan was made for.
std::string CutTssWindow(std::string_view region, const TssWindowPlan& plan, char strand);

}  // namespace dnaserve::runner
