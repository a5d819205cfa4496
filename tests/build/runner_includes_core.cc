// Must compile: the control of the probes beside it (a runner file sees the core it links).
#include "core/jobs/job.h"
#include "runner/queue_runner.h"

namespace dnaserve::runner {
int IncludeProbe() { return static_cast<int>(sizeof(core::JobOutput)); }
}  // namespace dnaserve::runner
