// GET /v1/tasks/jobs and GET /v1/tasks/jobs/{job_id}: owner-scoped reads of the job store.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeListJobsHandler(const GatewayServices& services);
RouteHandler MakeGetJobHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
