// The find-genes-and-predict-expression workflow, without HTTP or JSON: the annotation stage
// over the submitted region, then the expression stage on each found gene's TSS-centred window
// (tss_window.h). Worker calls go through InferenceBackend one at a time on the job's own
// executor thread, so a region with hundreds of genes holds one executor slot, one concurrency
// lease and one expression window in memory at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "core/dispatch/inference_backend.h"
#include "core/jobs/job.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/predict_request.h"
#include "runner/workflows/tss_window.h"

namespace dnaserve::runner {

// cold_start / load / inference of one stage; the expression stage sums its calls.
struct StageTimings {
  bool cold_start = false;
  int64_t model_load_time_ms = 0;  // only loads that happened (cold calls)
  int64_t inference_time_ms = 0;

  void Add(const worker::v1::PredictResult& result);
};

struct GeneExpression {
  int64_t gene_index = 0;  // index into the annotation's transcripts
  std::string gene_name;   // the transcript's id in the annotation payload
  std::string strand;      // "+" or "-"
  int64_t tss_position = 0;  // as the annotation reports it (shifted with shift_coordinates)
  TssWindowPlan window;
  bool skipped = false;
  std::string skip_reason;
  double expression_log_tpm = 0;  // log(TPM+1); meaningful when not skipped
};

struct FindGenesModels {
  std::string annotation;  // resolved ids
  std::string expression;
};

struct FindGenesResult {
  // The annotation stage as the annotation task would report it (request without its sequence).
  core::ValidatedPredict annotation_input;
  worker::v1::PredictResult annotation;
  FindGenesModels models;  // the ids that ran (as the workers name them)
  StageTimings annotation_timings;
  StageTimings expression_timings;
  std::vector<GeneExpression> genes;  // one per annotation transcript, in its order
  // The training context(s) the description matched, as the expression worker reported it on
  // the first scored gene (the same description every call); unset when no gene was scored or
  // the expression package carries no contexts.
  std::optional<worker::v1::DescriptionMatch> description_match;

  int64_t genes_predicted() const;
  int64_t genes_skipped() const;
};

// Runs both stages. Progress: the annotation stage covers 0-50 %, the expression stage 50-100 %
// gene by gene. A failing worker call of either stage fails the whole run with that call's
// status (its message says which stage); cancellation is checked before every call.
StatusOr<FindGenesResult> RunFindGenes(const core::ValidatedFindGenes& input,
                                       const FindGenesModels& models, core::InferenceBackend& backend,
                                       const core::JobContext& context);

}  // namespace dnaserve::runner
