// POST /v1/variants/score: the core's admission (JSON only, synchronous, up to 100 variants,
// scorers and their options; per-variant problems travel with the command), then a job on a
// runner, which holds the reference genome and calls the splice worker; the gateway waits for
// it as for a sync find-genes request. The gateway reads no reference itself.
#pragma once

#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeVariantScoreHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
