// The last line of defence around running a job or rendering its result: a job must not throw
// (Job::Run), but a foreign exception (std::bad_alloc and the like) escaping one must neither
// end the process (on a gRPC or pool thread it would) nor reach the caller. It becomes the
// job's failure in the Status vocabulary: Internal("internal error"), logged once as
// `job_threw` with the job's id. The gateway, the runner and the predict job's asynchronous
// rendering all go through this one guard, so clients see the same error from each.
#pragma once

#include <exception>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "core/jobs/job.h"

namespace dnaserve::core {

// Logs the escaped exception and returns the status the job fails with.
Status JobThrew(std::string_view job_id, std::string_view what);

// Runs `work` (StatusOr<JobOutput>()), never throwing. A template so that the guarded call
// costs nothing on the sync predict path.
template <typename Work>
StatusOr<JobOutput> RunGuarded(std::string_view job_id, Work&& work) {
  try {
    return std::forward<Work>(work)();
  } catch (const std::exception& e) {
    return JobThrew(job_id, e.what());
  } catch (...) {
    return JobThrew(job_id, "unknown exception");
  }
}

}  // namespace dnaserve::core
