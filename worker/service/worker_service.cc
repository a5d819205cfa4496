#include "worker/service/worker_service.h"

#include <chrono>
#include <exception>
#include <mutex>
#include <utility>

#include "common/log.h"
#include "proto/call_metadata.h"
#include "proto/status_codec.h"
#include "worker/manifest/model_facts.h"
#include "worker/service/model_card_files.h"
#include "worker/tasks/task_runner.h"

namespace dnaserve::worker {
namespace {

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// The model as one request sees it (Model::ForRequest): admitted or refused as a whole by the
// batching queue at its first forward call; a call still waiting in the queue when the gRPC call
// is cancelled is withdrawn (its windows never run), and the run ends as it does when it is
// cancelled between batches.
class RequestModel final : public Model {
 public:
  RequestModel(Model& model, CancelCheck cancelled) : view_(model.ForRequest(std::move(cancelled))) {}

  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    auto outputs = view_->Forward(inputs);
    if (!outputs.ok() && IsForwardCancelled(outputs.status())) return RunCancelledStatus();
    return outputs;
  }

 private:
  std::unique_ptr<Model> view_;
};

}  // namespace

v1::Task ToProtoTask(Task task) {
  switch (task) {
    case Task::kPromoter:
      return v1::TASK_PROMOTER;
    case Task::kSplice:
      return v1::TASK_SPLICE;
    case Task::kEnhancer:
      return v1::TASK_ENHANCER;
    case Task::kChromatin:
      return v1::TASK_CHROMATIN;
    case Task::kAnnotation:
      return v1::TASK_ANNOTATION;
    case Task::kExpression:
      return v1::TASK_EXPRESSION;
  }
  return v1::TASK_UNSPECIFIED;
}

v1::ModelInfo ToModelInfo(const ModelManifest& manifest) {
  v1::ModelInfo info;
  info.set_id(manifest.id);
  info.set_task(ToProtoTask(manifest.task));
  info.set_description(manifest.description);
  info.set_is_default(manifest.is_default);
  info.set_context_window_bp(manifest.context_window_bp);
  info.set_trained_window_bp(manifest.trained_window_bp.value_or(0));
  info.set_tokenizer(TokenizerLabel(manifest.tokenizer));
  for (const auto& label : manifest.output_labels) info.add_output_labels(label);
  info.set_trained(manifest.trained);
  info.set_package_digest(manifest.package_digest);
  info.set_flank_bp(manifest.flank_bp);
  info.set_resolution(Resolution(manifest));
  info.set_outputs(OutputsLine(manifest));
  if (manifest.description_contexts) {
    for (const auto& context : manifest.description_contexts->contexts) {
      auto* c = info.add_contexts();
      c->set_id(context.id);
      c->set_name(context.name);
      c->set_curie(context.curie);
      c->set_label(context.label);
      c->set_group(context.group);
    }
    if (manifest.description_contexts->free_text) {
      info.set_free_text_threshold(manifest.description_contexts->free_text->threshold);
    }
  }
  return info;
}

grpc::Status WorkerService::ListModels(grpc::ServerContext* /*context*/,
                                       const v1::ListModelsRequest* /*request*/,
                                       v1::ListModelsResponse* response) {
  response->set_task(ToProtoTask(task_));
  for (const ModelManifest* m : registry_->manifests()) *response->add_models() = ToModelInfo(*m);
  return grpc::Status::OK;
}

grpc::Status WorkerService::GetModelCard(grpc::ServerContext* /*context*/,
                                         const v1::GetModelCardRequest* request,
                                         v1::GetModelCardResponse* response) {
  for (const ModelManifest* m : registry_->manifests()) {
    if (m->id != request->model()) continue;
    auto file = ReadCardFile(*m, request->file());
    if (!file.ok()) return ToGrpcStatus(file.status());
    response->set_content_type(std::move(file->content_type));
    response->set_content(std::move(file->content));
    return grpc::Status::OK;
  }
  return ToGrpcStatus(Status(ErrorCode::kModelNotFound,
                             "this worker serves no model '" + request->model() + "'"));
}

