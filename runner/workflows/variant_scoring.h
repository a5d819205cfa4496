// POST /v1/variants/score on a runner: each variant checked against the reference, its REF and
// ALT windows cut from it, scored by the splice worker on both strands, and reduced to
// SpliceAI's delta scores (splice_delta.h). A variant that cannot be scored gets its own error;
// only what stops every variant (no reference on this runner, the splice model unusable, a
// worker failure, cancellation) fails the request.
//
// Splice windows (splice_batch.h): each variant's REF and ALT are model inputs of the smallest
// width the model needs (the scored positions, variant +- distance, a few phase bases, and the
// manifest's flank_bp of real sequence each side: 2,165 bp for an SNV at distance 50 on
// splice-human, against the 15 kb serving window), REF inputs are shared by variants a few bases
// apart, and every variant's inputs go to the worker packed in calls of up to 128 model rows.
//
// Determinism: a variant's inputs depend only on the variant, the distance and the reference,
// never on the other variants of the request; each is one row of the same shape as every other
// of its width, so with the worker's fixed-shape passes (--batch-rows-per-pass, on by default)
// the same variant gets the same bits alone or among 100, or in any chunk of a VCF job. Scores
// are published rounded to 4 decimals.
#pragma once

#include <optional>
#include <string>
#include <utility>
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
  // Served from the answer cache (variant_answers.h) instead of the scorers: each scorer's
  // result as rendered when it was computed ("splice" -> its JSON object), in write order.
  std::vector<std::pair<std::string, std::string>> recalled;
  // And each scorer's `quantiles` entry as rendered then ("splice" -> its JSON value), in write
  // order: a recalled result must carry the same quantiles as a computed one.
  std::vector<std::pair<std::string, std::string>> recalled_quantiles;
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

// Answers kept from earlier requests (variant_answers.h implements it over the answer cache).
class VariantAnswers {
 public:
  virtual ~VariantAnswers() = default;
  // After the checks: fills `recalled` of each checked variant whose every scorer's answer is
  // kept; those are not scored again.
  virtual void Recall(VariantScoreResult* result) = 0;
  // After one variant was scored: keeps its answers.
  virtual void Remember(const ScoredVariant& scored, const VariantScoreResult& result) = 0;
};

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
  VariantAnswers* answers = nullptr;  // null: every variant is scored
};

// Scores every variant without a problem with every scorer asked for. The models as resolved
// at admission; the catalogue supplies their digests and widths.
StatusOr<VariantScoreResult> ScoreVariants(const core::AdmittedVariantScore& admitted,
                                           const ScoringServices& services,
                                           const core::JobContext& context);

}  // namespace dnaserve::runner
