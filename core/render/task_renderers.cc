#include "core/render/task_renderers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/render/predict_data.h"
#include "core/render/render_helpers.h"

namespace dnaserve::core {
namespace {

namespace pb = worker::v1;

constexpr std::string_view kExpressionUnit = "log(TPM+1)";

void WriteIntervals(JsonWriter& w, const google::protobuf::RepeatedPtrField<pb::Interval>& items) {
  w.StartArray();
  for (const auto& item : items) {
    w.StartObject();
    w.Field("start", item.start());
    w.Field("end", item.end());
    w.EndObject();
  }
  w.EndArray();
}

// The maximum of a projection over a repeated field; null when the field is empty or every
// value is non-finite (there is nothing honest to report).
template <typename Items, typename Fn>
void WriteMax(JsonWriter& w, std::string_view key, const Items& items, Fn value_of) {
  bool any = false;
  double best = 0;
  for (const auto& item : items) {
    double v = value_of(item);
    if (!std::isfinite(v)) continue;
    if (!any || v > best) best = v;
    any = true;
  }
  w.Key(key);
  if (any) {
    w.Double(best);
  } else {
    w.Null();
  }
}

std::string_view SiteTypeName(pb::SpliceSiteType type) {
  switch (type) {
    case pb::SPLICE_SITE_TYPE_DONOR:
      return "donor";
    case pb::SPLICE_SITE_TYPE_ACCEPTOR:
      return "acceptor";
    default:
      return "unspecified";
  }
}

// Chromatin categories in the order the window's features are grouped: the model's own
// category list first, then any category a feature names that the list lacks.
std::vector<std::string> ChromatinCategories(const pb::ChromatinResult& chromatin,
                                             const ChromatinLabels& labels) {
  std::vector<std::string> categories(chromatin.categories().begin(), chromatin.categories().end());
  for (const auto& window : chromatin.windows()) {
    for (const auto& feature : window.features()) {
      const std::string_view category = labels.Category(feature);
      if (std::find(categories.begin(), categories.end(), category) == categories.end()) {
        categories.emplace_back(category);
      }
    }
  }
  return categories;
}

int64_t ChromatinFeaturesReported(const pb::ChromatinResult& chromatin) {
  int64_t count = 0;
  for (const auto& window : chromatin.windows()) count += window.features_size();
  return count;
}

int64_t AnnotationWindows(const pb::PredictResult& result) {
  int64_t windows = result.annotation().windows_processed();
  return windows > 0 ? windows : result.windows_processed();
}

int64_t Size(int size) { return static_cast<int64_t>(size); }

void Nothing(JsonWriter&, const ValidatedPredict&, const pb::PredictResult&, const RenderShared&) {}

// The text tracks the worker rendered, or null.
void WorkerFormats(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                   const RenderShared&) {
  if (result.formats().empty()) {
    w.Null();
  } else {
    WriteStringObject(w, result.formats());
  }
}

void Tracks(JsonWriter& w, const pb::PredictResult& result) {
  w.Key("tracks");
  WriteStringObject(w, result.tracks());
}

// ---------------------------------------------------------------- promoter

void PromoterSummary(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult& result,
                     const RenderShared&) {
  const auto& promoter = result.promoter();
  int64_t promoter_windows = 0;
  for (const auto& window : promoter.windows()) promoter_windows += window.is_promoter() ? 1 : 0;
  w.Field("windows_scanned", Size(promoter.windows_size()));
  w.Field("promoter_windows", promoter_windows);
  w.Field("regions_found", Size(promoter.regions_size()));
  WriteMax(w, "max_score", promoter.windows(), [](const auto& x) { return x.score(); });
  w.Field("threshold", input.request.promoter().threshold());
}

void PromoterData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                  const RenderShared&) {
  const auto& promoter = result.promoter();
  w.Key("regions");
  w.StartArray();
  for (const auto& region : promoter.regions()) {
    w.StartObject();
    w.Field("start", region.start());
    w.Field("end", region.end());
    w.Field("score", region.score());
    w.EndObject();
  }
  w.EndArray();

  w.Key("window_details");
  w.StartArray();
  for (const auto& window : promoter.windows()) {
    w.StartObject();
    w.Field("index", window.index());
    w.Field("start", window.start());
    w.Field("end", window.end());
    w.Field("padded_bp", window.padded_bp());
    w.Field("score", window.score());
    w.Field("is_promoter", window.is_promoter());
    w.EndObject();
  }
  w.EndArray();
}

void PromoterCounts(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                    const RenderShared&) {
  w.Field("windows_processed", Size(result.promoter().windows_size()));
  w.Field("regions_found", Size(result.promoter().regions_size()));
}

// ---------------------------------------------------------------- splice

void SpliceSummary(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult& result,
                   const RenderShared&) {
  const auto& splice = result.splice();
  int64_t donors = 0;
  int64_t acceptors = 0;
  for (const auto& site : splice.sites()) {
    if (site.type() == pb::SPLICE_SITE_TYPE_DONOR) ++donors;
    if (site.type() == pb::SPLICE_SITE_TYPE_ACCEPTOR) ++acceptors;
  }
  w.Field("windows_scanned", Size(splice.windows_size()));
  w.Field("sites_found", Size(splice.sites_size()));
  w.Field("donor_sites", donors);
  w.Field("acceptor_sites", acceptors);
  WriteMax(w, "max_score", splice.sites(), [](const auto& x) { return x.score(); });
  w.Field("threshold", input.request.splice().threshold());
  w.Key("site_types");
  w.StartArray();
  for (int type : input.request.splice().site_types()) {
    w.String(SiteTypeName(static_cast<pb::SpliceSiteType>(type)));
  }
  w.EndArray();
}

void SpliceData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                const RenderShared&) {
  const auto& splice = result.splice();
  w.Key("sites");
  w.StartArray();
  for (const auto& site : splice.sites()) {
    w.StartObject();
    w.Field("type", SiteTypeName(site.type()));
    w.Field("start", site.start());
    w.Field("end", site.end());
    w.Field("token_index", site.token_index());
    w.Field("score", site.score());
    w.Field("donor_score", site.donor_score());
    w.Field("acceptor_score", site.acceptor_score());
    w.Field("window_index", site.window_index());
    w.EndObject();
  }
  w.EndArray();

  Tracks(w, result);

  w.Key("window_details");
  w.StartArray();
  for (const auto& window : splice.windows()) {
    w.StartObject();
    w.Field("index", window.index());
    w.Field("start", window.start());
    w.Field("end", window.end());
    w.Field("padded_bp", window.padded_bp());
    w.Field("tokens", window.tokens());
    w.Field("sites", window.sites());
    w.EndObject();
  }
  w.EndArray();
}

