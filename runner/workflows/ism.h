// POST /v1/ism on a runner (core/validation/ism_request.h): every SNV of a window of at most
// 200 bp, scored by one variant scorer (splice, chromatin or promoter; expression is
// ism_expression.h's) inside its context.
//
// The context is what the model sees, and nothing else: the sequence sent, or the interval's
// bases read from the reference (upper-case, N for IUPAC codes); a scorer window reaching past
// either end reads N there, as it does at a contig's end. Each SNV is scored by the variant
// scorer itself (variant_scoring.h ScoreVariants, one variant per call) on that context, held
// as a one-contig reference, so a cell is the value POST /v1/variants/score reports for the same
// SNV whenever the context covers the scorer's reach (splice: distance + flank_bp on each
// side; chromatin: half the model's width; promoter: distance + half the width), byte for byte.
//
// The cells: splice DS_max (the larger strand's, as variant scoring reports it), chromatin the
// delta of the feature with the largest |ALT - REF| (its name beside it; `top` is accepted and
// has no effect on the matrix), promoter the delta of the largest window scores.
//
// Batching: the 3L SNVs are scored kIsmConcurrency at a time, so the worker stacks their forwards
// into shared passes (worker/README.md "Execution"; its fixed-shape passes keep every score the
// same whatever shares a pass), and every distinct worker call is made once: the REF windows a
// position's three ALTs share (and promoter windows neighbouring positions share) are computed
// once (IsmCallCache). meta.model_calls counts the distinct calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/admission/ism.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "core/jobs/job.h"
#include "core/render/predict_response.h"
#include "dnaserve/jobs/v1/command.pb.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/variant_resources.h"
#include "runner/workflows/variant_scorers.h"

namespace dnaserve::runner {

// SNVs scored at once.
inline constexpr int kIsmConcurrency = 8;

// One SNV's cell.
struct IsmCell {
  char alt = 'N';
  double delta = 0;     // as published (rounded as variant scoring rounds it)
  std::string feature;  // chromatin: the feature the delta is of
};

struct IsmPosition {
  int64_t position = 0;  // as the window names it (sequence or contig coordinates)
  char ref = 'N';
  std::vector<IsmCell> cells;  // the three ALT bases in A, C, G, T order
};

// The expression scorer's gene and context (ism_expression.h).
struct IsmExpression {
  variant::StartSite site;  // interval: the catalogue's; sequence: tss 4599 on '+', no names
  bool annotated = false;   // from the start-site catalogue (interval input)
  int64_t candidates = 0;   // start sites whose windows hold the ISM window
  ExpressionContext context;
  double ref_log_tpm = 0;   // the REF window's prediction in that context
};

struct IsmResult {
  std::string scorer;
  std::string model, package_digest;
  int64_t window_bp = 0;  // the model's input width (chromatin, promoter); 0 for splice
  int64_t context_length = 0;
  std::optional<ResolvedInterval> interval;  // echoed in meta.interval; none for a sequence
  std::optional<IsmExpression> expression;   // the expression scorer only
  std::vector<IsmPosition> positions;
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t model_calls = 0;
};

// Scores every SNV of the window of `admitted.input` inside `context_bases` (whose first base is
// at `context_start`: 1 for a sequence, the interval's start otherwise). For an interval on
// strand '-', `context_bases` are still the plus strand's: the model is given their reverse
// complement, and the positions and bases reported are the plus strand's.
StatusOr<IsmResult> ScoreIsm(const core::AdmittedIsm& admitted, const std::string& context_bases,
                             int64_t context_start, core::InferenceBackend& backend,
                             const core::ModelCatalogue& catalogue,
                             const core::JobContext& context);

std::string RenderIsmJson(const core::AdmittedIsm& admitted, const IsmResult& result,
                          const core::ResponseIds& ids);

StatusOr<std::unique_ptr<core::Job>> BuildIsmJob(const jobs::v1::IsmCommand& command,
                                                 core::InferenceBackend* backend,
                                                 const core::ModelCatalogue* catalogue,
                                                 const VariantResources* resources);

}  // namespace dnaserve::runner
