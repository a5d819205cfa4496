#include "worker/windowing/window_plan.h"

#include <algorithm>

namespace dnaserve::worker {

std::vector<WindowSpan> PlanWindows(int64_t length, int64_t context, int64_t stride) {
  std::vector<WindowSpan> windows;
  if (length <= 0 || context <= 0 || stride <= 0 || stride > context) return windows;
  int64_t count = length <= context ? 1 : (length - context + stride - 1) / stride + 1;
  windows.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    WindowSpan w;
    w.index = static_cast<int>(i);
    w.start = i * stride;
    w.end = std::min(w.start + context, length);
    w.padded_bp = context - (w.end - w.start);
    windows.push_back(w);
  }
  return windows;
}

std::string PaddedWindow(std::string_view sequence, const WindowSpan& window, int64_t context) {
  std::string out(sequence.substr(window.start, window.end - window.start));
  out.resize(static_cast<size_t>(context), 'N');
  return out;
}

std::vector<WindowSpan> PlanFlankedWindows(int64_t length, int64_t output, int64_t flank) {
  if (flank < 0) return {};
  // The scored regions tile the sequence exactly like non-overlapping windows of `output` bp.
  return PlanWindows(length, output, output);
}

Span FlankedInputSpan(const WindowSpan& window, int64_t output, int64_t flank) {
  return {window.start - flank, window.start + output + flank};
}

std::string FlankedWindow(std::string_view sequence, const WindowSpan& window, int64_t output,
                          int64_t flank) {
  const Span input = FlankedInputSpan(window, output, flank);
  const int64_t length = static_cast<int64_t>(sequence.size());
  std::string out(static_cast<size_t>(input.end - input.start), 'N');
  const int64_t from = std::max<int64_t>(input.start, 0);
  const int64_t to = std::min(input.end, length);
  if (from < to) {
    out.replace(static_cast<size_t>(from - input.start), static_cast<size_t>(to - from),
                sequence.substr(static_cast<size_t>(from), static_cast<size_t>(to - from)));
  }
  return out;
}

std::vector<Span> OwnedSpans(const std::vector<WindowSpan>& windows, int64_t context,
                             int64_t stride, int64_t length) {
  std::vector<Span> spans;
  spans.reserve(windows.size());
  const int64_t offset = (context - stride) / 2;
  for (size_t i = 0; i < windows.size(); ++i) {
    Span s;
    s.start = i == 0 ? 0 : windows[i].start + offset;
    s.end = i + 1 == windows.size() ? length : windows[i + 1].start + offset;
    s.start = std::min(s.start, length);
    s.end = std::min(std::max(s.end, s.start), length);
    spans.push_back(s);
  }
  return spans;
}

std::vector<std::pair<int, int>> Batches(int windows, int batch_size) {
  std::vector<std::pair<int, int>> out;
  if (batch_size < 1) batch_size = 1;
  for (int first = 0; first < windows; first += batch_size) {
    out.emplace_back(first, std::min(windows, first + batch_size));
  }
  return out;
}

}  // namespace dnaserve::worker