void SpliceCounts(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                  const RenderShared&) {
  w.Field("windows_processed", Size(result.splice().windows_size()));
  w.Field("sites_found", Size(result.splice().sites_size()));
}

// ---------------------------------------------------------------- enhancer

void EnhancerSummary(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                     const RenderShared&) {
  const auto& enhancer = result.enhancer();
  w.Field("windows_scanned", Size(enhancer.windows_size()));
  WriteMax(w, "max_dev", enhancer.windows(), [](const auto& x) { return x.dev(); });
  WriteMax(w, "max_hk", enhancer.windows(), [](const auto& x) { return x.hk(); });
}

void EnhancerData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                  const RenderShared&) {
  w.Key("windows");
  w.StartArray();
  for (const auto& window : result.enhancer().windows()) {
    w.StartObject();
    w.Field("index", window.index());
    w.Field("start", window.start());
    w.Field("end", window.end());
    w.Field("padded_bp", window.padded_bp());
    w.Field("dev", window.dev());
    w.Field("hk", window.hk());
    w.EndObject();
  }
  w.EndArray();
  Tracks(w, result);
}

void EnhancerCounts(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                    const RenderShared&) {
  w.Field("windows_processed", Size(result.enhancer().windows_size()));
}

// ---------------------------------------------------------------- chromatin

