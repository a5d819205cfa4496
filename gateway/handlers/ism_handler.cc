#include "gateway/handlers/ism_handler.h"

#include <utility>

#include "core/admission/ism.h"
#include "core/jobs/job_queue.h"

namespace dnaserve::gateway {

RouteHandler MakeIsmHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(s, [s](const RouteCall& call, bool async) -> StatusOr<JobStart> {
    auto admitted = core::AdmitIsm(CallInputOf(call.request, async), *s.catalogue);
    if (!admitted.ok()) return admitted.status();
    JobStart start;
    start.task = std::string(core::kIsmTask);
    start.async = async;
    start.queued = QueuedFor(std::string(core::kIsmKind), core::IsmCommandFor(*admitted));
    start.queued->command_version = core::IsmEntryVersion(*admitted);
    return start;
  });
}

}  // namespace dnaserve::gateway
