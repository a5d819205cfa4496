// The splice scorer over many variants at once (variant_scoring.h): each variant's REF and ALT
// are cut into blocks of the smallest width the model needs, and the blocks of every variant go
// to the worker packed into a few calls (SpliceOptions.packed_window_bp), one model row each.
//
// A block is the model's input: `scored` bases with the manifest's flank_bp of real sequence on
// each side (N only beyond the contig). Its geometry (SpliceBlockFor) depends on the variant, the
// distance and the flank alone, never on the other variants, and every block of one width is
// the same shape; with the worker's fixed-shape passes a variant's scores are the same alone or
// among any others, to the bit.
//
// Where a block starts. Today's serving window (the worker's 15 kb input around one variant)
// started its model input at p - 1 - distance - 2 * flank on the + strand and ended it, on the
// - strand, 2 * flank past the REF's last scored base. A block keeps both starts' position
// modulo kSplicePhaseBp (8): splice-human reads the sequence through a stride-8 convolution, so a
// shift by a multiple of 8 changes no product, only float rounding; any other shift would move
// scores by more than the published 4 decimals. Within that rule a block starts on a grid of
// kSpliceCellBp (64), so variants a few bases apart with the same phase share one REF block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/dispatch/inference_backend.h"
#include "core/jobs/job.h"
#include "core/validation/variant_score_request.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/splice_delta.h"

namespace dnaserve::runner {

inline constexpr int64_t kSplicePhaseBp = 8;
inline constexpr int64_t kSpliceCellBp = 64;
// Blocks per worker call: at most 128, and at most ~32k scored bases (one reply entry each), so
// a call at distance 50 (165 scored bases a block) takes 128 and one at 5,000 takes 3.
inline constexpr int64_t kSpliceBlocksPerCall = 128;
inline constexpr int64_t kSpliceScoredBasesPerCall = 32768;

// A variant's blocks: REF genome bases [start - flank, start + scored + flank) (0-based), its
// scored bases [start, start + scored); the ALT blocks are the same width, cut from the ALT
// sequence so that the + strand's block starts, and the - strand's ends, at the same genome base
// as the REF block's.
struct SpliceBlock {
  int64_t start = 0;
  int64_t scored = 0;
  int64_t flank = 0;
  int64_t width() const { return scored + 2 * flank; }
};

// The block of variant `v` (1-based position, REF and ALT as given; REF or ALT one base).
SpliceBlock SpliceBlockFor(const core::RequestedVariant& v, int64_t distance, int64_t flank);

// The ALT block's input on one strand's genome order (the - strand's is reverse-complemented
// by the caller): `ref_input` is the REF block's input, `extended` the REF bases of
// [start - flank - X, start + scored + flank + X) with X = |len(ALT) - len(REF)|.
std::string AltBlockInput(const core::RequestedVariant& v, const SpliceBlock& block,
                          const std::string& extended, bool minus);

// The ALT track's first offset (relative to the variant, along the ALT sequence) on a strand.
int64_t AltFirstOffset(const core::RequestedVariant& v, const SpliceBlock& block, bool minus);

struct SpliceCallTotals {
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t model_calls = 0;
};

struct SpliceJobVariant {
  const variant::ReferenceGenome* genome = nullptr;  // the variant's assembly
  const core::RequestedVariant* variant = nullptr;   // checked against the reference
  SpliceDelta* plus = nullptr;                      // where its deltas go
  SpliceDelta* minus = nullptr;
};

// Scores every variant of `variants` on both strands with `model` (a flanked per-base model of
// `flank`), `distance` around each. Fails as a whole on a worker failure or cancellation.
Status ScoreSpliceBatch(const std::vector<SpliceJobVariant>& variants, const std::string& model,
                        int64_t distance, int64_t flank, core::InferenceBackend& backend,
                        const core::JobContext& context, SpliceCallTotals* totals);

}  // namespace dnaserve::runner
