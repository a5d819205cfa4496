#include "core/render/predict_response.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/render/json_writer.h"
#include "core/render/predict_data.h"
#include "core/render/task_renderers.h"

namespace dnaserve::core {
namespace {

namespace pb = worker::v1;

std::string ModelId(const ValidatedPredict& input, const pb::PredictResult& result) {
  return result.model().empty() ? input.request.model() : result.model();
}

// The envelope every task shares; what differs per task is its row in RendererFor.
void WriteData(JsonWriter& w, const ValidatedPredict& input, const pb::PredictResult& result,
               const RenderShared& shared) {
  const TaskRenderer& task = RendererFor(input.task);
  w.StartObject();
  w.Field("task", TaskName(input.task));
  w.Field("model", ModelId(input, result));
  w.Key("input");
  w.StartObject();
  w.Field("sequence_name", input.sequence_name);
  task.input(w, input, result, shared);
  w.EndObject();
  w.Key("summary");
  w.StartObject();
  task.summary(w, input, result, shared);
  w.EndObject();
  task.data(w, input, result, shared);
  w.Key("formats");
  task.formats(w, input, result, shared);
  w.EndObject();
}

}  // namespace

void WriteDescriptionMatch(JsonWriter& w, const pb::DescriptionMatch* match) {
  if (match == nullptr) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Field("matched", match->matched());
  // Workers older than the field send none: the key is left out rather than written empty.
  if (!match->matched_by().empty()) w.Field("matched_by", match->matched_by());
  w.Key("contexts");
  w.StartArray();
  for (const auto& context : match->contexts()) {
    w.StartObject();
    w.Field("id", context.id());
    w.Field("name", context.name());
    w.Field("similarity", context.similarity());
    if (!context.curie().empty()) w.Field("curie", context.curie());
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
  WriteData(w, input, result, RenderShared(result));
}

std::string RenderPredictJson(const ValidatedPredict& input, const pb::PredictResult& result,
                              const ResponseIds& ids) {
  const std::string model = ModelId(input, result);
  const size_t encoded = result.ByteSizeLong();
  JsonWriter w;
  // Room for the body up front, so it is not grown by doubling, which briefly holds the old
  // buffer and its copy. Usually enough: JSON keys and escapes cost less than the encoding
  // again, and the chromatin names a reply sends once are repeated in the body, so they count
  // twice too (without them the last doubling set the gateway's peak: BENCHMARKS.md, table J).
  const RenderShared shared(result);  // built once: the estimate and the writers read it
  const size_t repeated_names = shared.chromatin_labels.RepeatedNameBytes(result.chromatin());
  w.Reserve(2 * encoded + 2 * repeated_names + 4096);
  w.StartObject();
  w.Key("data");
  WriteData(w, input, result, shared);

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
  w.StartObject();
  w.Field("task", TaskName(input.task));
  RendererFor(input.task).counts(w, input, result, shared);
  w.EndObject();
  RendererFor(input.task).meta(w, input, result, shared);
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

}  // namespace dnaserve::core
