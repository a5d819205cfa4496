#include "core/ops/admin_routes.h"

#include "common/version.h"

namespace dnaserve::core {

void RegisterWorkerPoolMetrics(metrics::Registry* registry, const GrpcInferenceBackend* backend) {
  registry->AddCallback(
      "dnaserve_worker_replicas",
      "Configured worker replicas per task family: in rotation (health checks pass) or out",
      "gauge", {"task", "state"}, [backend] {
        std::vector<std::pair<metrics::LabelValues, double>> samples;
        for (const auto& [task, counts] : backend->Replicas()) {
          const std::string name(TaskName(task));
          samples.push_back({{name, "in_rotation"}, static_cast<double>(counts.in_rotation)});
          samples.push_back({{name, "out_of_rotation"}, static_cast<double>(counts.out_of_rotation)});
        }
        return samples;
      });
  registry->AddCallback(
      "dnaserve_worker_call_retries_total",
      "Worker calls sent to another replica after failing before any worker accepted them",
      "counter", {}, [backend] {
        return std::vector<std::pair<metrics::LabelValues, double>>{
            {{}, static_cast<double>(backend->retries())}};
      });
}

std::map<std::string, observability::AdminHandler> AdminRoutes(
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

}  // namespace dnaserve::core