void ChromatinSummary(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult& result,
                      const RenderShared& shared) {
  const auto& chromatin = result.chromatin();
  const ChromatinLabels& labels = shared.chromatin_labels;
  const std::vector<std::string>& categories = shared.chromatin_categories;
  std::map<std::string, int64_t, std::less<>> per_category;
  for (const auto& category : categories) per_category[category] = 0;
  for (const auto& window : chromatin.windows()) {
    for (const auto& feature : window.features()) {
      ++per_category.find(labels.Category(feature))->second;  // every category is listed
    }
  }
  w.Field("windows_scanned", Size(chromatin.windows_size()));
  w.Field("features_total", chromatin.features_total());
  w.Field("features_reported", ChromatinFeaturesReported(chromatin));
  w.Field("threshold", input.request.chromatin().threshold());
  w.Key("features_reported_by_category");
  w.StartObject();
  for (const auto& category : categories) w.Field(category, per_category[category]);
  w.EndObject();
}

// Every window lists every category (in RenderShared::chromatin_categories order), empty when
// nothing in it scored above the threshold, so that consumers see the same shape for every window.
void ChromatinData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                   const RenderShared& shared) {
  const auto& chromatin = result.chromatin();
  const ChromatinLabels& labels = shared.chromatin_labels;
  const std::vector<std::string>& categories = shared.chromatin_categories;
  w.Key("windows");
  w.StartArray();
  for (const auto& window : chromatin.windows()) {
    w.StartObject();
    w.Field("index", window.index());
    w.Field("start", window.start());
    w.Field("end", window.end());
    w.Field("padded_bp", window.padded_bp());
    w.Key("features");
    w.StartObject();
    for (const auto& category : categories) {
      w.Key(category);
      w.StartArray();
      for (const auto& feature : window.features()) {
        if (labels.Category(feature) != category) continue;
        w.StartObject();
        w.Field("index", feature.index());
        w.Field("name", labels.Name(feature));
        w.Field("probability", feature.probability());
        w.EndObject();
      }
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  Tracks(w, result);
}

void ChromatinCounts(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                     const RenderShared&) {
  w.Field("windows_processed", Size(result.chromatin().windows_size()));
  w.Field("features_reported", ChromatinFeaturesReported(result.chromatin()));
}

// ---------------------------------------------------------------- annotation

void AnnotationSummary(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                       const RenderShared&) {
  const auto& annotation = result.annotation();
  int64_t mrna = 0;
  int64_t lnc_rna = 0;
  int64_t plus = 0;
  int64_t minus = 0;
  for (const auto& t : annotation.transcripts()) {
    if (t.transcript_type() == "mRNA") ++mrna;
    if (t.transcript_type() == "lnc_RNA") ++lnc_rna;
    if (t.strand() == "+") ++plus;
    if (t.strand() == "-") ++minus;
  }
  w.Field("transcripts_found", Size(annotation.transcripts_size()));
  w.Field("mrna_transcripts", mrna);
  w.Field("lnc_rna_transcripts", lnc_rna);
  w.Field("plus_strand", plus);
  w.Field("minus_strand", minus);
  w.Field("windows_processed", AnnotationWindows(result));
  w.Field("forward_passes", annotation.forward_passes());
}

void AnnotationData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                    const RenderShared&) {
  w.Key("transcripts");
  w.StartArray();
  for (const auto& t : result.annotation().transcripts()) {
    w.StartObject();
    w.Field("id", t.id());
    w.Field("strand", t.strand());
    w.Field("start", t.start());
    w.Field("end", t.end());
    w.Field("tss_position", t.tss_position());
    w.Field("polya_position", t.polya_position());
    w.Field("transcript_type", t.transcript_type());
    w.Field("transcript_type_score", t.transcript_type_score());
    w.Field("score", t.score());
    w.Key("exons");
    WriteIntervals(w, t.exons());
    w.Key("introns");
    WriteIntervals(w, t.introns());
    w.Key("cds");
    WriteIntervals(w, t.cds());
    w.EndObject();
  }
  w.EndArray();
}

// Annotation always publishes its GFF3, first (null only if a worker failed to render one).
void AnnotationFormats(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                       const RenderShared&) {
  w.StartObject();
  const auto sorted = Sorted(result.formats());
  auto gff3 = sorted.find("gff3");
  if (gff3 == sorted.end()) {
    w.NullField("gff3");
  } else {
    w.Field("gff3", gff3->second);
  }
  for (const auto& [name, text] : sorted) {
    if (name != "gff3") w.Field(name, text);
  }
  w.EndObject();
}

void AnnotationCounts(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                      const RenderShared&) {
  w.Field("windows_processed", AnnotationWindows(result));
  w.Field("transcripts_found", Size(result.annotation().transcripts_size()));
}

// ---------------------------------------------------------------- expression

void ExpressionInput(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult&,
                     const RenderShared&) {
  w.Field("tss_index", input.tss_index);
  w.Key("scored_window");
  WriteSpan(w, input.scored_start, input.scored_end);
  w.Field("submitted_sequence_length", input.sequence_length);
}

void ExpressionSummary(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult&,
                       const RenderShared&) {
  w.Field("scored_window_bp", input.scored_end - input.scored_start);
  w.Field("tss_index", input.tss_index);
}

void ExpressionData(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                    const RenderShared&) {
  const double log_tpm = result.expression().expression_log_tpm();
  w.Key("prediction");
  w.StartObject();
  w.Field("expression", log_tpm);
  w.Field("expression_log_tpm", log_tpm);
  w.Field("expression_tpm", ExpressionTpm(log_tpm));
  w.Field("unit", kExpressionUnit);
  w.EndObject();
}

void ExpressionCounts(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult&,
                      const RenderShared&) {
  w.Field("tss_index", input.tss_index);
  w.Key("scored_window");
  WriteSpan(w, input.scored_start, input.scored_end);
}

// Which training context(s) the description was matched to (null when the model has none).
void ExpressionMeta(JsonWriter& w, const ValidatedPredict&, const pb::PredictResult& result,
                    const RenderShared&) {
  w.Key("description_match");
  WriteDescriptionMatch(w, result.expression().has_description_match()
                               ? &result.expression().description_match()
                               : nullptr);
}

}  // namespace

