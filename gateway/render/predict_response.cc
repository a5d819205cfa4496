#include "gateway/render/predict_response.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <string_view>

#include "gateway/http/json_writer.h"
#include "gateway/render/predict_data.h"

namespace dnaserve::gateway {
namespace {

namespace pb = worker::v1;
using google::protobuf::Map;

constexpr std::string_view kExpressionUnit = "log(TPM+1)";

// Protobuf map iteration order is unspecified; responses must be byte-stable for the same
// result (a completed poll returns exactly what the sync call would have), so keys are sorted.
std::map<std::string, std::string> Sorted(const Map<std::string, std::string>& map) {
  return std::map<std::string, std::string>(map.begin(), map.end());
}

void WriteStringObject(JsonWriter& w, const Map<std::string, std::string>& map) {
  w.StartObject();
  for (const auto& [key, value] : Sorted(map)) w.Field(key, value);
  w.EndObject();
}

void WriteSpan(JsonWriter& w, int64_t start, int64_t end) {
  w.StartArray();
  w.Int(start);
  w.Int(end);
  w.EndArray();
}

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
std::vector<std::string> ChromatinCategories(const pb::ChromatinResult& chromatin) {
  std::vector<std::string> categories(chromatin.categories().begin(), chromatin.categories().end());
  for (const auto& window : chromatin.windows()) {
    for (const auto& feature : window.features()) {
      if (std::find(categories.begin(), categories.end(), feature.category()) == categories.end()) {
        categories.push_back(feature.category());
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

// ---------------------------------------------------------------- data per task

void WritePromoterData(JsonWriter& w, const ValidatedPredict& input,
                       const pb::PredictResult& result) {
  const auto& promoter = result.promoter();
  int64_t promoter_windows = 0;
  for (const auto& window : promoter.windows()) promoter_windows += window.is_promoter() ? 1 : 0;

  w.Key("summary");
  w.StartObject();
  w.Field("windows_scanned", static_cast<int64_t>(promoter.windows_size()));
  w.Field("promoter_windows", promoter_windows);
  w.Field("regions_found", static_cast<int64_t>(promoter.regions_size()));
  WriteMax(w, "max_score", promoter.windows(), [](const auto& x) { return x.score(); });
  w.Field("threshold", input.request.promoter().threshold());
  w.EndObject();

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

void WriteSpliceData(JsonWriter& w, const ValidatedPredict& input,
                     const pb::PredictResult& result) {
  const auto& splice = result.splice();
  int64_t donors = 0;
  int64_t acceptors = 0;
  for (const auto& site : splice.sites()) {
    if (site.type() == pb::SPLICE_SITE_TYPE_DONOR) ++donors;
    if (site.type() == pb::SPLICE_SITE_TYPE_ACCEPTOR) ++acceptors;
  }

  w.Key("summary");
  w.StartObject();
  w.Field("windows_scanned", static_cast<int64_t>(splice.windows_size()));
  w.Field("sites_found", static_cast<int64_t>(splice.sites_size()));
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
  w.EndObject();

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

  w.Key("tracks");
  WriteStringObject(w, result.tracks());

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

void WriteEnhancerData(JsonWriter& w, const pb::PredictResult& result) {
  const auto& enhancer = result.enhancer();

  w.Key("summary");
  w.StartObject();
  w.Field("windows_scanned", static_cast<int64_t>(enhancer.windows_size()));
  WriteMax(w, "max_dev", enhancer.windows(), [](const auto& x) { return x.dev(); });
  WriteMax(w, "max_hk", enhancer.windows(), [](const auto& x) { return x.hk(); });
  w.EndObject();

  w.Key("windows");
  w.StartArray();
  for (const auto& window : enhancer.windows()) {
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

  w.Key("tracks");
  WriteStringObject(w, result.tracks());
}

// Every window lists every category (in ChromatinCategories order), empty when nothing in it
// scored above the threshold, so that consumers see the same shape for every window.
void WriteChromatinData(JsonWriter& w, const ValidatedPredict& input,
                        const pb::PredictResult& result) {
  const auto& chromatin = result.chromatin();
  const std::vector<std::string> categories = ChromatinCategories(chromatin);
  std::map<std::string, int64_t> per_category;
  for (const auto& category : categories) per_category[category] = 0;
  for (const auto& window : chromatin.windows()) {
    for (const auto& feature : window.features()) ++per_category[feature.category()];
  }

  w.Key("summary");
  w.StartObject();
  w.Field("windows_scanned", static_cast<int64_t>(chromatin.windows_size()));
  w.Field("features_total", chromatin.features_total());
  w.Field("features_reported", ChromatinFeaturesReported(chromatin));
  w.Field("threshold", input.request.chromatin().threshold());
  w.Key("features_reported_by_category");
  w.StartObject();
  for (const auto& category : categories) w.Field(category, per_category[category]);
  w.EndObject();
  w.EndObject();

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
        if (feature.category() != category) continue;
        w.StartObject();
        w.Field("index", feature.index());
        w.Field("name", feature.name());
        w.Field("probability", feature.probability());
        w.EndObject();
      }
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();

  w.Key("tracks");
  WriteStringObject(w, result.tracks());
}

void WriteAnnotationData(JsonWriter& w, const pb::PredictResult& result) {
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

  w.Key("summary");
  w.StartObject();
  w.Field("transcripts_found", static_cast<int64_t>(annotation.transcripts_size()));
  w.Field("mrna_transcripts", mrna);
  w.Field("lnc_rna_transcripts", lnc_rna);
  w.Field("plus_strand", plus);
  w.Field("minus_strand", minus);
  w.Field("windows_processed", AnnotationWindows(result));
  w.Field("forward_passes", annotation.forward_passes());
  w.EndObject();

  w.Key("transcripts");
  w.StartArray();
  for (const auto& t : annotation.transcripts()) {
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

void WriteExpressionData(JsonWriter& w, const ValidatedPredict& input,
                         const pb::PredictResult& result) {
  const double log_tpm = result.expression().expression_log_tpm();
  const double tpm = ExpressionTpm(log_tpm);

  w.Key("summary");
  w.StartObject();
  w.Field("scored_window_bp", input.scored_end - input.scored_start);
  w.Field("tss_index", input.tss_index);
  w.EndObject();

  w.Key("prediction");
  w.StartObject();
  w.Field("expression", log_tpm);
  w.Field("expression_log_tpm", log_tpm);
  w.Field("expression_tpm", tpm);
  w.Field("unit", kExpressionUnit);
  w.EndObject();
}

// ---------------------------------------------------------------- meta

void WriteTaskSpecificCounts(JsonWriter& w, const ValidatedPredict& input,
                             const pb::PredictResult& result) {
  w.StartObject();
  w.Field("task", TaskName(input.task));
  switch (input.task) {
    case Task::kPromoter:
      w.Field("windows_processed", static_cast<int64_t>(result.promoter().windows_size()));
      w.Field("regions_found", static_cast<int64_t>(result.promoter().regions_size()));
      break;
    case Task::kSplice:
      w.Field("windows_processed", static_cast<int64_t>(result.splice().windows_size()));
      w.Field("sites_found", static_cast<int64_t>(result.splice().sites_size()));
      break;
    case Task::kEnhancer:
      w.Field("windows_processed", static_cast<int64_t>(result.enhancer().windows_size()));
      break;
    case Task::kChromatin:
      w.Field("windows_processed", static_cast<int64_t>(result.chromatin().windows_size()));
      w.Field("features_reported", ChromatinFeaturesReported(result.chromatin()));
      break;
    case Task::kAnnotation:
      w.Field("windows_processed", AnnotationWindows(result));
      w.Field("transcripts_found", static_cast<int64_t>(result.annotation().transcripts_size()));
      break;
    case Task::kExpression:
      w.Field("tss_index", input.tss_index);
      w.Key("scored_window");
      WriteSpan(w, input.scored_start, input.scored_end);
      break;
  }
  w.EndObject();
}

std::string ModelId(const ValidatedPredict& input, const pb::PredictResult& result) {
  return result.model().empty() ? input.request.model() : result.model();
}

// ISO-8601 UTC with milliseconds, e.g. 2026-05-14T09:30:00.123Z.
std::string IsoUtc(int64_t epoch_ms) {
  int64_t seconds = epoch_ms / 1000;
  int64_t millis = epoch_ms % 1000;
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];  // ample for any int fields, which keeps -Wformat-truncation quiet
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

double RoundToTenth(double value) { return std::round(value * 10.0) / 10.0; }

}  // namespace

void WriteDescriptionMatch(JsonWriter& w, const pb::DescriptionMatch* match) {
  if (match == nullptr) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Field("matched", match->matched());
  w.Key("contexts");
  w.StartArray();
  for (const auto& context : match->contexts()) {
    w.StartObject();
    w.Field("id", context.id());
    w.Field("name", context.name());
    w.Field("similarity", context.similarity());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

double ExpressionTpm(double log_tpm) {
  // The model predicts log(TPM+1) with the natural log; TPM itself cannot be negative.
  return std::isfinite(log_tpm) ? std::max(0.0, std::expm1(log_tpm)) : log_tpm;
}

void WritePredictData(JsonWriter& w, const ValidatedPredict& input,
                      const pb::PredictResult& result) {
  const std::string model = ModelId(input, result);
  w.StartObject();
  w.Field("task", TaskName(input.task));
  w.Field("model", model);
  w.Key("input");
  w.StartObject();
  w.Field("sequence_name", input.sequence_name);
  if (input.task == Task::kExpression) {
    w.Field("tss_index", input.tss_index);
    w.Key("scored_window");
    WriteSpan(w, input.scored_start, input.scored_end);
    w.Field("submitted_sequence_length", input.sequence_length);
  }
  w.EndObject();
  switch (input.task) {
    case Task::kPromoter:
      WritePromoterData(w, input, result);
      break;
    case Task::kSplice:
      WriteSpliceData(w, input, result);
      break;
    case Task::kEnhancer:
      WriteEnhancerData(w, result);
      break;
    case Task::kChromatin:
      WriteChromatinData(w, input, result);
      break;
    case Task::kAnnotation:
      WriteAnnotationData(w, result);
      break;
    case Task::kExpression:
      WriteExpressionData(w, input, result);
      break;
  }
  // Annotation always publishes its GFF3 (null only if a worker failed to render one);
  // the other tasks publish whatever text tracks the worker rendered, or null.
  w.Key("formats");
  if (input.task == Task::kAnnotation) {
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
  } else if (result.formats().empty()) {
    w.Null();
  } else {
    WriteStringObject(w, result.formats());
  }
  w.EndObject();
}

std::string RenderPredictJson(const ValidatedPredict& input, const pb::PredictResult& result,
                              const ResponseIds& ids) {
  const std::string model = ModelId(input, result);
  const size_t encoded = result.ByteSizeLong();
  JsonWriter w;
  // Room for the body up front (usually enough: JSON keys and escapes cost less than the
  // encoding again), so it is not grown by doubling, which briefly holds 1.5 bodies.
  w.Reserve(2 * encoded + 4096);
  w.StartObject();
  w.Key("data");
  WritePredictData(w, input, result);

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", TaskName(input.task));
  w.Field("model", model);
  w.Field("cold_start", result.cold_start());
  w.Field("model_load_time_ms",
          result.cold_start() ? std::max<int64_t>(0, result.model_load_time_ms()) : int64_t{0});
  w.Field("inference_time_ms", std::max<int64_t>(0, result.inference_time_ms()));
  w.Field("sequence_length", input.sequence_length);
  w.Key("task_specific_counts");
  WriteTaskSpecificCounts(w, input, result);
  if (input.task == Task::kExpression) {
    w.Key("description_match");
    WriteDescriptionMatch(w, result.expression().has_description_match()
                                 ? &result.expression().description_match()
                                 : nullptr);
  }
  w.EndObject();

  w.EndObject();
  return w.Take();
}

StatusOr<std::string> RenderPredictText(OutputFormat format, const pb::PredictResult& result) {
  const std::string name(FormatName(format));
  auto it = result.formats().find(name);
  if (it == result.formats().end()) {
    return Internal("the worker returned no " + name + " rendering for this result");
  }
  return it->second;
}

std::string RenderJobSubmitted(const std::string& job_id, const std::string& task) {
  JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("job_id", job_id);
  w.Field("status", "accepted");
  w.Key("links");
  w.StartObject();
  w.Field("result", "/v1/tasks/jobs/" + job_id);
  w.EndObject();
  w.EndObject();
  w.Key("meta");
  w.StartObject();
  w.Field("job_id", job_id);
  w.Field("task", task);
  w.Field("mode", "async");
  w.EndObject();
  w.EndObject();
  return w.Take();
}

std::string RenderJobProgress(const JobRecord& job, int64_t now_ms) {
  double percent = std::isfinite(job.progress_percent) ? job.progress_percent : 0.0;
  percent = std::clamp(percent, 0.0, 100.0);
  const double elapsed_s = std::max<int64_t>(0, now_ms - job.created_at_ms) / 1000.0;

  JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("job_id", job.job_id);
  w.Field("status", JobStateName(job.state));
  w.Key("progress");
  w.StartObject();
  w.Field("current_percent", RoundToTenth(percent));
  w.Field("message", job.progress_message);
  w.Field("elapsed_seconds", RoundToTenth(elapsed_s));
  w.EndObject();
  w.EndObject();
  w.Key("meta");
  w.StartObject();
  w.Field("job_id", job.job_id);
  w.Field("task", job.task);
  w.Field("mode", job.mode);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

std::string RenderJobList(const std::vector<JobRecord>& jobs) {
  JsonWriter w;
  w.StartObject();
  w.Key("jobs");
  w.StartArray();
  for (const auto& job : jobs) {
    const bool finished = job.state == JobState::kCompleted || job.state == JobState::kFailed;
    w.StartObject();
    w.Field("job_id", job.job_id);
    w.Field("task", job.task);
    w.Field("mode", job.mode);
    w.Field("status", JobStateName(job.state));
    w.Field("created_at", IsoUtc(job.created_at_ms));
    w.Field("updated_at", IsoUtc(job.updated_at_ms));
    if (finished && job.http_status > 0) {
      w.Field("http_status", static_cast<int64_t>(job.http_status));
    } else {
      w.NullField("http_status");
    }
    w.EndObject();
  }
  w.EndArray();
  w.Field("count", static_cast<int64_t>(jobs.size()));
  w.EndObject();
  return w.Take();
}

std::string RenderModelList(Task task, const std::vector<pb::ModelInfo>& models) {
  // Same rule as ModelCatalogue::DefaultModel: the flagged model, else the first listed.
  const pb::ModelInfo* default_model = nullptr;
  for (const auto& m : models) {
    if (m.is_default()) {
      default_model = &m;
      break;
    }
  }
  if (default_model == nullptr && !models.empty()) default_model = &models.front();

  JsonWriter w;
  w.StartObject();
  w.Field("task", TaskName(task));
  if (default_model != nullptr) {
    w.Field("default_model", default_model->id());
  } else {
    w.NullField("default_model");
  }
  w.Key("models");
  w.StartArray();
  for (const auto& m : models) {
    w.StartObject();
    w.Field("name", m.id());
    w.Field("description", m.description());
    w.Field("is_default", &m == default_model);
    w.Key("bio_spec");
    w.StartObject();
    w.Field("request_max_bp", kMaxSequenceBp);
    w.Field("context_window_bp", m.context_window_bp());
    if (m.trained_window_bp() > 0) {
      w.Field("trained_window_bp", m.trained_window_bp());
    } else {
      w.NullField("trained_window_bp");
    }
    w.EndObject();
    w.Field("tokenizer", m.tokenizer());
    w.Field("trained", m.trained());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::gateway
