// POST /v1/ism, admitted (core/validation/ism_request.h says what is checked): JSON only,
// synchronous unless the caller asks for respond-async, the scorer's model resolved to its
// task's default. Queued for a runner as an IsmCommand (queue entry version 5), since the
// scorers run where the reference and the variant scorers are.
#pragma once

#include "common/status.h"
#include "core/admission/admission.h"
#include "core/dispatch/model_catalogue.h"
#include "core/validation/ism_request.h"
#include "dnaserve/jobs/v1/command.pb.h"

namespace dnaserve::core {

struct AdmittedIsm {
  ValidatedIsm input;
  // The scorer with its resolved model, as variant scoring takes it (no variants).
  AdmittedVariantScore scorer;
};

StatusOr<AdmittedIsm> AdmitIsm(const CallInput& call, const ModelCatalogue& catalogue);

jobs::v1::JobCommand IsmCommandFor(const AdmittedIsm& admitted);
// The queue entry version the command needs beyond its kind's (core/jobs/job_queue.h): 7 for
// the expression scorer, which a version-6 runner refuses; 0 (the kind's) otherwise.
int64_t IsmEntryVersion(const AdmittedIsm& admitted);
AdmittedIsm IsmFromCommand(const jobs::v1::IsmCommand& command);

}  // namespace dnaserve::core
