// Every job-creating route (predict, workflows) is the same handler around its own admission:
// read Prefer, admit (a refusal creates no job), create the job record, queue the work on the
// runner and answer: 202 with the submit envelope for async calls, the job's own response for
// sync ones.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gateway/handlers/services.h"
#include "gateway/jobs/job.h"

namespace dnaserve::gateway {

struct JobStart {
  std::string task;  // job record and meta.task: "promoter", "find_genes_and_predict_expression"
  bool async = false;
  std::unique_ptr<Job> work;
  // Non-empty (async jobs only): the case's identity (JobStore::CreateOrFind). A live job of the
  // caller with the same identity that has not failed is answered instead (202 with its job_id,
  // nothing runs); otherwise this job is created and recorded under it.
  std::string identity;
};

// `call` carries the job id and lease the pipeline took for this metered route. A full executor
// answers 503 (recorded as the job's result); nothing is left running or queued.
void StartJob(const GatewayServices& services, const RouteCall& call, JobStart start,
              const Responder& respond);

// Everything a route decides before a job exists: the job to start, or the refusal to answer
// with. `async` is what the caller's Prefer header asked for.
using JobAdmission = std::function<StatusOr<JobStart>(const RouteCall& call, bool async)>;

// Where a route's admission runs. Most admissions are quick checks on the request and run on
// the HTTP reactor; one that waits on other services (the variant workflow reads the object
// store) runs on the executor instead, and a full executor answers 503.
enum class AdmissionThread { kReactor, kExecutor };

// The handler of a job-creating route: PrefersRespondAsync, `admit`, then StartJob.
RouteHandler MakeJobRoute(const GatewayServices& services, JobAdmission admit,
                          AdmissionThread thread = AdmissionThread::kReactor);

// True when a Prefer header asks for respond-async (RFC 7240 tokens, case-insensitive).
bool PrefersRespondAsync(const std::optional<std::string>& prefer);

}  // namespace dnaserve::gateway
