#include "runner/workflows/variant_scoring.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "common/sequence.h"
#include "common/task.h"
#include "runner/genome/contig_name.h"
#include "runner/workflows/splice_batch.h"
#include "runner/workflows/variant_quantile_json.h"

namespace dnaserve::runner {
namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The held assembly `name` stands for, matched without regard to case ("grch37" is GRCh37).
std::optional<std::string> HeldAssembly(const ReferenceLookup& references,
                                        const std::string& name) {
  for (const std::string& held : references.Names()) {
    if (Lower(held) == Lower(name)) return held;
  }
  return std::nullopt;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

std::optional<core::VariantProblem> CheckAgainstReference(const ReferenceLookup& references,
                                                          core::RequestedVariant* v) {
  auto held = HeldAssembly(references, v->assembly);
  if (!held) {
    return core::VariantProblem{"unknown_assembly", "assembly '" + v->assembly +
                                                        "' is not held here; assemblies: " +
                                                        Joined(references.Names())};
  }
  v->assembly = *held;
  // A RefSeq accession (NC_000020.10 on GRCh37) names the contig the reference holds as 20: the
  // variant is scored, deduplicated and reported under that name ("input" keeps what was sent).
  const std::string key = variant::AssemblyContigKey(*held, v->contig);
  if (key != variant::ContigKey(v->contig)) v->contig = key;
  const variant::ReferenceGenome* genome = references.Find(*held);
  auto length = genome->ContigLength(v->contig);
  if (!length) {
    return core::VariantProblem{"unknown_contig", "contig '" + v->contig + "' is not in " +
                                                      *held + " as held here (GET /v1/genomes)"};
  }
  const auto ref_len = static_cast<int64_t>(v->ref.size());
  if (v->position + ref_len - 1 > *length) {
    return core::VariantProblem{
        "position_out_of_range",
        v->contig + " has " + std::to_string(*length) + " bp; REF at " +
            std::to_string(v->position) + " (" + std::to_string(ref_len) + " bp) ends past it"};
  }
  auto bases = genome->Fetch(v->contig, v->position - 1, v->position - 1 + ref_len);
  if (!bases.ok()) return core::VariantProblem{"reference_mismatch", bases.status().message()};
  if (*bases != v->ref) {
    return core::VariantProblem{
        "reference_mismatch", "REF " + v->ref + " does not match the reference (" + *bases +
                                  " at " + v->contig + ":" + std::to_string(v->position) + " in " +
                                  *held + "); is the variant on another assembly?"};
  }
  return std::nullopt;
}

// The splice scorer over every checked variant at once (splice_batch.h): minimal blocks, REF
// blocks shared, packed worker calls.
Status ScoreSpliceAll(std::vector<ScoredVariant>* variants, const ReferenceLookup& references,
                      const SpliceScorerInfo& scorer, core::InferenceBackend& backend,
                      const core::JobContext& context, VariantScoreResult* result) {
  std::vector<SpliceJobVariant> jobs;
  std::vector<ScoredVariant*> owners;
  for (ScoredVariant& scored : *variants) {
    if (scored.problem || !scored.recalled.empty()) continue;  // recalled: answered from cache
    scored.splice_plus.emplace();
    scored.splice_minus.emplace();
    jobs.push_back({references.Find(scored.variant.assembly), &scored.variant,
                    &*scored.splice_plus, &*scored.splice_minus});
    owners.push_back(&scored);
  }
  SpliceCallTotals totals;
  const Status status = ScoreSpliceBatch(jobs, scorer.model, scorer.distance, scorer.flank_bp,
                                         backend, context, &totals);
  result->cold_start = result->cold_start || totals.cold_start;
  result->model_load_time_ms += totals.model_load_time_ms;
  result->inference_time_ms += totals.inference_time_ms;
  result->model_calls += totals.model_calls;
  if (!status.ok()) {
    for (ScoredVariant* scored : owners) {
      scored->splice_plus.reset();
      scored->splice_minus.reset();
    }
  }
  return status;
}

StatusOr<SpliceScorerInfo> SpliceScorer(const std::string& model, int64_t distance,
                                        const core::ModelCatalogue& catalogue) {
  auto info = catalogue.Resolve(Task::kSplice, model);
  if (!info.ok()) return info.status();
  if (info->tokenizer() != "char" || info->flank_bp() <= 0) {
    return Unavailable("the splice model '" + model +
                       "' does not publish per-base scores with a flank (tokenizer char, "
                       "flank_bp): the splice scorer needs such a model");
  }
  return SpliceScorerInfo{info->id(), info->package_digest(), distance, info->flank_bp()};
}

}  // namespace

std::vector<ScoredVariant> CheckVariants(const std::vector<core::RequestedVariant>& requested,
                                         const ReferenceLookup& references) {
  std::vector<ScoredVariant> out;
  out.reserve(requested.size());
  std::map<std::string, size_t> first_index;  // identity -> index of its first occurrence
  for (const core::RequestedVariant& r : requested) {
    ScoredVariant s;
    s.variant = r;
    s.problem = r.problem;
    if (!s.problem) s.problem = CheckAgainstReference(references, &s.variant);
    if (!s.problem) {
      const core::RequestedVariant& v = s.variant;
      const std::string identity = v.assembly + "|" + variant::ContigKey(v.contig) + "|" +
                                   std::to_string(v.position) + "|" + v.ref + "|" + v.alt;
      auto [it, inserted] = first_index.emplace(identity, out.size());
      if (!inserted) {
        s.problem = core::VariantProblem{
            "duplicate_variant", "the same variant as variants[" + std::to_string(it->second) +
                                     "]; its scores are there"};
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// The scorers asked for, ready: each model's digest and width, the expression contexts matched.
Status PrepareScorers(const core::AdmittedVariantScore& admitted,
                      const ScoringServices& services, ExpressionVariantScorer* expression,
                      VariantScoreResult* result) {
  const core::ValidatedVariantScore& request = admitted.input;
  const core::ModelCatalogue& catalogue = *services.catalogue;
  if (request.splice) {
    auto scorer = SpliceScorer(admitted.splice_model, request.splice_distance, catalogue);
    if (!scorer.ok()) return scorer.status();
    result->splice = *scorer;
  }
  if (request.expression) {
    auto info = expression->Prepare(admitted.expression_model, request.expression_contexts,
                                    request.expression_window, services.tss);
    if (!info.ok()) return info.status();
    result->expression = *info;
    result->model_calls += expression->calls();  // one per context, to learn what it names
  }
  if (request.chromatin) {
    auto model = ScorerModelOf(Task::kChromatin, admitted.chromatin_model, catalogue);
    if (!model.ok()) return model.status();
    result->chromatin = ChromatinScorerInfo{*model, request.chromatin_top, 0};
  }
  if (request.promoter) {
    auto model = ScorerModelOf(Task::kPromoter, admitted.promoter_model, catalogue);
    if (!model.ok()) return model.status();
    const int64_t step = std::max<int64_t>(1, model->window_bp / 2);  // half the model's width
    result->promoter = PromoterScorerInfo{*model, request.promoter_distance, step};
  }
  return Status::Ok();
}

// Every scorer asked for on one checked variant.
Status ScoreOne(ScoredVariant* scored, const ScoringServices& services,
                ExpressionVariantScorer* expression, const core::JobContext& context,
                VariantScoreResult* result) {
  core::InferenceBackend& backend = *services.backend;
  const VariantSite at{services.references->Find(scored->variant.assembly), &scored->variant};
  ScorerCalls calls;
  if (result->expression) {
    auto genes = expression->Score(at, &calls);
    if (!genes.ok()) return genes.status();
    scored->expression = std::move(*genes);
  }
  if (result->chromatin) {
    auto features = ScoreChromatin(at, &*result->chromatin, backend, context, &calls);
    if (!features.ok()) return features.status();
    scored->chromatin = std::move(*features);
  }
  if (result->promoter) {
    auto promoter = ScorePromoter(at, *result->promoter, backend, context, &calls);
    if (!promoter.ok()) return promoter.status();
    scored->promoter = *promoter;
  }
  result->cold_start = result->cold_start || calls.cold_start;
  result->model_load_time_ms += calls.model_load_time_ms;
  result->inference_time_ms += calls.inference_time_ms;
  result->model_calls += calls.model_calls;
  return Status::Ok();
}

}  // namespace

StatusOr<VariantScoreResult> ScoreVariants(const core::AdmittedVariantScore& admitted,
                                           const ScoringServices& services,
                                           const core::JobContext& context) {
  VariantScoreResult result;
  ExpressionVariantScorer expression(services.backend, services.catalogue, services.executor,
                                     services.expression_concurrency, context.call);
  DNASERVE_RETURN_IF_ERROR(PrepareScorers(admitted, services, &expression, &result));
  LoadVariantBackgrounds(*services.backend, &result);
  result.variants = CheckVariants(admitted.input.variants, *services.references);
  if (services.answers) services.answers->Recall(&result);
  if (result.splice) {
    if (context.Cancelled()) return Cancelled("the request was cancelled");
    DNASERVE_RETURN_IF_ERROR(ScoreSpliceAll(&result.variants, *services.references,
                                            *result.splice, *services.backend, context, &result));
  }
  size_t done = 0;
  for (ScoredVariant& scored : result.variants) {
    ++done;
    if (scored.problem || !scored.recalled.empty()) continue;
    if (context.Cancelled()) return Cancelled("the request was cancelled");
    DNASERVE_RETURN_IF_ERROR(ScoreOne(&scored, services, &expression, context, &result));
    if (services.answers) services.answers->Remember(scored, result);
    context.Progress(100.0 * static_cast<double>(done) /
                         static_cast<double>(result.variants.size()),
                     "scored " + std::to_string(done) + " of " +
                         std::to_string(result.variants.size()) + " variants");
  }
  return result;
}

}  // namespace dnaserve::runner
