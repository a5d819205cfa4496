// The routes of a replica's operations listener, gateway or runner (common/observability/admin_server.h):
//   /metrics  Prometheus text format: this replica's counters, plus gauges read at scrape time
//   /ready    Readiness::Check (503 while starting or draining)
//   /live     200 while the process can answer (the public /health is the same signal)
#pragma once

#include <map>
#include <string>

#include "core/dispatch/worker_client.h"
#include "core/ops/readiness.h"
#include "common/observability/admin_server.h"
#include "common/observability/metrics.h"

namespace dnaserve::core {

// Adds the worker pool's scrape-time series: replicas in and out of rotation per task family,
// and calls retried on another replica. `backend` must outlive the registry's renders.
void RegisterWorkerPoolMetrics(metrics::Registry* registry, const GrpcInferenceBackend* backend);

std::map<std::string, observability::AdminHandler> AdminRoutes(
    const metrics::Registry* registry, Readiness* readiness);

}  // namespace dnaserve::core
