// POST /v1/ism: the core's admission (core/admission/ism.h: JSON only, the window, the context,
// one scorer and its options), then a job on a runner, which holds the reference genome and the
// variant scorers (runner/workflows/ism.h); the gateway waits for it as for a variant score,
// or answers 202 when the caller asked for respond-async. The gateway reads no reference.
#pragma once

#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeIsmHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
