#include "gateway/observability/gateway_metrics.h"

#include "gateway/handlers/job_runner.h"

#include <atomic>
#include <string>
#include <unordered_map>

namespace dnaserve::gateway {

std::string_view RateLimitCauseName(core::RateLimitCause cause) {
  switch (cause) {
    case core::RateLimitCause::kKeyRate:
      return "key_rate";
    case core::RateLimitCause::kKeyConcurrency:
      return "key_concurrency";
    case core::RateLimitCause::kEdgeIp:
      return "edge_ip";
    case core::RateLimitCause::kNone:
      break;
  }
  return "none";
}

namespace {
std::atomic<uint64_t> g_next_instance{1};
}  // namespace

GatewayMetrics::GatewayMetrics(metrics::Registry* registry)
    : instance_(g_next_instance.fetch_add(1)),
      registry_(registry),
      requests_(registry->AddCounter("dnaserve_http_requests_total",
                                     "HTTP requests answered, by route pattern, method and status",
                                     {"route", "method", "status"})),
      request_seconds_(registry->AddHistogram(
          "dnaserve_http_request_duration_seconds",
          "Time from a request's arrival to its response, by route pattern and method",
          {"route", "method"}, metrics::LatencyBuckets())),
      rate_limited_(registry->AddCounter(
          "dnaserve_rate_limited_total",
          "429 answers by the limit that refused: key_rate, key_concurrency or edge_ip",
          {"cause"})),
      jobs_finished_(registry->AddCounter(
          "dnaserve_jobs_finished_total",
          "Predict jobs run by this gateway that ended, by task, mode and final state",
          {"task", "mode", "state"})),
      jobs_refused_(registry->AddCounter(
          "dnaserve_jobs_refused_total",
          "Predict jobs refused with 503 because this gateway's executor queue was full",
          {"task"})),
      worker_calls_(registry->AddCounter("dnaserve_worker_calls_total",
                                         "Calls to inference workers, by task and outcome code",
                                         {"task", "code"})),
      worker_call_seconds_(registry->AddHistogram("dnaserve_worker_call_duration_seconds",
                                                  "Duration of calls to inference workers",
                                                  {"task"}, metrics::LatencyBuckets())),
      redis_up_(registry
                    ->AddGauge("dnaserve_redis_up",
                               "1 when the latest readiness check reached Redis, else 0")
                    .With({})) {
  // Every cause is published from the start, so a rate() over it never starts from nothing.
  for (auto cause :
       {core::RateLimitCause::kKeyRate, core::RateLimitCause::kKeyConcurrency, core::RateLimitCause::kEdgeIp}) {
    rate_limited_.With({std::string(RateLimitCauseName(cause))});
  }
}

void GatewayMetrics::RequestFinished(const std::string& route, const std::string& method,
                                     int status, double seconds) {
  // Every request ends here: the children for a (route, method, status) are looked up once per
  // thread (Family::With builds label vectors and takes a lock), then reused. Children live as
  // long as the registry; the key carries this object's instance number (never reused, unlike
  // its address).
  struct Children {
    metrics::Counter* requests;
    metrics::Histogram* seconds;
  };
  thread_local std::unordered_map<std::string, Children> cache;
  thread_local std::string key;
  key.assign(reinterpret_cast<const char*>(&instance_), sizeof(instance_));
  key.append(route).push_back('\n');
  key.append(method).push_back('\n');
  key.append(std::to_string(status));
  auto it = cache.find(key);
  if (it == cache.end()) {
    Children children{&requests_.With({route, method, std::to_string(status)}),
                      &request_seconds_.With({route, method})};
    it = cache.emplace(key, children).first;
  }
  it->second.requests->Inc();
  it->second.seconds->Observe(seconds);
}

void GatewayMetrics::RateLimited(core::RateLimitCause cause) {
  if (cause == core::RateLimitCause::kNone) return;
  rate_limited_.With({std::string(RateLimitCauseName(cause))}).Inc();
}

void GatewayMetrics::JobFinished(const std::string& task, const std::string& mode,
                                 ErrorCode code) {
  const bool completed = code == ErrorCode::kOk;
  jobs_finished_.With({task, mode, completed ? "completed" : "failed"}).Inc();
}

void GatewayMetrics::JobRefused(const std::string& task) { jobs_refused_.With({task}).Inc(); }

void GatewayMetrics::WorkerCall(const std::string& task, const std::string& code, double seconds) {
  worker_calls_.With({task, code}).Inc();
  worker_call_seconds_.With({task}).Observe(seconds);
}

void GatewayMetrics::SetRedisUp(bool up) { redis_up_.Set(up ? 1 : 0); }

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
  registry->AddCallback(
      "dnaserve_after_reply_writes_pending",
      "Writes owed by answered sync jobs (stored results, lease releases) waiting for the "
      "writer thread",
      "gauge", {}, [runner] {
        return std::vector<std::pair<metrics::LabelValues, double>>{
            {{}, static_cast<double>(runner->after_reply_counts().pending)}};
      });
  registry->AddCallback(
      "dnaserve_after_reply_writes_inline_total",
      "Writes owed by answered sync jobs that were made on the job's own thread because the "
      "writer's queue was full (or stopped)",
      "counter", {}, [runner] {
        return std::vector<std::pair<metrics::LabelValues, double>>{
            {{}, static_cast<double>(runner->after_reply_counts().done_inline)}};
      });
}

}  // namespace dnaserve::gateway
