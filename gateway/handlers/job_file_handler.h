// GET /v1/tasks/jobs/{job_id}/files/{name}: a finished job's named file (a batch variant
// score's annotated.vcf.gz, runner/workflows/variant_score_batch.h), owner-scoped like a poll.
// Only the files a job publishes are served; its checkpoints are not.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeGetJobFileHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
