// The variant scorers beside splice (variant_scoring.h runs them): expression, chromatin and
// promoter, each comparing the model's reading of the reference with its reading of the
// alternate haplotype, cut from the reference genome the runner holds.
//
// expression: the genes with a start site within `window` bp of REF (the variant workflow's
//   rule, runner/variant/annotation_engine.h), and for each requested context the model's
//   log(TPM+1) for the 9,198 bp REF and ALT windows around the TSS (runner/variant/tss_window.h:
//   the workflow's windows) and log2((TPM_alt + 1) / (TPM_ref + 1)) (Log2FoldChange, the
//   workflow's). Scored by the workflow's own ExpressionScorer (BackendExpressionScorer), the
//   context passed as written, so the worker resolves it by id, CURIE or free text as the
//   expression task does; an ALT window equal to its REF window is not sent (fold change 0).
// chromatin: one window of the model's width (context_window_bp) with the variant's first REF
//   base at its centre, REF and ALT; every feature's probability, the `top` largest |ALT - REF|
//   kept (ties: model output order).
// promoter: windows of the model's width every half width whose centre lies within `distance`
//   bp of the variant's first REF base (offsets 0, +-W/2, +-W, ...); each scored alone (one
//   forward, no padding), REF and ALT; the largest REF window score, the largest ALT window
//   score and their difference. A window that does not overlap REF reads the same bases in both
//   and is scored once.
//
// The ALT haplotype of a window starting at `start` (0-based, on the plus strand): the
// reference up to REF, ALT, the reference after REF, cut to the window's width. A window that
// starts inside a deleted REF base starts at the ALT base there, or after ALT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/dispatch/executor.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "core/jobs/job.h"
#include "core/validation/variant_score_request.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"

namespace dnaserve::runner {

// The model a scorer used, as every response names it.
struct ScorerModel {
  std::string model;           // id
  std::string package_digest;  // "sha256:..." ("" from a worker older than the field)
  int64_t window_bp = 0;       // the model's input width
};

// Model calls a request made, for meta.
struct ScorerCalls {
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t model_calls = 0;
  void Add(const worker::v1::PredictResult& result);
};

// ---- expression
struct ExpressionContext {
  std::string requested;  // as sent
  bool matched = false;   // the worker's description_match
  std::string id, name;   // the context predicted for ("" when unmatched)
};

struct ExpressionScorerInfo {
  ScorerModel model;
  int64_t window = 0;
  std::vector<ExpressionContext> contexts;
  std::string catalogue_build, catalogue_md5;
};

struct ExpressionGene {
  variant::StartSite site;
  int64_t tss_distance = 0;  // runner/variant/tss_window.h TssDistance
  // Per context, in request order: the model's log(TPM+1).
  std::vector<double> ref_log_tpm, alt_log_tpm;
};

// ---- chromatin
struct ChromatinDelta {
  int index = 0;  // model output order
  std::string name, category;
  double ref = 0, alt = 0;
};

struct ChromatinScorerInfo {
  ScorerModel model;
  int64_t top = 0;
  int64_t features_total = 0;
};

// ---- promoter
struct PromoterDelta {
  double ref = 0, alt = 0;  // the largest window score of each allele
  int64_t ref_offset = 0;   // where that window's centre is, bp from the variant
  int64_t alt_offset = 0;
  int64_t windows = 0;      // windows compared
};

struct PromoterScorerInfo {
  ScorerModel model;
  int64_t distance = 0;
  int64_t step = 0;  // bp between window centres
};

// What a scorer reads for one variant: its assembly's reference, the variant (checked against
// it), and the worker calls so far.
struct VariantSite {
  const variant::ReferenceGenome* genome = nullptr;
  const core::RequestedVariant* variant = nullptr;
};

// The plus-strand bases of the ALT haplotype from `start` (0-based), `width` of them.
StatusOr<std::string> AltHaplotype(const VariantSite& at, int64_t start, int64_t width);

// A scorer's model from the catalogue (the id admission resolved): its digest and width.
StatusOr<ScorerModel> ScorerModelOf(Task task, const std::string& model,
                                    const core::ModelCatalogue& catalogue);

class ExpressionVariantScorer {
 public:
  ExpressionVariantScorer(core::InferenceBackend* backend, const core::ModelCatalogue* catalogue,
                          core::Executor* executor, int concurrency, core::CallContext call);
  ~ExpressionVariantScorer();
  // Resolves the model and asks the worker which context each request names.
  StatusOr<ExpressionScorerInfo> Prepare(const std::string& model,
                                         const std::vector<std::string>& contexts,
                                         int64_t window, const variant::TssCatalogue* tss);
  StatusOr<std::vector<ExpressionGene>> Score(const VariantSite& at, ScorerCalls* calls);
  // Worker calls made so far (Prepare's context matches included).
  int64_t calls() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

StatusOr<std::vector<ChromatinDelta>> ScoreChromatin(const VariantSite& at,
                                                     ChromatinScorerInfo* info,
                                                     core::InferenceBackend& backend,
                                                     const core::JobContext& context,
                                                     ScorerCalls* calls);

StatusOr<PromoterDelta> ScorePromoter(const VariantSite& at, const PromoterScorerInfo& info,
                                      core::InferenceBackend& backend,
                                      const core::JobContext& context, ScorerCalls* calls);

}  // namespace dnaserve::runner
