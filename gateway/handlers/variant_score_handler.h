// POST /v1/variants/score: the core's admission (scorers and their options; per-variant
// problems travel with the command), then a job on a runner, which holds the reference genome
// and calls the workers. Up to 100 JSON variants are answered synchronously (the gateway waits
// for the runner as for a sync find-genes request); more, or a VCF body (Content-Type
// text/x-vcf, text/vcf, application/gzip), are an async batch job answered 202
// (runner/workflows/variant_score_batch.h). The gateway reads no reference itself.
#pragma once

#include "gateway/handlers/job_start.h"
#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeVariantScoreHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
