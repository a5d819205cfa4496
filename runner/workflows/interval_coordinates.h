// Outputs of an interval request moved from the analysed sequence's coordinates to the
// contig's (issue 25, scope 2). The worker and the renderers see an ordinary sequence (the
// interval's bases, reverse-complemented for strand '-') and report positions on it; this file
// maps every one of them to the contig, so the rest of the service stays unaware of intervals.
//
// The mapping, for an interval [B, E) on the contig (0-based half-open: B = start - 1, E = end):
//   strand '+': a span [a, b) of the analysed sequence is [B + a, B + b); a point p is B + p.
//   strand '-': the analysed sequence is the reverse complement, so base i is contig base
//               E - 1 - i: a span [a, b) is [E - b, E - a), a point p is E - 1 - p, and a
//               feature's strand flips ('+' on the analysed sequence is '-' on the contig).
// Each field keeps its own convention (JSON and BED/bedGraph 0-based half-open, GFF3 1-based
// inclusive). JSON lists keep the analysed order (on '-' that is descending contig positions);
// a transcript's exons, introns and CDS segments and the rows of text tracks are put in
// ascending contig order, as genome tools expect.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "common/task.h"
#include "core/validation/genome_interval.h"

namespace dnaserve::runner {

struct IntervalFrame {
  std::string contig;  // the sequence id of every output (the contig as the client named it)
  int64_t begin = 0;   // B: 0-based first base
  int64_t end = 0;     // E: 0-based, exclusive
  bool minus = false;

  static IntervalFrame Of(const core::GenomeInterval& interval);
  // [a, b) of the analysed sequence -> the contig's half-open span.
  std::pair<int64_t, int64_t> Span(int64_t a, int64_t b) const;
  int64_t Point(int64_t p) const;
  // '+' <-> '-' on strand '-'; anything else ('.', '?') unchanged.
  char Strand(char s) const;
};

// BED (3 to 12 columns) and bedGraph text: positions, strand, thick span and blocks mapped;
// the sequence id set to the frame's contig; track, browser and comment lines kept. On '-' the
// rows under each track line are sorted by (start, end).
std::string MapBedText(std::string_view text, const IntervalFrame& frame);
// GFF3: ##sequence-region becomes the interval itself, feature columns 1, 4, 5 and 7 and the
// tss_position / polya_position attributes (0-based points) are mapped; the line order is kept
// (parents stay before their children).
std::string MapGff3Text(std::string_view text, const IntervalFrame& frame);
// The text track of `format` (bed, bedgraph, gff3) mapped.
std::string MapTrackText(OutputFormat format, std::string_view text, const IntervalFrame& frame);

// A predict response's JSON (core/render/predict_response.h) with every position mapped and
// `echo` (a JSON object) added as meta.interval.
StatusOr<std::string> MapPredictJson(Task task, std::string_view body, const IntervalFrame& frame,
                                     std::string_view echo);
// The find-genes response (find_genes_response.h): its annotation payload, each gene's
// tss_position and strand, and meta.interval.
StatusOr<std::string> MapFindGenesJson(std::string_view body, const IntervalFrame& frame,
                                       std::string_view echo);

}  // namespace dnaserve::runner
