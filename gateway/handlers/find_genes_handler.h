// POST /v1/workflows/find-genes-and-predict-expression: admission (JSON only, closed body, both
// models resolved, the 50,000 bp sync cap), then the workflow as a job, synchronous or in the
// background (gateway/workflows/find_genes.h).
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeFindGenesHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
