#include "gateway/handlers/predict_handler.h"

#include "gateway/handlers/job_start.h"
#include "gateway/http/error_response.h"
#include "gateway/render/predict_response.h"
#include "gateway/validation/predict_request.h"

namespace dnaserve::gateway {
namespace {

std::string TaskList() {
  std::string out;
  for (Task t : kAllTasks) {
    if (!out.empty()) out += ", ";
    out += TaskName(t);
  }
  return out;
}

// One worker call, rendered as JSON or as the requested text track.
class PredictJob : public Job {
 public:
  PredictJob(InferenceBackend* backend, ValidatedPredict input, OutputFormat format)
      : backend_(backend), input_(std::move(input)), format_(format) {}

  HttpResponse Run(const JobContext& context) override {
    const Task task = input_.task;
    const std::string& request_id = context.call.request_id;
    if (context.Cancelled()) return ErrorResponse(Unavailable("the job was cancelled"), request_id);
    auto on_progress = [&](const worker::v1::Progress& p) {
      const double percent =
          p.windows_total() > 0 ? 100.0 * p.windows_done() / p.windows_total() : 0.0;
      context.Progress(percent, WorkerProgressMessage(p));
    };
    auto result = backend_->Predict(task, input_.request, context.call, on_progress);
    if (!result.ok()) {
      Status status = result.status();
      if (auto* cap = std::get_if<RecordCapDetails>(&status.mutable_details())) {
        cap->task = std::string(TaskName(task));
        cap->sequence_length = input_.sequence_length;
      }
      return ErrorResponse(status, request_id);
    }
    HttpResponse response;
    if (format_ == OutputFormat::kJson) {
      response.body = RenderPredictJson(input_, *result, {context.call.job_id, request_id});
      return response;
    }
    auto text = RenderPredictText(format_, *result);
    if (!text.ok()) return ErrorResponse(text.status(), request_id);
    response.content_type = std::string(FormatMediaType(format_));
    response.body = std::move(text).value();
    return response;
  }

 private:
  InferenceBackend* backend_;
  ValidatedPredict input_;
  OutputFormat format_;
};

}  // namespace

// Everything decided before a job exists. A failure here creates no job.
StatusOr<JobStart> AdmitPredict(const RouteCall& call, const GatewayServices& services,
                                bool async) {
  const HttpRequest& req = call.request;
  auto task_name = call.params.at("task");
  auto task = TaskFromName(task_name);
  if (!task) return NotFound("unknown task '" + task_name + "'; tasks are: " + TaskList());

  auto format = NegotiateFormat(*task, req.Query("format"), req.Header("accept"));
  if (!format.ok()) return format.status();
  if (async && *format != OutputFormat::kJson) {
    return BadRequest("text formats are synchronous only: drop 'Prefer: respond-async' or ask "
                      "for format=json");
  }

  auto input = ValidatePredictBody(*task, req.body);
  if (!input.ok()) return input.status();

  auto model = services.catalogue->Resolve(*task, input->requested_model);
  if (!model.ok()) return model.status();
  input->request.set_model(model->id());

  if (*task == Task::kAnnotation && *format == OutputFormat::kJson && !async &&
      input->sequence_length > kAnnotationSyncLimitBp) {
    return Status(ErrorCode::kSyncTooLarge,
                  "annotation JSON responses above " + std::to_string(kAnnotationSyncLimitBp) +
                      " bp must run asynchronously; resend with 'Prefer: respond-async' (or ask "
                      "for format=gff3 or bed, which stay synchronous); got " +
                      std::to_string(input->sequence_length) + " bp",
                  SyncTooLargeDetails{input->sequence_length, kAnnotationSyncLimitBp});
  }
  JobStart start;
  start.task = std::string(TaskName(*task));
  start.async = async;
  if (async && services.queue != nullptr) {
    start.queued = QueuedFromCall(call, "predict");
    start.queued->task = task_name;
    start.queued->facts["model"] = model->id();
  } else {
    start.work = std::make_unique<PredictJob>(services.backend, std::move(input).value(), *format);
  }
  return start;
}

std::string WorkerProgressMessage(const worker::v1::Progress& progress) {
  if (!progress.message().empty()) return progress.message();
  return "processed " + std::to_string(progress.windows_done()) + " of " +
         std::to_string(progress.windows_total()) + " windows";
}

RouteHandler MakePredictHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(
      s, [s](const RouteCall& call, bool async) { return AdmitPredict(call, s, async); });
}

}  // namespace dnaserve::gateway
