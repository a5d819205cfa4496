#include "gateway/render/job_response.h"
#include "gateway/handlers/job_start.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/log.h"
#include "core/jobs/admission_verdict.h"
#include "gateway/handlers/job_runner.h"
#include "gateway/handlers/job_waiter.h"
#include "gateway/http/error_response.h"
#include "gateway/http/routes.h"
#include "core/jobs/job_store_common.h"
#include "core/render/predict_response.h"

namespace dnaserve::gateway {
namespace {

// How long a gateway waits for a runner's admission verdict (the variant workflow's checks
// against the object store) before answering 503.
constexpr std::chrono::seconds kAdmissionWait(60);

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

HttpResponse FromRecord(const core::JobRecord& record) {
  HttpResponse response;
  response.status = HttpStatusFor(record);
  response.content_type = record.content_type;
  response.body = record.body;
  response.SetHeader("X-Job-Id", record.job_id);
  return response;
}

core::JobRecord NewRecord(const RouteCall& call, const JobStart& start, bool queued) {
  core::JobRecord record;
  record.job_id = call.job_id;
  record.request_id = call.request.request_id;
  record.owner = call.principal->client_id;
  record.task = start.task;
  record.mode = start.async ? "async" : "sync";
  record.state = start.async || queued ? core::JobState::kAccepted : core::JobState::kRunning;
  record.queued = queued;
  record.created_at_ms = record.updated_at_ms = NowMs();
  return record;
}

// Runs the job on this gateway (sync predictions). `created`: the record exists already
// (MeterAndCreate made it with the quota).
void StartHere(const GatewayServices& services, const RouteCall& call, JobStart start,
               const Responder& respond, bool created = false) {
  const std::string& job_id = call.job_id;
  const std::string& request_id = call.request.request_id;
  if (!created) {
    if (Status made = services.jobs->Create(NewRecord(call, start, false)); !made.ok()) {
      respond(ErrorResponse(made, request_id));
      return;
    }
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
    const Status busy_status = Busy(!start.async);
    (void)services.jobs->Fail(job_id, busy_status, request_id);
    HttpResponse busy = ErrorResponse(busy_status, request_id);
    busy.SetHeader("X-Job-Id", job_id);
    respond(std::move(busy));
    return;
  }
  if (start.async) respond(Accepted(job_id, start.task));
}

core::QueuedJob Complete(const GatewayServices& services, const RouteCall& call, JobStart& start) {
  core::QueuedJob job = std::move(*start.queued);
  job.job_id = call.job_id;
  job.request_id = call.request.request_id;
  job.client_id = call.principal->client_id;
  job.rate_per_minute = call.principal->rate_per_minute;
  job.max_concurrency = call.principal->max_concurrency;
  job.mode = start.async ? "async" : "sync";
  if (!start.async) job.deadline_ms = NowMs() + services.sync_budget.count() * 1000;
  return job;
}

// The variant workflow: a runner makes the checks that need the object store, then creates the
// job (or finds the standing one of the same case) and queues it; the gateway relays its verdict.
void StartWithRunnerAdmission(const GatewayServices& services, const RouteCall& call,
                              JobStart start, const Responder& respond) {
  const std::string request_id = call.request.request_id;
  core::QueuedJob job = Complete(services, call, start);
  if (Status queued = services.queue->EnqueueAdmission(job); !queued.ok()) {
    respond(ErrorResponse(queued, request_id));
    return;
  }
  auto lease = call.lease;
  auto queue = services.queue;
  const std::string job_id = call.job_id;
  const std::string task = start.task;
  services.waiter->WaitForVerdict(
      job_id, std::chrono::steady_clock::now() + kAdmissionWait, call.request.connection_closed,
      [=](WaitEnd end, const std::string* verdict) {
        if (end != WaitEnd::kAnswered) {
          (void)queue->RequestCancel(job_id);  // a late runner drops it
          respond(ErrorResponse(
              end == WaitEnd::kClientGone
                  ? core::ClientWentAway()
                  : Status(ErrorCode::kServiceUnavailable,
                           "no job runner answered in time; retry shortly")
                        .set_retry_after_seconds(5),
              request_id));
          return;
        }
        const core::AdmissionVerdict parsed = core::ParseAdmissionVerdict(*verdict);
        if (parsed.accepted) {
          // The runner owns the lease of a job it queued (and gave it the queued lifetime); a
          // standing job already holds its own.
          if (lease && parsed.job_id == job_id) lease->Detach();
          respond(Accepted(parsed.job_id, task));
          return;
        }
        HttpResponse refused;
        refused.status = parsed.legacy_http_status.value_or(HttpStatusFor(parsed.code));
        refused.body = parsed.body;
        respond(std::move(refused));
      });
}

void StartQueued(const GatewayServices& services, const RouteCall& call, JobStart start,
                 const Responder& respond) {
  if (start.runner_admits) {
    StartWithRunnerAdmission(services, call, std::move(start), respond);
    return;
  }
  const std::string& job_id = call.job_id;
  const std::string& request_id = call.request.request_id;
  const core::JobRecord record = NewRecord(call, start, true);
  if (Status created = services.jobs->Create(record); !created.ok()) {
    respond(ErrorResponse(created, request_id));
    return;
  }
  core::QueuedJob job = Complete(services, call, start);
  if (Status queued = services.queue->Enqueue(job); !queued.ok()) {
    (void)services.jobs->Fail(job_id, queued, request_id);
    HttpResponse refused = ErrorResponse(queued, request_id);
    refused.SetHeader("X-Job-Id", job_id);
    respond(std::move(refused));
    return;
  }
  if (call.lease) {
    // The runner renews and releases it from here on; queued, it keeps its seat however long.
    services.quotas->Renew(*call.principal, job_id, core::kQueuedLeaseTtlMs);
    call.lease->Detach();
  }
  if (start.async) {
    respond(Accepted(job_id, start.task));
    return;
  }
  auto queue = services.queue;
  const int64_t budget_s = services.sync_budget.count();
  services.waiter->WaitForRecord(
      job_id, record.owner, std::chrono::steady_clock::now() + services.sync_budget,
      call.request.connection_closed,
      [=](WaitEnd end, const core::JobRecord* finished) {
        if (end == WaitEnd::kAnswered) {
          respond(FromRecord(*finished));
          return;
        }
        // Nobody is left to read the answer (or the budget is spent): the runner stops.
        (void)queue->RequestCancel(job_id);
        HttpResponse response = ErrorResponse(
            end == WaitEnd::kDeadline
                ? Status(ErrorCode::kServiceUnavailable,
                         "the job did not finish within the " + std::to_string(budget_s) +
                             " s synchronous budget; resend with 'Prefer: respond-async'")
                : end == WaitEnd::kClientGone
                      ? core::ClientWentAway()
                      : Status(ErrorCode::kServiceUnavailable,
                               "the gateway stopped while waiting; resubmit the request")
                            .set_retry_after_seconds(5),
            request_id);
        response.SetHeader("X-Job-Id", job_id);
        respond(std::move(response));
      });
}

// The quota the pipeline left to this handler (RouteCall::deferred_metering), taken after the
// admission so that a job run here gets its record in the same Redis step. A refusal is
// answered (429 whatever the body, as when the quota came first) and false returned; a body
// that was refused still spends its token, as it did. `*created` tells StartHere.
bool TakeDeferredQuota(const GatewayServices& services, RouteCall& call,
                       const StatusOr<JobStart>& start, const Responder& respond, bool* created) {
  const bool runs_here = start.ok() && !start->queued;
  const core::QuotaDecision decision =
      runs_here ? MeterAndCreate(services, &call, NewRecord(call, *start, false))
                : MeterCall(services, &call);
  if (decision.status.ok() || decision.status.code() == ErrorCode::kTooManyRequests) {
    call.deferred_metering->info = decision.info;
  }
  if (!decision.status.ok()) {
    respond(ErrorResponse(decision.status, call.request.request_id));
    return false;
  }
  *created = runs_here;
  return true;
}

}  // namespace

void StartJob(const GatewayServices& services, const RouteCall& call, JobStart start,
              const Responder& respond) {
  if (start.queued && (services.queue == nullptr || services.waiter == nullptr)) {
    // Only a process wired without the runners' queue (a test harness) gets here.
    respond(ErrorResponse(Unavailable("this gateway has no job queue to run the job on"),
                          call.request.request_id));
    return;
  }
  if (start.queued) {
    StartQueued(services, call, std::move(start), respond);
  } else {
    StartHere(services, call, std::move(start), respond);
  }
}

core::CallInput CallInputOf(const HttpRequest& request, bool async) {
  core::CallInput input;
  input.body = request.body;
  input.query_format = request.Query("format");
  input.accept = request.Header("accept");
  input.async = async;
  return input;
}

core::QueuedJob QueuedFor(std::string kind, const jobs::v1::JobCommand& command) {
  core::QueuedJob job;
  job.kind = std::move(kind);
  job.command = command.SerializeAsString();
  return job;
}

RouteHandler MakeJobRoute(const GatewayServices& services, JobAdmission admit) {
  GatewayServices s = services;
  return [s, admit = std::move(admit)](RouteCall call, Responder respond) {
    const bool async = PrefersRespondAsync(call.request.Header("prefer"));
    auto start = admit(call, async);
    bool created = false;
    if (call.deferred_metering && !TakeDeferredQuota(s, call, start, respond, &created)) return;
    if (!start.ok()) {
      respond(ErrorResponse(start.status(), call.request.request_id));
      return;  // the lease is released with `call`
    }
    if (created) {
      StartHere(s, call, std::move(start).value(), respond, /*created=*/true);
      return;
    }
    StartJob(s, call, std::move(start).value(), respond);
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
