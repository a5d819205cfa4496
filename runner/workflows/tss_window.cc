#include "runner/workflows/tss_window.h"

#include <algorithm>

#include "common/sequence.h"

namespace dnaserve::runner {

TssWindowPlan PlanTssWindow(int64_t region_length, int64_t coordinate_offset,
                            int64_t tss_position, char strand) {
  TssWindowPlan plan;
  if (strand != '+' && strand != '-') {
    plan.skip_reason = std::string("the annotation reported no usable strand ('") + strand + "')";
    return plan;
  }
  const int64_t tss = tss_position - coordinate_offset;
  if (tss < 0 || tss >= region_length) {
    plan.skip_reason = "the TSS at " + std::to_string(tss_position) +
                       " lies outside the submitted region";
    return plan;
  }
  // The plus-strand bases the window covers; see the drawing in the header.
  const PlusStrandSpan span = TssWindowSpan(tss, strand == '-');
  const int64_t start = span.start;
  const int64_t end = span.end;
  const int64_t missing_before = std::max<int64_t>(0, -start);
  const int64_t missing_after = std::max<int64_t>(0, end - region_length);
  plan.region_start = std::max<int64_t>(0, start);
  plan.region_end = std::min(region_length, end);
  plan.pad_5prime = strand == '+' ? missing_before : missing_after;
  plan.pad_3prime = strand == '+' ? missing_after : missing_before;
  if (plan.padded_bp() > kMaxTssPaddingBp) {
    plan.skip_reason = "the " + std::to_string(kExpressionWindowBp) +
                       " bp window centred on the TSS would need " +
                       std::to_string(plan.padded_bp()) + " bp of N padding (" +
                       std::to_string(plan.pad_5prime) + " bp upstream, " +
                       std::to_string(plan.pad_3prime) +
                       " bp downstream of the region); at most " +
                       std::to_string(kMaxTssPaddingBp) + " bp (half the window) is padded";
    return plan;
  }
  plan.usable = true;
  return plan;
}

std::string CutTssWindow(std::string_view region, const TssWindowPlan& plan, char strand) {
  std::string_view slice =
      region.substr(static_cast<size_t>(plan.region_start),
                    static_cast<size_t>(plan.region_end - plan.region_start));
  std::string window;
  window.reserve(static_cast<size_t>(kExpressionWindowBp));
  window.append(static_cast<size_t>(plan.pad_5prime), 'N');
  window += strand == '-' ? ReverseComplement(slice) : std::string(slice);
  window.append(static_cast<size_t>(plan.pad_3prime), 'N');
  return window;
}

}  // namespace dnaserve::runner
