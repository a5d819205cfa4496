// Admission of POST /v1/variants/score: JSON -> the variants to score and the scorers' options.
// Two kinds of failure, kept apart on purpose. The request as a whole is refused (422
// validation_failed) only for what makes it unanswerable: not a JSON object, `variants` not a
// list of 1-20,000 items (more than 100: a batch job), an unknown scorer, a bad scorer option. Anything wrong with ONE variant
// (a string that does not parse, a symbolic or `*` allele, an indel longer than 50 bp, ...)
// becomes that variant's own error in its result, and the others are still scored. Checks that
// need the reference (unknown contig, position off the contig, REF mismatch, duplicates by the
// reference's contig name) are the runner's (runner/workflows/variant_scoring.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::core {

// data.task, meta.task and the job record's task.
inline constexpr std::string_view kVariantScoreTask = "variant_score";
// Answered synchronously up to this many variants; more (or a VCF body) become an async batch
// job (runner/workflows/variant_score_batch.h) of at most kMaxBatchScoreVariants: 20,000 keeps
// one job's queue entry near 1 MB and its results well inside a client's 64 MiB result
// allowance, and holds a 10,000-record VCF with room for multi-allelic records.
inline constexpr int64_t kMaxSyncScoreVariants = 100;
inline constexpr int64_t kMaxBatchScoreVariants = 20000;
// |len(REF) - len(ALT)| and each allele's length beyond its anchor base.
inline constexpr int64_t kMaxScoredIndelBp = 50;
inline constexpr int64_t kDefaultSpliceDistance = 50;
inline constexpr int64_t kMaxSpliceDistance = 5000;
inline constexpr std::string_view kDefaultScoreAssembly = "GRCh37";
// expression: the contexts (1-16, as the variant workflow's tissues) and the genes counted: a
// TSS within `window` bp of REF. The default is the expression model's half window (4,599 bp),
// the farthest a variant can sit from a TSS and still be inside the model's input; the maximum
// is the variant workflow's.
inline constexpr int64_t kDefaultExpressionWindow = 4599;
inline constexpr int64_t kMaxExpressionWindow = 100000;
inline constexpr int64_t kMaxExpressionContexts = 16;
inline constexpr int64_t kMaxContextTextBytes = 256;
// chromatin: how many features to report (largest |ALT - REF| first).
inline constexpr int64_t kDefaultChromatinTop = 10;
inline constexpr int64_t kMaxChromatinTop = 1000;
// promoter: windows whose centre lies within `distance` bp of the variant.
inline constexpr int64_t kDefaultPromoterDistance = 1000;
inline constexpr int64_t kMaxPromoterDistance = 10000;
// The scorers, in the order their results are written.
inline constexpr const char* kScorerNames = "splice, expression, chromatin, promoter";

// A variant's own error: a code from the closed list below and a message saying what to fix.
//   invalid_variant      not a variant string or object; empty or non-ACGTN allele; ALT = REF
//   unsupported_allele   symbolic (<DEL>), breakend, missing ('.', '*') or multiple ALT alleles
//   unsupported_variant  REF and ALT both longer than one base (MNV, complex): not in SpliceAI's
//                        convention
//   indel_too_long       an insertion or deletion of more than 50 bp
//   (runner) unknown_assembly, unknown_contig, position_out_of_range, reference_mismatch,
//            duplicate_variant
struct VariantProblem {
  std::string code;
  std::string message;
};

struct RequestedVariant {
  // What the client sent for it: the string itself, or for an object the same variant written
  // as "contig:position:REF:ALT" (so every result can be matched to its input).
  std::string input;
  std::string assembly;
  std::string contig;     // as sent ("chr20", "20")
  int64_t position = 0;   // 1-based, of REF's first base
  std::string ref, alt;   // upper case
  std::optional<VariantProblem> problem;
};

struct ValidatedVariantScore {
  std::vector<RequestedVariant> variants;  // in request order, repeats kept
  bool splice = false;                     // the splice scorer was asked for
  int64_t splice_distance = kDefaultSpliceDistance;
  bool expression = false;
  std::vector<std::string> expression_contexts;  // as sent
  int64_t expression_window = kDefaultExpressionWindow;
  bool chromatin = false;
  int64_t chromatin_top = kDefaultChromatinTop;
  bool promoter = false;
  int64_t promoter_distance = kDefaultPromoterDistance;
};

// Malformed JSON -> 400 bad_request; request-level problems -> 422 validation_failed with
// details.errors; per-variant problems -> RequestedVariant::problem.
StatusOr<ValidatedVariantScore> ValidateVariantScoreBody(std::string_view body);

// One variant string, "chr20:5753600:A:G" or "chr20-5753600-A-G", into `out` (assembly left
// as is); a problem when it is not one. Exposed for tests.
void ParseVariantString(std::string_view text, RequestedVariant* out);
// The allele rules above on out->ref / out->alt (upper-cased in place). Exposed for tests.
void CheckAlleles(RequestedVariant* out);

}  // namespace dnaserve::core
