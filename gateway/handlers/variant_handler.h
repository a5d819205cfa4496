// POST /v1/workflows/genomic-variant-interpretation: asynchronous only (400 without
// Prefer: respond-async). The gateway checks the body; the checks that read the object store or
// the start-site catalogue are made by a runner while the gateway waits for its verdict
// (runner/jobs/runner_jobs.h): a resubmitted case returns its existing job (job identity),
// anything else is queued as a new job.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeVariantHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
