// POST /v1/workflows/find-genes-and-predict-expression: the core's admission (JSON only, closed
// body, both models resolved, the 50,000 bp sync cap), then the workflow as a job on a runner
// (runner/jobs/runner_jobs.h), which a sync caller waits for.
#pragma once

#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeFindGenesHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