grpc::Status WorkerService::Predict(grpc::ServerContext* context, const v1::PredictRequest* request,
                                    grpc::ServerWriter<v1::PredictEvent>* writer) {
  const auto started = std::chrono::steady_clock::now();
  // The gateway retries elsewhere only a call that fails before this marker arrives.
  context->AddInitialMetadata(kAcceptedMetadata, "1");
  writer->SendInitialMetadata();
  const std::string request_id = Metadata(*context, kRequestIdMetadata);
  const std::string job_id = Metadata(*context, kJobIdMetadata);
  const int64_t sequence_length = static_cast<int64_t>(request->sequence().size());
  log::Info("predict_started", {{"request_id", request_id},
                                {"job_id", job_id},
                                {"task", TaskName(task_)},
                                {"model", request->model()},
                                {"sequence_length", sequence_length}});

  // The model label: a package of this worker, never a caller's free text.
  std::string served_model = "unknown";
  if (request->model().empty()) {
    if (const ModelManifest* m = registry_->DefaultManifest()) served_model = m->id;
  } else {
    for (const ModelManifest* m : registry_->manifests()) {
      if (m->id == request->model()) served_model = m->id;
    }
  }
  if (metrics_) metrics_->PredictStarted();
  auto finished = [&](const std::string& code) {
    if (metrics_) {
      metrics_->PredictFinished(served_model, code,
                                std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                              started)
                                    .count());
    }
  };

  auto fail = [&](const Status& status) {
    const bool cancelled = IsRunCancelled(status) || context->IsCancelled();
    finished(cancelled ? "cancelled" : std::string(ErrorCodeName(status.code())));
    log::Warn(cancelled ? "predict_cancelled" : "predict_failed",
              {{"request_id", request_id},
               {"job_id", job_id},
               {"model", request->model()},
               {"code", ErrorCodeName(status.code())},
               {"message", status.message()},
               {"duration_ms", MillisSince(started)}});
    return ToGrpcStatus(status);
  };

  auto lease = registry_->Acquire(request->model());
  if (!lease.ok()) return fail(lease.status());

  bool stream_broken = false;
  RunHooks hooks;
  hooks.cancelled = [&] { return stream_broken || context->IsCancelled(); };
  hooks.progress = [&](int done, int total) {
    v1::PredictEvent event;
    auto* progress = event.mutable_progress();
    progress->set_windows_done(done);
    progress->set_windows_total(total);
    progress->set_message("scored " + std::to_string(done) + " of " + std::to_string(total) +
                          " windows");
    if (!writer->Write(event)) stream_broken = true;
  };

  const auto inference_started = std::chrono::steady_clock::now();
  StatusOr<v1::PredictResult> result = Internal("inference did not run");
  try {
    RequestModel model(*lease->model, hooks.cancelled);
    result = RunPrediction(model, *lease->manifest, *lease->tokenizer, *request, hooks);
  } catch (const std::exception& e) {
    // RunPrediction returns Status; this only catches what escapes it (e.g. std::bad_alloc).
    log::Error("predict_exception", {{"request_id", request_id}, {"what", e.what()}});
    result = Internal("inference failed");
  }
  if (!result.ok()) return fail(result.status());

  v1::PredictEvent event;
  v1::PredictResult* out = event.mutable_result();
  *out = std::move(result).value();
  out->set_model(lease->manifest->id);
  out->set_cold_start(lease->cold_start);
  out->set_model_load_time_ms(lease->load_time_ms);
  out->set_inference_time_ms(MillisSince(inference_started));
  if (!writer->Write(event)) return fail(RunCancelledStatus());
  log::Info("predict_finished",
            {{"request_id", request_id},
             {"job_id", job_id},
             {"model", lease->manifest->id},
             {"cold_start", lease->cold_start},
             {"model_load_time_ms", lease->load_time_ms},
             {"inference_time_ms", out->inference_time_ms()},
             {"windows_processed", static_cast<int64_t>(out->windows_processed())},
             {"duration_ms", MillisSince(started)}});
  finished("ok");
  return grpc::Status::OK;
}

}  // namespace dnaserve::worker
