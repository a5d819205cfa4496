#include "gateway/handlers/job_start.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "gateway/handlers/job_runner.h"
#include "gateway/http/error_response.h"
#include "gateway/render/predict_response.h"

namespace dnaserve::gateway {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status Busy(bool suggest_async) {
  return Status(ErrorCode::kServiceUnavailable,
                std::string("the gateway is at capacity; retry shortly") +
                    (suggest_async ? " or submit with Prefer: respond-async" : ""))
      .set_retry_after_seconds(5);
}

HttpResponse Accepted(const std::string& job_id, const std::string& task) {
  HttpResponse accepted;
  accepted.status = 202;
  accepted.body = RenderJobSubmitted(job_id, task);
  accepted.SetHeader("X-Job-Id", job_id);
  accepted.SetHeader("Content-Location", "/v1/tasks/jobs/" + job_id);
  return accepted;
}

}  // namespace

void StartJob(const GatewayServices& services, const RouteCall& call, JobStart start,
              const Responder& respond) {
  const std::string& job_id = call.job_id;
  const std::string& request_id = call.request.request_id;

  JobRecord record;
  record.job_id = job_id;
  record.request_id = request_id;
  record.owner = call.principal->client_id;
  record.task = start.task;
  record.mode = start.async ? "async" : "sync";
  record.state = start.async ? JobState::kAccepted : JobState::kRunning;
  record.created_at_ms = record.updated_at_ms = NowMs();
  if (!start.identity.empty() && start.async) {
    auto standing = services.jobs->CreateOrFind(record, start.identity);
    if (!standing.ok()) {
      respond(ErrorResponse(standing.status(), request_id));
      return;
    }
    if (*standing != job_id) {  // the same case is already running or done: no second run
      respond(Accepted(*standing, start.task));
      return;
    }
  } else if (Status created = services.jobs->Create(record); !created.ok()) {
    respond(ErrorResponse(created, request_id));
    return;
  }

  JobSubmission submission;
  submission.job_id = job_id;
  submission.task = start.task;
  submission.request_id = request_id;
  submission.lease = call.lease;
  submission.work = std::move(start.work);
  std::function<void(HttpResponse)> on_done;
  if (!start.async) {
    on_done = respond;
    submission.client_gone = call.request.connection_closed;
  }
  if (!services.runner->Submit(std::move(submission), on_done)) {
    HttpResponse busy = ErrorResponse(Busy(!start.async), request_id);
    services.jobs->Finish(job_id, busy.status, busy.content_type, busy.body);
    busy.SetHeader("X-Job-Id", job_id);
    respond(std::move(busy));
    return;
  }
  if (start.async) respond(Accepted(job_id, start.task));
}

RouteHandler MakeJobRoute(const GatewayServices& services, JobAdmission admit,
                          AdmissionThread thread) {
  GatewayServices s = services;
  auto admit_and_start = [s, admit = std::move(admit)](const RouteCall& call,
                                                       const Responder& respond) {
    const bool async = PrefersRespondAsync(call.request.Header("prefer"));
    auto start = admit(call, async);
    if (!start.ok()) {
      respond(ErrorResponse(start.status(), call.request.request_id));
      return;  // the lease is released with `call`
    }
    StartJob(s, call, std::move(start).value(), respond);
  };
  if (thread == AdmissionThread::kReactor) {
    return [admit_and_start](RouteCall call, Responder respond) { admit_and_start(call, respond); };
  }
  return [s, admit_and_start](RouteCall call, Responder respond) {
    auto shared = std::make_shared<RouteCall>(std::move(call));
    const std::string request_id = shared->request.request_id;
    const bool queued =
        s.executor != nullptr && s.executor->TrySubmit([admit_and_start, shared, respond] {
          admit_and_start(*shared, respond);
        });
    if (!queued) respond(ErrorResponse(Busy(/*suggest_async=*/false), request_id));
  };
}

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

}  // namespace dnaserve::gateway
