#include "runner/workflows/interval_answers.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <utility>

#include "common/log.h"
#include "common/version.h"
#include "runner/genome/contig_name.h"

namespace dnaserve::runner {
namespace {

namespace pb = worker::v1;

// Length-prefixed, so no field can end early and pass its tail off as the next field.
void Add(std::string* material, std::string_view field) {
  *material += std::to_string(field.size());
  *material += ':';
  *material += field;
  *material += ';';
}
void Add(std::string* material, int64_t field) { Add(material, std::to_string(field)); }

// Protobuf's default serialisation may order map entries differently from one run to the
// next; the deterministic one does not, so the same request always makes the same key.
std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

std::atomic<int64_t> g_too_large{0};

}  // namespace

int64_t IntervalAnswersTooLarge() { return g_too_large.load(); }

std::string IntervalAnswerMaterial(const IntervalPlace& place, Task task,
                                   const pb::PredictRequest& request,
                                   const std::string& package_digest) {
  std::string m;
  Add(&m, kIntervalAnswerFormat);
  Add(&m, ServiceVersion());
  Add(&m, place.assembly);
  Add(&m, variant::AssemblyContigKey(place.assembly, place.reference_contig));
  Add(&m, place.start);
  Add(&m, place.end);
  Add(&m, std::string_view(&place.strand, 1));
  Add(&m, TaskName(task));
  Add(&m, request.model());
  Add(&m, package_digest);
  Add(&m, DeterministicBytes(request));
  return m;
}

std::string IntervalAnswerValue(const pb::PredictResult& result) {
  return DeterministicBytes(result);
}

std::optional<pb::PredictResult> ReadIntervalAnswer(const std::string& value) {
  pb::PredictResult result;
  if (value.empty() || !result.ParseFromString(value)) return std::nullopt;
  return result;
}

IntervalAnswerBackend::IntervalAnswerBackend(core::InferenceBackend* inner, AnswerCache* cache,
                                             const core::ModelCatalogue* catalogue,
                                             IntervalPlace place, int64_t max_answer_bytes)
    : inner_(inner),
      cache_(cache),
      catalogue_(catalogue),
      place_(std::move(place)),
      max_answer_bytes_(max_answer_bytes) {}

std::string IntervalAnswerBackend::DigestOf(Task task, const std::string& model) const {
  if (catalogue_ == nullptr) return {};
  auto info = catalogue_->Resolve(task, model);
  return info.ok() ? info->package_digest() : std::string();
}

StatusOr<pb::PredictResult> IntervalAnswerBackend::Predict(
    Task task, const pb::PredictRequest& request, const core::CallContext& context,
    const core::ProgressCallback& on_progress) {
  ++calls_;
  pb::PredictRequest forwarded = request;
  // The client's spelling of the contig only names text tracks, which the mapping renames to
  // it anyway: every alias sends the reference's name, so they share one call and one entry.
  if (forwarded.sequence_name() == place_.contig_as_sent) {
    forwarded.set_sequence_name(place_.reference_contig);
  }
  const std::string digest =
      cache_ != nullptr && cache_->enabled() ? DigestOf(task, forwarded.model()) : std::string();
  if (digest.empty()) return inner_->Predict(task, forwarded, context, on_progress);

  const std::string material = IntervalAnswerMaterial(place_, task, forwarded, digest);
  const auto found = cache_->Lookup({material});
  if (found.size() == 1 && found[0]) {
    if (auto result = ReadIntervalAnswer(*found[0])) {
      ++hits_;
      // No model ran for this answer: no load, no inference time.
      result->set_cold_start(false);
      result->set_model_load_time_ms(0);
      result->set_inference_time_ms(0);
      return *std::move(result);
    }
  }
  auto result = inner_->Predict(task, forwarded, context, on_progress);
  // Kept only when the worker ran the model the digest names (it answers with its id).
  if (result.ok() && (result->model().empty() || result->model() == forwarded.model())) {
    std::string value = IntervalAnswerValue(*result);
    if (max_answer_bytes_ > 0 && static_cast<int64_t>(value.size()) > max_answer_bytes_) {
      ++g_too_large;
      log::Info("interval_answer_not_cached",
                {{"task", TaskName(task)},
                 {"bytes", static_cast<int64_t>(value.size())},
                 {"max_bytes", max_answer_bytes_},
                 {"not_cached_total", g_too_large.load()}});
    } else {
      cache_->Store({{material, std::move(value)}});
    }
  }
  return result;
}

StatusOr<std::vector<pb::ModelInfo>> IntervalAnswerBackend::ListModels(Task task) {
  return inner_->ListModels(task);
}

std::string WithMetaCached(std::string body, bool cached) {
  // The body ends with meta's closing brace and then the document's: the member goes between
  // meta's last member and its brace. Checked cheaply (the renderers write compact JSON, meta
  // last, never empty); anything else is left alone rather than broken.
  const size_t meta = body.rfind(",\"meta\":{");
  if (body.size() < 2 || meta == std::string::npos || body.compare(body.size() - 2, 2, "}}") != 0 ||
      body[body.size() - 3] == '{') {
    return body;
  }
  body.insert(body.size() - 2, cached ? ",\"cached\":true" : ",\"cached\":false");
  return body;
}

}  // namespace dnaserve::runner
