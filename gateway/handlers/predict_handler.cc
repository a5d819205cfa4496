#include "gateway/handlers/predict_handler.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "gateway/handlers/job_runner.h"
#include "gateway/http/error_response.h"
#include "gateway/render/predict_response.h"
#include "gateway/validation/predict_request.h"

namespace dnaserve::gateway {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string TaskList() {
  std::string out;
  for (Task t : kAllTasks) {
    if (!out.empty()) out += ", ";
    out += TaskName(t);
  }
  return out;
}

Status Busy() {
  return Status(ErrorCode::kServiceUnavailable,
                "the gateway is at capacity; retry shortly or submit with Prefer: respond-async")
      .set_retry_after_seconds(5);
}

// Everything decided before a job exists. A failure here creates no job.
StatusOr<PredictJob> Admit(const RouteCall& call, const ModelCatalogue& catalogue, bool async) {
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

  auto model = catalogue.Resolve(*task, input->requested_model);
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

  PredictJob job;
  job.job_id = call.job_id;
  job.request_id = req.request_id;
  job.input = std::move(input).value();
  job.format = *format;
  job.lease = call.lease;
  return job;
}

}  // namespace

bool PrefersRespondAsync(const std::optional<std::string>& prefer) {
  if (!prefer) return false;
  std::string lower = *prefer;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  size_t start = 0;
  while (start <= lower.size()) {
    size_t end = lower.find_first_of(",;", start);
    if (end == std::string::npos) end = lower.size();
    std::string token = lower.substr(start, end - start);
    auto b = token.find_first_not_of(" \t");
    auto e = token.find_last_not_of(" \t");
    if (b != std::string::npos && token.substr(b, e - b + 1) == "respond-async") return true;
    start = end + 1;
  }
  return false;
}

RouteHandler MakePredictHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return [s](RouteCall call, Responder respond) {
    const bool async = PrefersRespondAsync(call.request.Header("prefer"));
    auto admitted = Admit(call, *s.catalogue, async);
    if (!admitted.ok()) {
      respond(ErrorResponse(admitted.status(), call.request.request_id));
      return;  // the lease is released with `call`
    }
    PredictJob job = std::move(admitted).value();

    JobRecord record;
    record.job_id = job.job_id;
    record.request_id = job.request_id;
    record.owner = call.principal->client_id;
    record.task = std::string(TaskName(job.input.task));
    record.mode = async ? "async" : "sync";
    record.state = async ? JobState::kAccepted : JobState::kRunning;
    record.created_at_ms = record.updated_at_ms = NowMs();
    if (Status created = s.jobs->Create(record); !created.ok()) {
      respond(ErrorResponse(created, call.request.request_id));
      return;
    }

    const std::string job_id = job.job_id;
    const std::string request_id = job.request_id;
    const std::string task = record.task;
    std::function<void(HttpResponse)> on_done;
    if (!async) on_done = respond;
    if (!s.runner->Submit(std::move(job), on_done)) {
      HttpResponse busy = ErrorResponse(Busy(), request_id);
      s.jobs->Finish(job_id, busy.status, busy.content_type, busy.body);
      busy.SetHeader("X-Job-Id", job_id);
      respond(std::move(busy));
      return;
    }
    if (async) {
      HttpResponse accepted;
      accepted.status = 202;
      accepted.body = RenderJobSubmitted(job_id, task);
      accepted.SetHeader("X-Job-Id", job_id);
      accepted.SetHeader("Content-Location", "/v1/tasks/jobs/" + job_id);
      respond(std::move(accepted));
    }
  };
}

}  // namespace dnaserve::gateway
