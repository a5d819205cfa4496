// Window geometry shared by every sliding-window task. All coordinates are 0-based, half-open,
// relative to the submitted sequence.
//
//   length 2,500, context 1,000, stride 200 (chromatin):
//     w0  [0, 1000)      w1 [200, 1200) ... w7 [1400, 2400)   w8 [1600, 2500) + 100 bp of N
//   The last window is the first one that reaches the end; only it can be padded (or the single
//   window of an input shorter than the context).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dnaserve::worker {

struct Span {
  int64_t start = 0;
  int64_t end = 0;
  bool operator==(const Span& o) const { return start == o.start && end == o.end; }
};

struct WindowSpan {
  int index = 0;
  int64_t start = 0;
  int64_t end = 0;        // clipped to the sequence
  int64_t padded_bp = 0;  // N bases appended to reach the context width
};

// Windows of `context` bp every `stride` bp over a sequence of `length` bp.
// REQUIRES: length > 0, context > 0, 0 < stride <= context.
std::vector<WindowSpan> PlanWindows(int64_t length, int64_t context, int64_t stride);

// The window's bases followed by padded_bp N bases: always exactly `context` characters.
std::string PaddedWindow(std::string_view sequence, const WindowSpan& window, int64_t context);

// For bedGraph tracks, which must not overlap: the part of the sequence each window speaks for.
// Window i owns its central stride-wide slice [start + (context - stride) / 2, + stride); the
// first window also owns everything before that and the last everything after, so the spans
// tile [0, length) exactly. With stride == context a window owns its own (clipped) extent.
std::vector<Span> OwnedSpans(const std::vector<WindowSpan>& windows, int64_t context,
                             int64_t stride, int64_t length);

// Flanked windows (per-base models such as SpliceAI/OpenSpliceAI, manifest `flank_bp`): window i
// scores the `output` bases [i * output, (i + 1) * output) and its model input is those bases with
// `flank` bp of the REAL neighbouring sequence on each side, N only beyond the sequence ends:
//
//   length 12,000, output 5,000, flank 5,000 (input 15,000 per window):
//     w0 scores [0, 5000)      input [-5000, 10000) = 5,000 N + bases 0-9,999
//     w1 scores [5000, 10000)  input [0, 15000)     = bases 0-11,999 + 3,000 N
//     w2 scores [10000, 12000) input [5000, 20000)  = bases 5,000-11,999 + 8,000 N; padded_bp 3,000
//
// WindowSpan start/end are the scored bases (clipped to the sequence) and padded_bp the scored
// positions past the end, so only the last window is padded. With flank 0 this is
// PlanWindows(length, output, output).
// REQUIRES: length > 0, output > 0, flank >= 0.
std::vector<WindowSpan> PlanFlankedWindows(int64_t length, int64_t output, int64_t flank);

// Sequence coordinates [start, end) of a flanked window's model input: may reach below 0 and past
// the sequence end (those positions are N).
Span FlankedInputSpan(const WindowSpan& window, int64_t output, int64_t flank);

// The model input of a flanked window: exactly output + 2 * flank characters, the sequence's own
// bases where the input span overlaps it and N elsewhere.
std::string FlankedWindow(std::string_view sequence, const WindowSpan& window, int64_t output,
                          int64_t flank);

// Batches of at most `batch_size` consecutive windows: [first, last) index pairs.
std::vector<std::pair<int, int>> Batches(int windows, int batch_size);

}  // namespace dnaserve::worker
