// POST /v1/tasks/{task}/predict: the core's admission (format, body, model, sync caps), then a
// job (one worker call) that runs here while a sync client waits, or on a runner when async.
#pragma once

#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakePredictHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
