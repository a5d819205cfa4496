// POST /v1/tasks/{task}/predict: admission (format, Prefer, body, model, sync caps), then a job
// (one worker call) that runs synchronously or in the background.
#pragma once

#include <string>

#include "dnaserve/worker/v1/worker.pb.h"
#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakePredictHandler(const GatewayServices& services);

// The route's admission: format, Prefer, body, model, sync caps. On a gateway an async call
// becomes a queued job; a sync one (or any call on a runner, whose services have no queue) the
// worker call to run in place.
StatusOr<JobStart> AdmitPredict(const RouteCall& call, const GatewayServices& services,
                                bool async);

// A worker's progress event as a poll message: its own text, else "processed 3 of 8 windows".
std::string WorkerProgressMessage(const worker::v1::Progress& progress);

}  // namespace dnaserve::gateway
