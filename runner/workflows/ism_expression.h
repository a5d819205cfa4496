// POST /v1/ism with the expression scorer: every SNV of the window scored as the log2 fold
// change of one context's predicted expression of one gene, ALT against REF.
//
// The gene (its start site, TSS):
//   - interval: a start site of the runner's catalogue (the one POST /v1/variants/score's
//     expression scorer reads) whose 9,198 bp expression window (runner/variant/tss_window.h)
//     holds every base of the ISM window. `gene` (symbol or Ensembl gene id, either case) picks
//     among that gene's start sites; without it, every catalogued site is a candidate. Of the
//     candidates, the one whose TSS is nearest the window's centre (the first in TSS order on a
//     tie). None: 422 at [body, scorers, expression, gene] (a gene named) or [body, window].
//   - sequence: the sequence is the expression window itself (9,198 bp, read on the gene's sense
//     strand, TSS at position 4,600), as POST /v1/predict's expression task takes it.
// The window is cut from the context (what the model sees, and nothing else: N past its ends),
// on the gene's sense strand whatever the interval's strand; the ALT windows are the REF window
// with one base changed (variant::AlternateWindow, as variant scoring builds them).
//
// The context: the one requested (`contexts`, one id, CURIE or free text), sent to the worker
// as written, as variant scoring sends it; the worker's match is reported.
//
// A cell: log2((TPM_alt + 1) / (TPM_ref + 1)) (variant::Log2FoldChange) at variant scoring's
// precision (WorkflowPrecision), so it equals the log2_fold_change POST /v1/variants/score
// reports for the same SNV, gene and context whenever the context covers the gene's window.
//
// Batching: one REF row and 3 x L ALT rows, each a whole model input (the expression window is
// fixed, so no two share bases the model could reuse): sent kIsmConcurrency at a time so the
// worker stacks them into shared passes (its fixed rows per pass keep every number the same
// whatever shares a pass). meta.model_calls: 1 (the context's match) + 1 + 3 x L.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/admission/ism.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "core/jobs/job.h"
#include "core/render/json_writer.h"
#include "runner/genome/tss_catalogue.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/ism.h"

namespace dnaserve::runner {

// The chosen start site and how many held the window, or the 422 described above. `window_first`
// and `window_last` are 0-based contig positions; `gene` as the client named it ("" for none).
struct ChosenStartSite {
  const variant::StartSite* site = nullptr;
  int64_t candidates = 0;
};
StatusOr<ChosenStartSite> ChooseStartSite(const variant::TssCatalogue& catalogue,
                                          const std::string& contig, int64_t window_first,
                                          int64_t window_last, const std::string& gene);

// The expression ISM of `admitted` over `context_bases` (plus strand, first base at
// `context_start`). `resolved` is the interval's (nullopt for a sequence); `tss` the runner's
// catalogue (may be null for a sequence).
StatusOr<IsmResult> ScoreIsmExpression(const core::AdmittedIsm& admitted,
                                       const std::string& context_bases, int64_t context_start,
                                       const std::optional<ResolvedInterval>& resolved,
                                       const variant::TssCatalogue* tss,
                                       core::InferenceBackend& backend,
                                       const core::ModelCatalogue& catalogue,
                                       const core::JobContext& context);

// data.expression: the gene (interval: its catalogue names; both: the TSS, 1-based, and strand),
// the candidates, the context as requested and as the worker matched it, the REF level.
void WriteIsmExpression(core::JsonWriter& w, const IsmExpression& expression);

}  // namespace dnaserve::runner
