#include "runner/workflows/variant_quantile_json.h"

#include <cmath>

#include "common/task.h"
#include "runner/variant/annotation_engine.h"
#include "runner/workflows/variant_score_response.h"

namespace dnaserve::runner {
namespace {

// The card file a worker serves a package's background under (its kVariantBackgroundCardFile;
// the runner does not link the worker).
constexpr const char* kBackgroundCardFile = "variant_background.json";

// A background that cannot be had (a worker error, a malformed answer) leaves that scorer's
// quantiles null with the reason; the scores themselves are still answered.
ScorerBackground Load(core::InferenceBackend& backend, Task task, const ScorerModel& model,
                      const std::string& scorer, std::optional<int64_t> distance) {
  auto shipped = BackgroundCache::Shared().Get(
      model.package_digest, [&]() -> StatusOr<std::string> {
        auto file = backend.GetModelCard(task, model.model, kBackgroundCardFile);
        if (!file.ok()) return file.status();
        return file->content();
      });
  if (!shipped.ok()) {
    ScorerBackground none;
    none.reason = "the variant background of " + model.model +
                  " could not be read: " + shipped.status().message();
    return none;
  }
  return BackgroundFor(shipped->get(), model.model, scorer, distance);
}

void WriteBackground(core::JsonWriter& w, std::string_view key, const ScorerBackground& b) {
  w.Key(key);
  w.StartObject();
  w.Field("available", b.available);
  if (!b.available) {
    w.Field("reason", b.reason);
  } else {
    w.Field("snvs", b.snvs);
    w.Field("seed", b.seed);
    w.Field("region", b.region);
    w.Field("distance", b.distance);
    w.Key("statistics");
    w.StartArray();
    for (const auto& statistic : b.statistics) w.String(statistic.first);
    w.EndArray();
  }
  w.EndObject();
}

void WriteQuantile(core::JsonWriter& w, const ScorerBackground& b, const std::string& statistic,
                   double published) {
  auto q = b.Quantile(statistic, published);
  if (q) {
    w.Double(*q);
  } else {
    w.Null();
  }
}

// The strand the splice block reports (variant_score_response.cc WriteSplice's rule: the larger
// rounded DS_max, "+" on a tie), so the quantiles are of the values shown beside them.
const SpliceDelta& ReportedStrand(const SpliceDelta& plus, const SpliceDelta& minus) {
  return RoundScore(minus.Max()) > RoundScore(plus.Max()) ? minus : plus;
}

void WriteSplice(core::JsonWriter& w, const ScoredVariant& s, const ScorerBackground& b) {
  w.Key("splice");
  if (!b.available) return w.Null();
  const SpliceDelta& d = ReportedStrand(*s.splice_plus, *s.splice_minus);
  w.StartObject();
  const std::pair<const char*, double> values[] = {
      {"DS_AG", d.acceptor_gain.score}, {"DS_AL", d.acceptor_loss.score},
      {"DS_DG", d.donor_gain.score},    {"DS_DL", d.donor_loss.score},
      {"DS_max", d.Max()}};
  for (const auto& [name, value] : values) {
    w.Key(name);
    WriteQuantile(w, b, name, RoundScore(value));
  }
  w.EndObject();
}

void WritePromoter(core::JsonWriter& w, const PromoterDelta& p, const ScorerBackground& b) {
  w.Key("promoter");
  if (!b.available) return w.Null();
  w.StartObject();
  w.Key("delta");
  WriteQuantile(w, b, "abs_delta", std::fabs(RoundScore(p.alt - p.ref)));
  w.EndObject();
}

void WriteChromatin(core::JsonWriter& w, const std::vector<ChromatinDelta>& features,
                    const ScorerBackground& b) {
  w.Key("chromatin");
  if (!b.available) return w.Null();
  w.StartArray();
  for (const ChromatinDelta& f : features) {
    WriteQuantile(w, b, "abs_delta:" + f.name, std::fabs(RoundScore(f.alt - f.ref)));
  }
  w.EndArray();
}

void WriteExpression(core::JsonWriter& w, const std::vector<ExpressionGene>& genes,
                     const ExpressionScorerInfo& info, const ScorerBackground& b) {
  w.Key("expression");
  if (!b.available) return w.Null();
  w.StartArray();
  for (const ExpressionGene& g : genes) {
    w.StartArray();
    for (size_t c = 0; c < info.contexts.size(); ++c) {
      const double change = WorkflowPrecision(
          variant::Log2FoldChange(g.alt_log_tpm[c], g.ref_log_tpm[c]));
      WriteQuantile(w, b, "abs_log2_fold_change:" + info.contexts[c].id, std::fabs(change));
    }
    w.EndArray();
  }
  w.EndArray();
}

// Calls emit(scorer, write) for each scorer's quantiles entry of a scored variant, in the order
// they are written; write(w) writes the key and its value.
template <typename Emit>
void ForEachQuantileEntry(const ScoredVariant& s, const VariantScoreResult& result, Emit emit) {
  const VariantBackgrounds& b = result.backgrounds;
  if (b.splice && s.splice_plus && s.splice_minus) {
    emit("splice", [&](core::JsonWriter& w) { WriteSplice(w, s, *b.splice); });
  }
  if (b.expression && s.expression && result.expression) {
    emit("expression", [&](core::JsonWriter& w) {
      WriteExpression(w, *s.expression, *result.expression, *b.expression);
    });
  }
  if (b.chromatin && s.chromatin) {
    emit("chromatin", [&](core::JsonWriter& w) { WriteChromatin(w, *s.chromatin, *b.chromatin); });
  }
  if (b.promoter && s.promoter) {
    emit("promoter", [&](core::JsonWriter& w) { WritePromoter(w, *s.promoter, *b.promoter); });
  }
}

}  // namespace

void LoadVariantBackgrounds(core::InferenceBackend& backend, VariantScoreResult* result) {
  VariantBackgrounds& b = result->backgrounds;
  if (result->splice) {
    const ScorerModel splice{result->splice->model, result->splice->package_digest, 0};
    b.splice = Load(backend, Task::kSplice, splice, "splice", result->splice->distance);
  }
  if (result->expression) {
    b.expression = Load(backend, Task::kExpression, result->expression->model, "expression",
                        result->expression->window);
  }
  if (result->chromatin) {
    b.chromatin =
        Load(backend, Task::kChromatin, result->chromatin->model, "chromatin", std::nullopt);
  }
  if (result->promoter) {
    b.promoter = Load(backend, Task::kPromoter, result->promoter->model, "promoter",
                      result->promoter->distance);
  }
}

void WriteVariantBackgrounds(core::JsonWriter& w, const VariantScoreResult& result) {
  const VariantBackgrounds& b = result.backgrounds;
  w.Key("backgrounds");
  w.StartObject();
  if (b.splice) WriteBackground(w, "splice", *b.splice);
  if (b.expression) WriteBackground(w, "expression", *b.expression);
  if (b.chromatin) WriteBackground(w, "chromatin", *b.chromatin);
  if (b.promoter) WriteBackground(w, "promoter", *b.promoter);
  w.EndObject();
}

void WriteVariantQuantiles(core::JsonWriter& w, const ScoredVariant& s,
                           const VariantScoreResult& result) {
  if (s.problem) return;
  w.Key("quantiles");
  w.StartObject();
  ForEachQuantileEntry(s, result, [&w](const char*, auto write) { write(w); });
  w.EndObject();
}

std::vector<std::pair<std::string, std::string>> RenderQuantileEntries(
    const ScoredVariant& s, const VariantScoreResult& result) {
  std::vector<std::pair<std::string, std::string>> out;
  if (s.problem) return out;
  ForEachQuantileEntry(s, result, [&out](const char* scorer, auto write) {
    core::JsonWriter w;
    w.StartObject();
    write(w);  // {"<scorer>":<value>}
    w.EndObject();
    std::string text = w.Take();
    const size_t prefix = std::string_view(scorer).size() + 4;
    out.emplace_back(scorer, text.substr(prefix, text.size() - prefix - 1));
  });
  return out;
}

}  // namespace dnaserve::runner
