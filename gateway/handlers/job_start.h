// The common tail of every job-creating route (predict, workflows): after admission, create the
// job record, queue the work on the runner and answer: 202 with the submit envelope for async
// calls, the job's own response for sync ones.
#pragma once

#include <memory>
#include <string>

#include "gateway/handlers/services.h"
#include "gateway/jobs/job.h"

namespace dnaserve::gateway {

struct JobStart {
  std::string task;  // job record and meta.task: "promoter", "find_genes_and_predict_expression"
  bool async = false;
  std::unique_ptr<Job> work;
};

// `call` carries the job id and lease the pipeline took for this metered route. A full executor
// answers 503 (recorded as the job's result); nothing is left running or queued.
void StartJob(const GatewayServices& services, const RouteCall& call, JobStart start,
              const Responder& respond);

}  // namespace dnaserve::gateway
