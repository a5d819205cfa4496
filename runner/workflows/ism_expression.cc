#include "runner/workflows/ism_expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <utility>

#include "common/task.h"
#include "common/tss_window.h"
#include "core/dispatch/executor.h"
#include "core/validation/json_walk.h"
#include "runner/variant/annotation_engine.h"
#include "runner/variant/tss_window.h"
#include "runner/workflows/backend_expression_scorer.h"
#include "runner/workflows/variant_score_response.h"

namespace dnaserve::runner {
namespace {

namespace wv1 = worker::v1;

constexpr char kBases[] = {'A', 'C', 'G', 'T'};
// Rows handed to the scorer at once: enough for every concurrent call to find company in the
// worker's passes, few enough that progress moves.
constexpr size_t kRowsPerStep = 8 * kIsmConcurrency;

bool SameName(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool Names(const variant::StartSite& site, const std::string& gene) {
  return SameName(site.gene_symbol, gene) || SameName(site.gene_id, gene);
}

// True when the site's expression window holds every base of [first, last] (0-based).
bool Holds(const variant::StartSite& site, int64_t first, int64_t last) {
  const PlusStrandSpan span = TssWindowSpan(site.tss, site.strand == variant::Strand::kMinus);
  return span.start <= first && last < span.end;
}

Status GeneError(std::string message) {
  return core::ValidationFailedStatus(
      {FieldError{{"body", "scorers", "expression", "gene"}, std::move(message), "value_error"}});
}

// Counts what the worker says of its calls (meta's cold start and times); no call is changed.
class TallyingBackend : public core::InferenceBackend {
 public:
  explicit TallyingBackend(core::InferenceBackend* inner) : inner_(inner) {}

  StatusOr<wv1::PredictResult> Predict(Task task, const wv1::PredictRequest& request,
                                       const core::CallContext& context,
                                       const core::ProgressCallback& on_progress) override {
    auto result = inner_->Predict(task, request, context, on_progress);
    std::lock_guard<std::mutex> lock(mu_);
    if (result.ok()) calls_.Add(*result);
    return result;
  }
  StatusOr<std::vector<wv1::ModelInfo>> ListModels(Task task) override {
    return inner_->ListModels(task);
  }
  ScorerCalls Totals() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  core::InferenceBackend* inner_;
  std::mutex mu_;
  ScorerCalls calls_;
};

// The model the scorer uses, checked against the one admission resolved.
StatusOr<ScorerModel> ExpressionModel(const core::AdmittedIsm& admitted,
                                      BackendExpressionScorer* scorer,
                                      const core::ModelCatalogue& catalogue) {
  auto model = ScorerModelOf(Task::kExpression, admitted.scorer.expression_model, catalogue);
  if (!model.ok()) return model.status();
  auto used = scorer->ModelId();
  if (!used.ok()) return used.status();
  if (*used != model->model) {
    return Unavailable("the expression default model changed while the request waited ('" +
                       model->model + "' -> '" + *used + "'); retry");
  }
  return model;
}

// The gene the cells are of (ism_expression.h says how it is chosen).
StatusOr<IsmExpression> ChooseGene(const core::AdmittedIsm& admitted,
                                   const std::optional<ResolvedInterval>& resolved,
                                   const variant::TssCatalogue* tss) {
  const core::ValidatedIsm& in = admitted.input;
  IsmExpression chosen;
  if (!resolved) {
    // The sequence is the expression window (admission checked its length).
    chosen.site.tss = kTssIndexInWindow;
    chosen.site.strand = variant::Strand::kPlus;
    chosen.candidates = 1;
    return chosen;
  }
  if (tss == nullptr) {
    return Unavailable("the expression scorer needs the start-site catalogue, and this runner "
                       "holds none (DNASERVE_GRCH37_CATALOGUE)");
  }
  auto site = ChooseStartSite(*tss, resolved->reference_contig, in.window_start - 1,
                              in.window_end - 1, in.expression_gene);
  if (!site.ok()) return site.status();
  chosen.site = *site->site;
  chosen.annotated = true;
  chosen.candidates = site->candidates;
  return chosen;
}

struct Rows {
  std::vector<std::string> windows;  // [0]: REF; then 3 per position, ALT in A, C, G, T order
  std::vector<char> alts;            // per ALT row
};

// The REF window and every SNV's ALT window, cut from the context.
StatusOr<Rows> BuildRows(const core::ValidatedIsm& in, const std::string& context_bases,
                         int64_t context_start, const variant::StartSite& site) {
  const int64_t origin = context_start - 1;  // 0-based coordinate of context_bases[0]
  const int64_t size = static_cast<int64_t>(context_bases.size());
  const variant::FetchBases fetch = [&](int64_t from, int64_t to) -> StatusOr<std::string> {
    std::string out;
    out.reserve(static_cast<size_t>(std::max<int64_t>(0, to - from)));
    for (int64_t p = from; p < to; ++p) {
      const int64_t i = p - origin;
      out += i >= 0 && i < size ? context_bases[static_cast<size_t>(i)] : 'N';
    }
    return out;
  };
  Rows rows;
  auto ref = variant::ReferenceWindow(site, fetch);
  if (!ref.ok()) return ref.status();
  rows.windows.push_back(std::move(ref).value());
  for (int64_t pos = in.window_start; pos <= in.window_end; ++pos) {
    const std::string ref_base(1, context_bases[static_cast<size_t>(pos - context_start)]);
    for (char alt : kBases) {
      if (alt == ref_base[0]) continue;
      const std::string alt_base(1, alt);
      auto window = variant::AlternateWindow(site, {pos - 1, ref_base, alt_base}, fetch);
      if (!window.ok()) return window.status();
      rows.windows.push_back(std::move(window).value());
      rows.alts.push_back(alt);
    }
  }
  return rows;
}

// Every row's log(TPM+1) in the context, kRowsPerStep rows at a time, with progress.
StatusOr<std::vector<double>> Predict(const Rows& rows, const std::string& description,
                                      BackendExpressionScorer* scorer,
                                      const core::JobContext& context) {
  std::vector<double> values;
  values.reserve(rows.windows.size());
  for (size_t from = 0; from < rows.windows.size(); from += kRowsPerStep) {
    const size_t to = std::min(rows.windows.size(), from + kRowsPerStep);
    std::vector<variant::ScoreRequest> step;
    for (size_t i = from; i < to; ++i) step.push_back({rows.windows[i], description});
    auto scored = scorer->Score(step, context.call.cancelled);
    if (!scored.ok()) return scored.status();
    for (double v : *scored) {
      if (!std::isfinite(v)) return Internal("the expression model returned a non-finite value");
      values.push_back(v);
    }
    context.Progress(100.0 * static_cast<double>(to) / static_cast<double>(rows.windows.size()),
                     "scored " + std::to_string(to) + " of " +
                         std::to_string(rows.windows.size()) + " windows");
  }
  return values;
}

}  // namespace

StatusOr<ChosenStartSite> ChooseStartSite(const variant::TssCatalogue& catalogue,
                                          const std::string& contig, int64_t window_first,
                                          int64_t window_last, const std::string& gene) {
  if (!gene.empty() &&
      std::none_of(catalogue.sites().begin(), catalogue.sites().end(),
                   [&](const variant::StartSite& s) { return Names(s, gene); })) {
    return GeneError("no start site of a gene named '" + gene + "' (symbol or Ensembl gene id) "
                     "is in the start-site catalogue (" + catalogue.info().build + ")");
  }
  ChosenStartSite chosen;
  int64_t best = 0;
  for (const variant::StartSite* site :
       catalogue.SitesBetween(contig, window_first - kExpressionWindowBp,
                              window_last + kExpressionWindowBp)) {
    if (!gene.empty() && !Names(*site, gene)) continue;
    if (!Holds(*site, window_first, window_last)) continue;
    ++chosen.candidates;
    // Twice the distance from the TSS to the window's centre, in whole bp.
    const int64_t distance = std::llabs(2 * site->tss - (window_first + window_last));
    if (chosen.site == nullptr || distance < best) {
      chosen.site = site;
      best = distance;
    }
  }
  if (chosen.site != nullptr) return chosen;
  const std::string window = std::to_string(window_first + 1) + "-" +
                             std::to_string(window_last + 1);
  if (!gene.empty()) {
    return GeneError("no start site of '" + gene + "' has an expression window (" +
                     std::to_string(kExpressionWindowBp) + " bp centred on its TSS) that holds "
                     "the window " + window + " on " + contig);
  }
  return core::ValidationFailedStatus({FieldError{
      {"body", "window"},
      "no gene's start site has an expression window (" + std::to_string(kExpressionWindowBp) +
          " bp centred on its TSS) that holds the window " + window + " on " + contig +
          ": the expression scorer mutates bases the model of some gene sees (POST "
          "/v1/find-genes lists the genes of a region)",
      "value_error"}});
}

StatusOr<IsmResult> ScoreIsmExpression(const core::AdmittedIsm& admitted,
                                       const std::string& context_bases, int64_t context_start,
                                       const std::optional<ResolvedInterval>& resolved,
                                       const variant::TssCatalogue* tss,
                                       core::InferenceBackend& backend,
                                       const core::ModelCatalogue& catalogue,
                                       const core::JobContext& context) {
  const core::ValidatedIsm& in = admitted.input;
  if (in.options.expression_contexts.size() != 1) {
    return Internal("ISM: the expression scorer takes exactly one context");
  }
  auto chosen = ChooseGene(admitted, resolved, tss);
  if (!chosen.ok()) return chosen.status();
  auto rows = BuildRows(in, context_bases, context_start, chosen->site);
  if (!rows.ok()) return rows.status();

  TallyingBackend tally(&backend);
  // Helpers for the concurrent calls; the job's own thread takes part too.
  core::Executor executor(kIsmConcurrency - 1, kIsmConcurrency);
  BackendExpressionScorer scorer(&tally, &catalogue, &executor, kIsmConcurrency, context.call);
  auto model = ExpressionModel(admitted, &scorer, catalogue);
  if (!model.ok()) return model.status();
  const std::string& requested = in.options.expression_contexts.front();
  auto match = scorer.MatchTissue(requested, context.call.cancelled);
  if (!match.ok()) return match.status();
  chosen->context.requested = requested;
  if (match->has_value() && (*match)->matched && !(*match)->contexts.empty()) {
    chosen->context.matched = true;
    chosen->context.id = (*match)->contexts.front().id;
    chosen->context.name = (*match)->contexts.front().name;
  }
  auto values = Predict(*rows, requested, &scorer, context);
  executor.Shutdown();
  if (!values.ok()) return values.status();
  if (context.Cancelled()) return Cancelled("the request was cancelled");

  IsmResult result;
  result.scorer = in.scorer;
  result.model = model->model;
  result.package_digest = model->package_digest;
  result.window_bp = model->window_bp;
  result.context_length = static_cast<int64_t>(context_bases.size());
  const double ref = values->front();
  chosen->ref_log_tpm = ref;
  size_t row = 1;
  for (int64_t pos = in.window_start; pos <= in.window_end; ++pos) {
    IsmPosition position;
    position.position = pos;
    position.ref = context_bases[static_cast<size_t>(pos - context_start)];
    for (int k = 0; k < 3; ++k, ++row) {
      IsmCell cell;
      cell.alt = rows->alts[row - 1];
      cell.delta = WorkflowPrecision(variant::Log2FoldChange((*values)[row], ref));
      position.cells.push_back(cell);
    }
    result.positions.push_back(std::move(position));
  }
  result.expression = std::move(chosen).value();
  const ScorerCalls totals = tally.Totals();
  result.cold_start = totals.cold_start;
  result.model_load_time_ms = totals.model_load_time_ms;
  result.inference_time_ms = totals.inference_time_ms;
  result.model_calls = scorer.calls();
  return result;
}

void WriteIsmExpression(core::JsonWriter& w, const IsmExpression& e) {
  w.Key("expression");
  w.StartObject();
  w.Key("gene");
  w.StartObject();
  if (e.annotated) {
    w.Field("gene_symbol", e.site.gene_symbol);
    w.Field("gene_id", e.site.gene_id);
    w.Field("transcript_id", e.site.transcript_id);
  }
  w.Field("tss", e.site.tss + 1);
  w.Field("strand", std::string(1, variant::StrandChar(e.site.strand)));
  w.EndObject();
  w.Field("candidates", e.candidates);
  w.Key("context");
  w.StartObject();
  w.Field("requested", e.context.requested);
  w.Field("matched", e.context.matched);
  if (e.context.matched) {
    w.Field("id", e.context.id);
    w.Field("name", e.context.name);
  }
  w.EndObject();
  w.Field("ref_log_tpm", WorkflowPrecision(e.ref_log_tpm));
  w.Field("fold_change", variant::kFoldChangeDefinition);
  w.EndObject();
}

}  // namespace dnaserve::runner
