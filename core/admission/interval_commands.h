// Interval requests as the queue carries them (dnaserve.jobs.v1.IntervalCommand, queue entry
// version 4) and back: the admitted prediction or find-genes job, its sequence still empty, and
// the interval a runner reads the bases of.
#pragma once

#include <variant>

#include "common/status.h"
#include "core/admission/admission.h"
#include "dnaserve/jobs/v1/command.pb.h"

namespace dnaserve::core {

// The interval as the command carries it, and back (also the ISM command's context).
void SetInterval(const GenomeInterval& in, jobs::v1::IntervalCommand::Interval* out);
GenomeInterval IntervalOf(const jobs::v1::IntervalCommand::Interval& in);

jobs::v1::JobCommand IntervalCommandFor(AdmittedPredict admitted);
jobs::v1::JobCommand IntervalCommandFor(AdmittedFindGenes admitted);

// The admitted job with its interval restored; invalid_request for a command naming a task or
// format this release does not know, or carrying no job.
StatusOr<std::variant<AdmittedPredict, AdmittedFindGenes>> FromIntervalCommand(
    jobs::v1::IntervalCommand command);

}  // namespace dnaserve::core
