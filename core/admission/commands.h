// Admitted jobs as the queue carries them (dnaserve/jobs/v1/command.proto) and back. Only a
// job that leaves its process is encoded: a gateway's sync prediction runs from the admitted
// struct itself.
#pragma once

#include "common/status.h"
#include "core/admission/admission.h"
#include "dnaserve/jobs/v1/command.pb.h"

namespace dnaserve::core {

// The encoders move the (large) sequence out of their argument.
jobs::v1::JobCommand PredictCommandFor(AdmittedPredict admitted);
jobs::v1::JobCommand FindGenesCommandFor(AdmittedFindGenes admitted);
jobs::v1::JobCommand VariantCommandFor(const ValidatedVariant& request);

// The decoders check what the type system cannot (a task or format name this build does not
// know, written by a newer release): invalid_request then, never a guess.
StatusOr<AdmittedPredict> PredictFromCommand(jobs::v1::PredictCommand command);
AdmittedFindGenes FindGenesFromCommand(jobs::v1::FindGenesCommand command);
ValidatedVariant VariantFromCommand(const jobs::v1::VariantCommand& command);
jobs::v1::JobCommand VariantScoreCommandFor(const AdmittedVariantScore& admitted);
// The queue entry version its command needs (core/jobs/job_queue.h): 3 for the splice scorer
// alone, 4 once it names another scorer, which a version-3 runner would silently drop.
int64_t VariantScoreEntryVersion(const AdmittedVariantScore& admitted);
AdmittedVariantScore VariantScoreFromCommand(const jobs::v1::VariantScoreCommand& command);

}  // namespace dnaserve::core
