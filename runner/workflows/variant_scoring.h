// POST /v1/variants/score on a runner: each variant checked against the reference, its REF and
// ALT windows cut from it, scored by the splice worker on both strands, and reduced to
// SpliceAI's delta scores (splice_delta.h). A variant that cannot be scored gets its own error;
// only what stops every variant (no reference on this runner, the splice model unusable, a
// worker failure, cancellation) fails the request.
//
// Windows: the smallest the model needs, not the package's 15 kb serving window: the scored
// positions (variant +- distance) plus the model's flank_bp (1,000 bp for splice-human, whose
// receptive field is +-780 bp) of real sequence on each side; beyond that the worker pads with
// N exactly as at a sequence end. The worker still runs one 15 kb forward per window (its input
// shape is fixed), so the saving is in bytes and scores sent, not in forward time.
//
// Determinism: a variant's windows depend only on the variant, the distance and the reference,
// never on the other variants of the request, and the job makes its worker calls one at a time
// (each one window, one forward), so the same variant gets the same forwards alone or among 100.
// The worker may still stack two concurrent requests' windows into one pass, which can move a
// float32 score by a few ulps (worker/README.md "Numerics"); scores are published rounded to 4
// decimals (runner/README.md says how rare a visible difference is).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "core/admission/admission.h"
#include "core/jobs/job.h"
#include "core/validation/variant_score_request.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/splice_delta.h"
#include "runner/workflows/variant_quantiles.h"
#include "runner/workflows/variant_scorers.h"

namespace dnaserve::runner {

// The reference genomes a runner holds, by assembly name (exact, "GRCh37").
class ReferenceLookup {
 public:
  virtual ~ReferenceLookup() = default;
  virtual const variant::ReferenceGenome* Find(const std::string& assembly) const = 0;
  // The names held, for an unknown_assembly message.
  virtual std::vector<std::string> Names() const = 0;
};

struct SpliceScorerInfo {
  std::string model;           // id
  std::string package_digest;  // "sha256:..." ("" from a worker older than the field)
  int64_t distance = 0;
  int64_t flank_bp = 0;
};

struct ScoredVariant {
  core::RequestedVariant variant;  // assembly and contig as the reference names them once found
  std::optional<core::VariantProblem> problem;
  std::optional<SpliceDelta> splice_plus, splice_minus;
  std::optional<std::vector<ExpressionGene>> expression;  // set when the scorer ran
  std::optional<std::vector<ChromatinDelta>> chromatin;
  std::optional<PromoterDelta> promoter;
};

struct VariantScoreResult {
  std::optional<SpliceScorerInfo> splice;
  std::optional<ExpressionScorerInfo> expression;  // set when asked for (likewise below)
  std::optional<ChromatinScorerInfo> chromatin;
  std::optional<PromoterScorerInfo> promoter;
  std::vector<ScoredVariant> variants;  // in request order
  VariantBackgrounds backgrounds;       // for the quantiles (variant_quantiles.h)
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t model_calls = 0;
};

// The variant checks that need the reference, in request order: unknown_assembly,
// unknown_contig, position_out_of_range, reference_mismatch, then duplicate_variant for a
// variant equal (same assembly, contig by the reference's name, position, REF, ALT) to an
// earlier one. Variants with a problem from admission keep it.
std::vector<ScoredVariant> CheckVariants(const std::vector<core::RequestedVariant>& requested,
                                         const ReferenceLookup& references);

// What scoring runs with on a runner.
struct ScoringServices {
  const ReferenceLookup* references = nullptr;
  const core::ModelCatalogue* catalogue = nullptr;
  core::InferenceBackend* backend = nullptr;
  // The start-site catalogue of the assembly held (GRCh37); null: the expression scorer is
  // unavailable.
  const variant::TssCatalogue* tss = nullptr;
  core::Executor* executor = nullptr;  // the expression scorer's concurrent calls (may be null)
  int expression_concurrency = 1;
};

// Scores every variant without a problem with every scorer asked for. The models as resolved
// at admission; the catalogue supplies their digests and widths.
StatusOr<VariantScoreResult> ScoreVariants(const core::AdmittedVariantScore& admitted,
                                           const ScoringServices& services,
                                           const core::JobContext& context);

}  // namespace dnaserve::runner
