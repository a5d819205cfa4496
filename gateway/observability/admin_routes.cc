#include "gateway/observability/admin_routes.h"

#include "common/version.h"

namespace dnaserve::gateway {

void RegisterJobGauges(metrics::Registry* registry, JobRunner* runner) {
  registry->AddCallback(
      "dnaserve_jobs_in_progress",
      "Predict jobs on this gateway that have not ended: queued (accepted, waiting for an "
      "executor thread) or running",
      "gauge", {"state"}, [runner] {
        JobRunner::Counts counts = runner->counts();
        return std::vector<std::pair<metrics::LabelValues, double>>{
            {{"queued"}, static_cast<double>(counts.queued)},
            {{"running"}, static_cast<double>(counts.running)}};
      });
}

std::map<std::string, observability::AdminHandler> GatewayAdminRoutes(
    const metrics::Registry* registry, Readiness* readiness) {
  return {
      {"/metrics",
       [registry] {
         return observability::AdminResponse{200, metrics::kTextFormatContentType,
                                             registry->Render()};
       }},
      {"/ready", [readiness] { return readiness->Check(); }},
      {"/live",
       [] {
         return observability::AdminResponse{200, "text/plain; charset=utf-8",
                                             "live " + std::string(ServiceVersion()) + "\n"};
       }},
  };
}

}  // namespace dnaserve::gateway
