#include "runner/workflows/variant_scorers.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "common/task.h"
#include "runner/variant/tss_window.h"
#include "runner/workflows/backend_expression_scorer.h"

namespace dnaserve::runner {
namespace {

namespace wv1 = worker::v1;

int64_t RefStart(const VariantSite& at) { return at.variant->position - 1; }
int64_t RefLength(const VariantSite& at) { return static_cast<int64_t>(at.variant->ref.size()); }

// True when [start, start + width) holds a base of REF: only such a window differs in ALT.
bool Overlaps(const VariantSite& at, int64_t start, int64_t width) {
  return start < RefStart(at) + RefLength(at) && RefStart(at) < start + width;
}

StatusOr<wv1::PredictResult> PredictOne(Task task, wv1::PredictRequest request,
                                        core::InferenceBackend& backend,
                                        const core::JobContext& context, ScorerCalls* calls) {
  if (context.Cancelled()) return Cancelled("the request was cancelled");
  request.set_sequence_name("variant");
  request.set_result_format(wv1::RESULT_FORMAT_SCORES);
  auto result = backend.Predict(task, request, context.call, nullptr);
  ++calls->model_calls;
  if (!result.ok()) return result.status();
  calls->Add(*result);
  return result;
}

// Every feature's probability in the one window of `bases` (a feature the worker leaves out
// scored 0: it reports only those above the threshold, and the threshold is 0).
StatusOr<std::vector<double>> ChromatinProbabilities(const std::string& bases,
                                                     ChromatinScorerInfo* info,
                                                     core::InferenceBackend& backend,
                                                     const core::JobContext& context,
                                                     ScorerCalls* calls,
                                                     std::vector<ChromatinDelta>* labels) {
  wv1::PredictRequest request;
  request.set_model(info->model.model);
  request.set_sequence(bases);
  request.mutable_chromatin()->set_threshold(0.0);
  auto result = PredictOne(Task::kChromatin, std::move(request), backend, context, calls);
  if (!result.ok()) return result.status();
  const wv1::ChromatinResult& chromatin = result->chromatin();
  if (chromatin.windows_size() != 1 || chromatin.features_total() <= 0) {
    return Internal("the chromatin model '" + info->model.model + "' did not score one window");
  }
  info->features_total = chromatin.features_total();
  std::vector<double> out(static_cast<size_t>(chromatin.features_total()), 0.0);
  if (labels->size() != out.size()) labels->assign(out.size(), ChromatinDelta{});
  for (const wv1::ChromatinFeature& f : chromatin.windows(0).features()) {
    if (f.index() < 0 || f.index() >= chromatin.features_total()) {
      return Internal("the chromatin model reported feature " + std::to_string(f.index()) +
                      " of " + std::to_string(chromatin.features_total()));
    }
    out[static_cast<size_t>(f.index())] = f.probability();
    ChromatinDelta& label = (*labels)[static_cast<size_t>(f.index())];
    label.index = f.index();
    label.name = f.name();
    label.category = f.category();
  }
  return out;
}

StatusOr<double> PromoterWindowScore(const std::string& bases, const PromoterScorerInfo& info,
                                     core::InferenceBackend& backend,
                                     const core::JobContext& context, ScorerCalls* calls) {
  wv1::PredictRequest request;
  request.set_model(info.model.model);
  request.set_sequence(bases);
  request.mutable_promoter()->set_threshold(0.5);  // unused: the score is read, not the call
  auto result = PredictOne(Task::kPromoter, std::move(request), backend, context, calls);
  if (!result.ok()) return result.status();
  if (result->promoter().windows_size() != 1) {
    return Internal("the promoter model '" + info.model.model + "' did not score one window");
  }
  return result->promoter().windows(0).score();
}

}  // namespace

void ScorerCalls::Add(const wv1::PredictResult& result) {
  if (result.cold_start()) {
    cold_start = true;
    model_load_time_ms += result.model_load_time_ms();
  }
  inference_time_ms += result.inference_time_ms();
}

StatusOr<std::string> AltHaplotype(const VariantSite& at, int64_t start, int64_t width) {
  const core::RequestedVariant& v = *at.variant;
  const int64_t ref_start = RefStart(at);
  const int64_t ref_end = ref_start + RefLength(at);
  std::string out;
  if (start < ref_start) {
    auto before = at.genome->Fetch(v.contig, start, ref_start);
    if (!before.ok()) return before.status();
    out = std::move(*before);
  }
  // From inside REF: ALT from the same offset, or nothing of it past its end.
  const auto skip = static_cast<size_t>(std::max<int64_t>(0, start - ref_start));
  if (skip < v.alt.size()) out += v.alt.substr(skip);
  const int64_t missing = width - static_cast<int64_t>(out.size());
  if (missing > 0) {
    auto after = at.genome->Fetch(v.contig, ref_end, ref_end + missing);
    if (!after.ok()) return after.status();
    out += *after;
  }
  out.resize(static_cast<size_t>(width), 'N');
  return out;
}

StatusOr<ScorerModel> ScorerModelOf(Task task, const std::string& model,
                                    const core::ModelCatalogue& catalogue) {
  auto info = catalogue.Resolve(task, model);
  if (!info.ok()) return info.status();
  const int64_t width =
      info->trained_window_bp() > 0 ? info->trained_window_bp() : info->context_window_bp();
  if (width <= 0) {
    return Unavailable("the " + std::string(TaskName(task)) + " model '" + model +
                       "' publishes no input width");
  }
  return ScorerModel{info->id(), info->package_digest(), width};
}

// ---- expression

struct ExpressionVariantScorer::State {
  State(core::InferenceBackend* backend, const core::ModelCatalogue* catalogue,
        core::Executor* executor, int concurrency, core::CallContext call)
      : catalogue(catalogue), scorer(backend, catalogue, executor, concurrency, std::move(call)) {}
  const core::ModelCatalogue* catalogue;
  BackendExpressionScorer scorer;
  std::vector<std::string> contexts;
  int64_t window = 0;
  const variant::TssCatalogue* tss = nullptr;
};

ExpressionVariantScorer::ExpressionVariantScorer(core::InferenceBackend* backend,
                                                 const core::ModelCatalogue* catalogue,
                                                 core::Executor* executor, int concurrency,
                                                 core::CallContext call)
    : state_(std::make_unique<State>(backend, catalogue, executor, concurrency, std::move(call))) {}

ExpressionVariantScorer::~ExpressionVariantScorer() = default;

int64_t ExpressionVariantScorer::calls() const { return state_->scorer.calls(); }

StatusOr<ExpressionScorerInfo> ExpressionVariantScorer::Prepare(
    const std::string& model, const std::vector<std::string>& contexts, int64_t window,
    const variant::TssCatalogue* tss) {
  if (tss == nullptr) {
    return Unavailable("the expression scorer needs the start-site catalogue, and this runner "
                       "holds none (DNASERVE_GRCH37_CATALOGUE)");
  }
  ExpressionScorerInfo info;
  auto resolved = ScorerModelOf(Task::kExpression, model, *state_->catalogue);
  if (!resolved.ok()) return resolved.status();
  info.model = *resolved;
  // The scorer scores with the expression task's default; admission resolved the same one.
  auto used = state_->scorer.ModelId();
  if (!used.ok()) return used.status();
  if (*used != info.model.model) {
    return Unavailable("the expression default model changed while the request waited ('" +
                       info.model.model + "' -> '" + *used + "'); retry");
  }
  info.window = window;
  info.catalogue_build = tss->info().build;
  info.catalogue_md5 = tss->info().md5;
  for (const std::string& requested : contexts) {
    auto match = state_->scorer.MatchTissue(requested, nullptr);
    if (!match.ok()) return match.status();
    ExpressionContext c;
    c.requested = requested;
    if (match->has_value() && (*match)->matched && !(*match)->contexts.empty()) {
      c.matched = true;
      c.id = (*match)->contexts.front().id;
      c.name = (*match)->contexts.front().name;
    }
    info.contexts.push_back(std::move(c));
  }
  state_->contexts = contexts;
  state_->window = window;
  state_->tss = tss;
  return info;
}

StatusOr<std::vector<ExpressionGene>> ExpressionVariantScorer::Score(const VariantSite& at,
                                                                     ScorerCalls* calls) {
  const core::RequestedVariant& v = *at.variant;
  const int64_t start = RefStart(at);
  const int64_t last = start + RefLength(at) - 1;
  const auto sites =
      state_->tss->SitesBetween(v.contig, start - state_->window, last + state_->window);
  const size_t contexts = state_->contexts.size();
  std::deque<std::string> windows;  // stable storage for the batch's string_views
  std::vector<variant::ScoreRequest> batch;
  struct Planned {
    size_t ref_first;
    std::optional<size_t> alt_first;  // nullopt: ALT window = REF window
  };
  std::vector<Planned> planned;
  auto request = [&](std::string window) {
    windows.push_back(std::move(window));
    for (const auto& c : state_->contexts) batch.push_back({windows.back(), c});
    return batch.size() - contexts;
  };
  for (const variant::StartSite* site : sites) {
    const variant::ReferenceGenome* genome = at.genome;
    const std::string contig = site->contig;
    variant::FetchBases fetch = [genome, contig](int64_t from, int64_t to) {
      return genome->Fetch(contig, from, to);
    };
    auto ref = variant::ReferenceWindow(*site, fetch);
    if (!ref.ok()) return ref.status();
    auto alt = variant::AlternateWindow(*site, {start, v.ref, v.alt}, fetch);
    if (!alt.ok()) return alt.status();
    const bool same = *alt == *ref;
    Planned p{request(std::move(*ref)), std::nullopt};
    if (!same) p.alt_first = request(std::move(*alt));
    planned.push_back(p);
  }
  std::vector<double> values;
  if (!batch.empty()) {
    const int64_t before = state_->scorer.calls();
    auto scored = state_->scorer.Score(batch, nullptr);
    calls->model_calls += state_->scorer.calls() - before;
    if (!scored.ok()) return scored.status();
    if (scored->size() != batch.size()) {
      return Internal("the expression scorer returned " + std::to_string(scored->size()) +
                      " values for " + std::to_string(batch.size()) + " windows");
    }
    for (double value : *scored) {
      if (!std::isfinite(value)) {
        return Internal("the expression model returned a non-finite value");
      }
    }
    values = std::move(*scored);
  }
  std::vector<ExpressionGene> genes;
  for (size_t i = 0; i < sites.size(); ++i) {
    ExpressionGene gene;
    gene.site = *sites[i];
    gene.tss_distance = variant::TssDistance(*sites[i], start, RefLength(at));
    const Planned& p = planned[i];
    gene.ref_log_tpm.assign(values.begin() + p.ref_first, values.begin() + p.ref_first + contexts);
    const size_t alt_first = p.alt_first.value_or(p.ref_first);
    gene.alt_log_tpm.assign(values.begin() + alt_first, values.begin() + alt_first + contexts);
    genes.push_back(std::move(gene));
  }
  return genes;
}

// ---- chromatin

StatusOr<std::vector<ChromatinDelta>> ScoreChromatin(const VariantSite& at,
                                                     ChromatinScorerInfo* info,
                                                     core::InferenceBackend& backend,
                                                     const core::JobContext& context,
                                                     ScorerCalls* calls) {
  const int64_t width = info->model.window_bp;
  const int64_t start = RefStart(at) - width / 2;
  auto ref = at.genome->Fetch(at.variant->contig, start, start + width);
  if (!ref.ok()) return ref.status();
  auto alt = AltHaplotype(at, start, width);
  if (!alt.ok()) return alt.status();
  std::vector<ChromatinDelta> features;
  auto ref_p = ChromatinProbabilities(*ref, info, backend, context, calls, &features);
  if (!ref_p.ok()) return ref_p.status();
  auto alt_p = ChromatinProbabilities(*alt, info, backend, context, calls, &features);
  if (!alt_p.ok()) return alt_p.status();
  if (alt_p->size() != ref_p->size()) {
    return Internal("the chromatin model changed its feature count between two calls");
  }
  for (size_t f = 0; f < features.size(); ++f) {
    features[f].index = static_cast<int>(f);
    features[f].ref = (*ref_p)[f];
    features[f].alt = (*alt_p)[f];
  }
  // Largest |ALT - REF| first; a tie keeps the model's output order (stable).
  std::stable_sort(features.begin(), features.end(),
                   [](const ChromatinDelta& a, const ChromatinDelta& b) {
                     return std::fabs(a.alt - a.ref) > std::fabs(b.alt - b.ref);
                   });
  if (static_cast<int64_t>(features.size()) > info->top) {
    features.resize(static_cast<size_t>(info->top));
  }
  return features;
}

// ---- promoter

StatusOr<PromoterDelta> ScorePromoter(const VariantSite& at, const PromoterScorerInfo& info,
                                      core::InferenceBackend& backend,
                                      const core::JobContext& context, ScorerCalls* calls) {
  const int64_t width = info.model.window_bp;
  const int64_t step = info.step;
  PromoterDelta out;
  bool first = true;
  for (int64_t offset = -(info.distance / step) * step; offset <= info.distance; offset += step) {
    const int64_t start = RefStart(at) + offset - width / 2;
    auto ref = at.genome->Fetch(at.variant->contig, start, start + width);
    if (!ref.ok()) return ref.status();
    auto ref_score = PromoterWindowScore(*ref, info, backend, context, calls);
    if (!ref_score.ok()) return ref_score.status();
    double alt_score = *ref_score;
    if (Overlaps(at, start, width)) {
      auto alt = AltHaplotype(at, start, width);
      if (!alt.ok()) return alt.status();
      if (*alt != *ref) {
        auto scored = PromoterWindowScore(*alt, info, backend, context, calls);
        if (!scored.ok()) return scored.status();
        alt_score = *scored;
      }
    }
    // The first of equal maxima (the most upstream on the plus strand) is reported.
    if (first || *ref_score > out.ref) {
      out.ref = *ref_score;
      out.ref_offset = offset;
    }
    if (first || alt_score > out.alt) {
      out.alt = alt_score;
      out.alt_offset = offset;
    }
    first = false;
    ++out.windows;
  }
  return out;
}

}  // namespace dnaserve::runner
