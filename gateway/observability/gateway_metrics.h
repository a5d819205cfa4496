// The gateway's Prometheus metrics. One instance per process, registered on the registry that the
// admin listener renders at /metrics. Labels are closed sets only (route patterns, methods,
// status codes, task names, refusal causes): no client ids, keys or raw paths, because /metrics
// must not reveal who uses the service and label sets must stay small.
#pragma once

#include <cstdint>
#include <string>

#include "core/quota/quota.h"
#include "common/observability/metrics.h"

namespace dnaserve::gateway {

class GatewayMetrics {
 public:
  explicit GatewayMetrics(metrics::Registry* registry);

  // One finished HTTP exchange. `route` is the matched route pattern, or "unmatched".
  void RequestFinished(const std::string& route, const std::string& method, int status,
                       double seconds);
  // One 429, by which limit refused it.
  void RateLimited(core::RateLimitCause cause);
  // A predict job ended: state "completed" (2xx) or "failed"; mode "sync" or "async".
  void JobFinished(const std::string& task, const std::string& mode, ErrorCode code);
  // A predict job was refused because the executor queue was full (503).
  void JobRefused(const std::string& task);
  // One call to an inference worker; `code` is the error code name, "ok" on success.
  void WorkerCall(const std::string& task, const std::string& code, double seconds);
  // Result of the latest Redis check made by readiness (1 reachable, 0 not).
  void SetRedisUp(bool up);

  metrics::Registry& registry() { return *registry_; }

 private:
  const uint64_t instance_;  // unique per object: keys RequestFinished's per-thread cache
  metrics::Registry* registry_;
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& request_seconds_;
  metrics::Family<metrics::Counter>& rate_limited_;
  metrics::Family<metrics::Counter>& jobs_finished_;
  metrics::Family<metrics::Counter>& jobs_refused_;
  metrics::Family<metrics::Counter>& worker_calls_;
  metrics::Family<metrics::Histogram>& worker_call_seconds_;
  metrics::Gauge& redis_up_;
};

// The name used as the `cause` label: "key_rate", "key_concurrency" or "edge_ip".
std::string_view RateLimitCauseName(core::RateLimitCause cause);

class JobRunner;

// Adds the scrape-time gauges of `runner` (jobs queued and running on this replica) to
// `registry`. Both must outlive the registry's renders.
void RegisterJobGauges(metrics::Registry* registry, JobRunner* runner);

}  // namespace dnaserve::gateway
