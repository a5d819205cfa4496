#include "gateway/handlers/predict_handler.h"

#include <utility>

#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/admission/interval_commands.h"
#include "core/admission/predict_job.h"

namespace dnaserve::gateway {
namespace {

StatusOr<JobStart> Admit(const RouteCall& call, const GatewayServices& services, bool async) {
  auto admitted = core::AdmitPredict(call.params.at("task"), CallInputOf(call.request, async),
                                     *services.catalogue);
  if (!admitted.ok()) return admitted.status();
  JobStart start;
  start.task = std::string(TaskName(admitted->input.task));
  start.async = async;
  if (admitted->input.interval) {
    // The reference is read by the runners (the gateway links no htslib): queued even when
    // the client waits, as a sync find-genes request is.
    start.queued = QueuedFor(std::string(core::kIntervalKind),
                             core::IntervalCommandFor(std::move(admitted).value()));
  } else if (async && services.queue != nullptr) {
    start.queued = QueuedFor("predict", core::PredictCommandFor(std::move(admitted).value()));
  } else {
    // The design's hot path: one worker call while the client waits, run in this process.
    start.work = core::MakePredictJob(services.backend, std::move(admitted).value());
  }
  return start;
}

}  // namespace

RouteHandler MakePredictHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(s, [s](const RouteCall& call, bool async) { return Admit(call, s, async); });
}

}  // namespace dnaserve::gateway
