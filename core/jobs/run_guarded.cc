#include "core/jobs/run_guarded.h"

#include "common/log.h"

namespace dnaserve::core {

Status JobThrew(std::string_view job_id, std::string_view what) {
  log::Error("job_threw", {{"job_id", job_id}, {"error", what}});
  return Internal("internal error");
}

}  // namespace dnaserve::core
