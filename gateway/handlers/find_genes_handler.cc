#include "gateway/handlers/find_genes_handler.h"

#include <utility>

#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/admission/interval_commands.h"

namespace dnaserve::gateway {

RouteHandler MakeFindGenesHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(s, [s](const RouteCall& call, bool async) -> StatusOr<JobStart> {
    auto admitted = core::AdmitFindGenes(CallInputOf(call.request, async), *s.catalogue);
    if (!admitted.ok()) return admitted.status();
    // Annotation then one expression call per gene: work that can outlive the request, so it
    // runs on a runner even when the client waits for it.
    JobStart start;
    start.task = std::string(core::kFindGenesWorkflow);
    start.async = async;
    if (admitted->input.interval) {
      // The runner reads the interval's bases from its reference first.
      start.queued = QueuedFor(std::string(core::kIntervalKind),
                               core::IntervalCommandFor(std::move(admitted).value()));
    } else {
      start.queued =
          QueuedFor("find_genes", core::FindGenesCommandFor(std::move(admitted).value()));
    }
    return start;
  });
}

}  // namespace dnaserve::gateway
