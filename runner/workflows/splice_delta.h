// SpliceAI's delta scores from per-base splice scores of a REF and an ALT sequence, without
// I/O: the pure part of the splice variant scorer (variant_scoring.h), tested on hand-made
// vectors.
//
// Convention (SpliceAI's get_delta_scores, Jaganathan et al. 2019): the scored positions are
// the genome positions pos-distance .. pos+distance around the variant's first base `pos`, and
// offsets are relative to it (DP_* > 0 is downstream on the genome's + strand, whatever the
// scored strand). At each position the ALT score is lined up with the REF score of the same
// genome base:
//   - upstream of the variant, and from pos + len(REF) on, the ALT sequence's base that is
//     that genome base (shifted by len(ALT) - len(REF) after the variant);
//   - at pos itself: the ALT base there for an SNV and a deletion (the anchor); for an
//     insertion the maximum over the anchor and the inserted bases (SpliceAI collapses them);
//   - a deleted base (pos < g < pos + len(REF)): 0, so a site it held counts as lost.
// Then, per class, gain = max over positions of (ALT - REF), loss = max of (REF - ALT), each at
// the first position reaching it (numpy's argmax). SpliceAI scores only SNVs, insertions and
// deletions (REF or ALT one base); so does this.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace dnaserve::runner {

// Per-base scores of one sequence on one strand, in genome order (a minus-strand pass already
// reversed back), with `first_offset` the offset from the variant's first base of element 0.
struct SpliceTrack {
  int64_t first_offset = 0;
  std::vector<float> acceptor;
  std::vector<float> donor;
};

// One delta: its value, its offset from the variant, and the REF and ALT scores there.
struct SpliceDeltaValue {
  double score = 0;
  int64_t offset = 0;
  double ref = 0;
  double alt = 0;
};

struct SpliceDelta {
  SpliceDeltaValue acceptor_gain, acceptor_loss, donor_gain, donor_loss;
  // max(DS_AG, DS_AL, DS_DG, DS_DL), SpliceAI's single "delta score".
  double Max() const;
};

// `ref` must cover offsets [-distance, distance] of the genome; `alt` the ALT sequence from
// offset -distance to distance + len(ALT) - len(REF) (and at least len(ALT) - 1), its offsets
// counted along the ALT sequence. REF or ALT must be one base (and ref_len, alt_len >= 1).
// internal_error when a track is too short or the lengths break these rules: a caller bug.
StatusOr<SpliceDelta> ComputeSpliceDelta(const SpliceTrack& ref, const SpliceTrack& alt,
                                         int64_t ref_len, int64_t alt_len, int64_t distance);

}  // namespace dnaserve::runner
