#include "gateway/handlers/variant_score_handler.h"

#include <utility>

#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/jobs/job_queue.h"

namespace dnaserve::gateway {

RouteHandler MakeVariantScoreHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(s, [s](const RouteCall& call, bool async) -> StatusOr<JobStart> {
    auto admitted = core::AdmitVariantScore(CallInputOf(call.request, async), *s.catalogue);
    if (!admitted.ok()) return admitted.status();
    JobStart start;
    start.task = std::string(core::kVariantScoreTask);
    start.async = false;
    start.queued = QueuedFor(std::string(core::kVariantScoreKind),
                             core::VariantScoreCommandFor(*admitted));
    start.queued->command_version = core::VariantScoreEntryVersion(*admitted);
    return start;
  });
}

}  // namespace dnaserve::gateway
