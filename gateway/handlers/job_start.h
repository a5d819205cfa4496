// Every job-creating route (predict, workflows) is the same handler around its own admission:
// read Prefer, admit (a refusal creates no job), then start the job where it runs and answer:
// 202 with the submit envelope for async calls, the job's own response for sync ones.
//
// Where a job runs: a sync prediction runs on this gateway (the design's hot path: one worker
// call while the client waits). Everything that outlives a request (async predictions, both
// workflows) goes to the runners through the Redis queue (core/jobs/job_queue.h), so the
// death of this gateway loses none of it; for a sync find-genes request the gateway waits for
// the runner's answer. The variant workflow's checks that need the object store are made by a
// runner while the gateway waits (the gateway holds no object-store credentials).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/admission/admission.h"
#include "core/jobs/job.h"
#include "core/jobs/job_queue.h"
#include "dnaserve/jobs/v1/command.pb.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

struct JobStart {
  std::string task;  // job record and meta.task: "promoter", "find_genes_and_predict_expression"
  bool async = false;
  // Exactly one of the two: the work to run in this process, or the job for a runner (its
  // kind, request and facts; StartJob fills in ids, principal, mode and deadline).
  std::unique_ptr<core::Job> work;
  std::optional<core::QueuedJob> queued;
  // Queued jobs only: a runner admits the job first (the variant workflow) and answers while
  // the gateway waits; the runner creates the job record (or finds the standing one).
  bool runner_admits = false;
};

// `call` carries the job id and lease taken for this metered route (MeterCall). A full executor
// or queue answers 503 / 429 (recorded as the job's result); nothing is left running or queued.
void StartJob(const GatewayServices& services, const RouteCall& call, JobStart start,
              const Responder& respond);

// Everything a route decides before a job exists: the job to start, or the refusal to answer
// with. `async` is what the caller's Prefer header asked for.
using JobAdmission = std::function<StatusOr<JobStart>(const RouteCall& call, bool async)>;

// The handler of a job-creating route: PrefersRespondAsync, `admit`, the quota the pipeline left
// to it (for a job run here, in one step with the job record: MeterAndCreate), then StartJob.
RouteHandler MakeJobRoute(const GatewayServices& services, JobAdmission admit);

// True when a Prefer header asks for respond-async (RFC 7240 tokens, case-insensitive).
bool PrefersRespondAsync(const std::optional<std::string>& prefer);

// The call as the core's admission takes it: the body, ?format=, Accept and Prefer. The body is
// a view into `request`, which must outlive it.
core::CallInput CallInputOf(const HttpRequest& request, bool async);

// A queued job of `kind` carrying the admitted command (StartJob fills in the rest).
core::QueuedJob QueuedFor(std::string kind, const jobs::v1::JobCommand& command);

}  // namespace dnaserve::gateway
