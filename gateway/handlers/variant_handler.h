// POST /v1/workflows/genomic-variant-interpretation: asynchronous only (400 without
// Prefer: respond-async). Admission runs on the executor because its pre-acceptance checks read
// the object store (gateway/workflows/variant_interpretation.h); a resubmitted case returns its
// existing job (job identity), anything else runs as a new job.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeVariantHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