RenderShared::RenderShared(const pb::PredictResult& result)
    : chromatin_labels(result.chromatin()),
      chromatin_categories(ChromatinCategories(result.chromatin(), chromatin_labels)) {}

const TaskRenderer& RendererFor(Task task) {
  // input, summary, data, formats, counts, meta
  static const std::map<Task, TaskRenderer> kRenderers = {
      {Task::kPromoter,
       {Nothing, PromoterSummary, PromoterData, WorkerFormats, PromoterCounts, Nothing}},
      {Task::kSplice,
       {Nothing, SpliceSummary, SpliceData, WorkerFormats, SpliceCounts, Nothing}},
      {Task::kEnhancer,
       {Nothing, EnhancerSummary, EnhancerData, WorkerFormats, EnhancerCounts, Nothing}},
      {Task::kChromatin,
       {Nothing, ChromatinSummary, ChromatinData, WorkerFormats, ChromatinCounts, Nothing}},
      {Task::kAnnotation,
       {Nothing, AnnotationSummary, AnnotationData, AnnotationFormats, AnnotationCounts,
        Nothing}},
      {Task::kExpression,
       {ExpressionInput, ExpressionSummary, ExpressionData, WorkerFormats, ExpressionCounts,
        ExpressionMeta}},
  };
  return kRenderers.at(task);  // every Task has a row: the render tests go through all six
}

}  // namespace dnaserve::core
