// Gene annotation: per-position label probabilities stitched over the whole sequence (with the
// optional reverse-complement pass), then decoded into transcripts.
//
// The model emits 13 independent probabilities per base (kAnnotationLabels): intergenic, and for
// each strand exon, intron, CDS, UTR, TSS and transcript_end. Stitching and decoding need only
// the channel indices, resolved once from the manifest's output_labels.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {

inline constexpr std::array<std::string_view, 13> kAnnotationLabels = {
    "intergenic", "exon_plus",           "intron_plus",         "CDS_plus",     "UTR_plus",
    "TSS_plus",   "transcript_end_plus", "exon_minus",          "intron_minus", "CDS_minus",
    "UTR_minus",  "TSS_minus",           "transcript_end_minus"};

struct StrandChannels {
  int exon = 0, intron = 0, cds = 0, utr = 0, tss = 0, transcript_end = 0;
};

struct AnnotationChannels {
  int count = 0;  // channels per position in the model output
  int intergenic = 0;
  StrandChannels plus;
  StrandChannels minus;
};

// Finds every name of kAnnotationLabels in `labels`; fails naming the first one missing.
StatusOr<AnnotationChannels> ResolveAnnotationChannels(const std::vector<std::string>& labels);

// Probabilities per base of the submitted (plus-strand) sequence: row-major [length x channels].
struct PositionScores {
  PositionScores() = default;
  PositionScores(int64_t length_bp, int channel_count)
      : length(length_bp),
        channels(channel_count),
        values(static_cast<size_t>(length_bp) * channel_count, 0.0f) {}
  float at(int64_t position, int channel) const { return values[position * channels + channel]; }
  float& at(int64_t position, int channel) { return values[position * channels + channel]; }

  int64_t length = 0;
  int channels = 0;
  std::vector<float> values;
};

// Copies one window's rows ([context x channels], row-major) into `out`, dropping the N padding.
// A forward window lands at its own coordinates. A reverse-complement window is a window over
// ReverseComplement(sequence): its row j describes plus-strand base length - 1 - (start + j), and
// what it calls plus strand is the minus strand of the submitted sequence, so each strand-specific
// channel is swapped with its twin.
void PlaceWindow(const WindowSpan& window, const float* rows, const AnnotationChannels& channels,
                 bool reverse_complement, PositionScores* out);

// out[i] = (out[i] + other[i]) / 2 for every value. REQUIRES equal shapes.
void AverageInto(PositionScores* out, const PositionScores& other);

struct DecodeOptions {
  double threshold = 0.5;
  int64_t min_transcript_bp = 100;  // shorter candidates are noise, not transcripts
};

struct DecodedTranscript {
  char strand = '+';
  Span span;                   // first exon start to last exon end
  int64_t tss_position = 0;    // 0-based coordinate of the first transcribed base (5' end)
  int64_t polya_position = 0;  // 0-based coordinate of the last transcribed base (3' end)
  std::vector<Span> exons;     // ascending coordinates on both strands
  std::vector<Span> introns;   // the gaps between consecutive exons
  std::vector<Span> cds;       // exonic bases with CDS probability >= threshold
  double score = 0;            // mean transcribed probability over the span
};

// Per strand: a base is transcribed when max(exon, intron) >= threshold; each maximal run of
// transcribed bases is a candidate, its exonic bases are those with exon >= intron, and the
// candidate is trimmed to its first and last exon. Candidates with no exon or shorter than
// min_transcript_bp are dropped. Output is sorted by start, plus strand first on ties.
std::vector<DecodedTranscript> DecodeTranscripts(const PositionScores& scores,
                                                 const AnnotationChannels& channels,
                                                 const DecodeOptions& options);

// Transcript-type probabilities of one window, placed in plus-strand coordinates.
struct WindowTypeScores {
  Span span;
  std::vector<float> probabilities;  // one per manifest transcript_types entry
};

struct TypeCall {
  int index = 0;
  double score = 0;  // the chosen type's probability
};

// Averages the type probabilities of the windows overlapping `transcript`, weighted by overlap in
// bp, and picks the most probable type.
TypeCall AssignTranscriptType(const Span& transcript, const std::vector<WindowTypeScores>& windows);

}  // namespace dnaserve::worker
