// Admission of POST /v1/ism (in-silico mutagenesis, issue 25 scope 4): every SNV of a window of
// at most 200 bp, scored by one variant scorer inside a context the client gives as `sequence`
// or as `interval` (genome_interval.h), as the prediction tasks accept them.
//
// The body: {sequence | interval, window {start, end}, scorers {<one scorer>: options}}.
// `window` is 1-based and inclusive like an interval: positions in `sequence`, or positions on
// the interval's contig (inside the interval). `scorers` is read by the variant scorer's own
// validation (variant_score_request.h), so a scorer takes exactly the options it takes in
// POST /v1/variants/score and a bad one gets the same error at the same location; absent, the
// splice scorer with its defaults.
//
// What the gateway refuses here (422 validation_failed): a window longer than 200 bp, a window
// outside the sequence or the interval, N in the window's bases (sequence; an interval's bases
// are the runner's to read, and it refuses them the same way), more or fewer than one scorer,
// an unknown scorer or option.
//
// The expression scorer (runner/workflows/ism_expression.h) takes exactly one context
// (`contexts`: one id, CURIE or free text) and, with an interval, an optional `gene` (symbol or
// Ensembl id) whose start site's 9,198 bp window must hold the ISM window; its variant-scoring
// `window` option (which genes count) has no meaning here and is refused. With a sequence the
// sequence is the expression window itself (9,198 bp, TSS at position 4,600, sense strand), so
// any other length and any `gene` are refused at their fields.
//
// An interval on strand '-' is scored on its reverse complement (what the model sees), and
// reported as on '+': window positions on the contig, REF and ALT the plus strand's bases, as a
// VCF and POST /v1/variants/score name them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/task.h"
#include "core/validation/genome_interval.h"
#include "core/validation/variant_score_request.h"

namespace dnaserve::core {

// data.task, meta.task and the job record's task.
inline constexpr std::string_view kIsmTask = "ism";
inline constexpr int64_t kMaxIsmWindowBp = 200;

struct ValidatedIsm {
  std::string sequence;                   // normalised bases; empty with an interval
  std::optional<GenomeInterval> interval;
  int64_t window_start = 0;  // 1-based, inclusive: in the sequence, or on the contig
  int64_t window_end = 0;
  std::string scorer;              // "splice", "chromatin", "promoter" or "expression"
  ValidatedVariantScore options;   // that scorer asked for with its options; no variants
  std::string expression_gene;     // expression with an interval: the gene named; "": nearest
};

// Malformed JSON -> 400 bad_request; everything else wrong -> 422 validation_failed.
StatusOr<ValidatedIsm> ValidateIsmBody(std::string_view body);

// The window's 0-based offset in the context that starts at `context_start` (1 for a
// sequence, the interval's start otherwise).
inline int64_t WindowOffset(const ValidatedIsm& ism, int64_t context_start) {
  return ism.window_start - context_start;
}

// The first N in bases[from, from + length) as a 422 at [body, window] naming its position
// (`first_position` is the coordinate of bases[from]); OK when there is none.
Status CheckWindowBases(const std::string& bases, int64_t from, int64_t length,
                        int64_t first_position);

}  // namespace dnaserve::core
