// dnaserve-gateway: wiring only. Builds the components from the configuration, serves until
// SIGINT/SIGTERM, then drains and stops.
#include <iostream>

#include "common/command_line.h"
#include "common/log.h"
#include "common/shutdown_signals.h"
#include "common/version.h"
#include "gateway/config/gateway_config.h"
#include "core/dispatch/catalogue_refresher.h"
#include "core/dispatch/worker_client.h"
#include "gateway/handlers/job_runner.h"
#include "gateway/handlers/job_waiter.h"
#include "core/jobs/job_queue.h"
#include "gateway/http/routes.h"
#include "core/jobs/redis_admit_and_create.h"
#include "core/jobs/redis_job_store.h"
#include "core/ops/admin_routes.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/observability/metered_backend.h"
#include "gateway/ratelimit/ip_rate_limiter.h"
#include "core/quota/redis_quota_store.h"
#include "core/redis/redis_connection.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

int main(int argc, char** argv) {
  // One line per request: buffered, so that logging is not what a request costs.
  log::Init("gateway", log::Output::kBuffered);
  bool exit_now = false;
  auto config = ParseGatewayConfig(argc, argv, &exit_now);
  if (exit_now) return 0;
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return kBadConfigurationExit;
  }
  auto keys = KeyStore::LoadFile(config->keys_file);
  if (!keys.ok()) return FailStartup("keys_file_invalid", keys.status());
  auto endpoints = core::WorkerEndpoints::Parse(config->workers);
  if (!endpoints.ok()) return FailStartup("workers_invalid", endpoints.status());
  auto redis = core::ConnectRedis(*config);
  if (!redis.ok()) return FailStartup("redis_url_invalid", redis.status());
  if (Status credentials = core::CheckRedisCredentials(**redis); !credentials.ok()) {
    return FailStartup("redis_credentials_refused", credentials);
  }
  auto trusted_proxies = TrustedProxies::Parse(config->trusted_proxies);
  if (!trusted_proxies.ok()) {
    return FailStartup("trusted_proxies_invalid", trusted_proxies.status());
  }

  const ShutdownSignals signals;  // every thread started below inherits the blocked mask

  core::SharedStores stores(*redis, *config);
  core::RedisJobStore& jobs = stores.jobs;
  core::RedisQuotaStore& quotas = stores.quotas;
  core::RedisJobQueue& queue = stores.queue;
  core::RedisAdmitAndCreate admit_and_create(*redis, &quotas, &jobs);
  JobWaiter waiter(&jobs, &queue);
  IpRateLimiterOptions ip_options;
  ip_options.requests_per_second = config->ip_rate_per_second;
  ip_options.burst = config->ip_burst;
  IpRateLimiter ip_limiter(ip_options);
  core::GrpcInferenceBackend backend(core::WorkerBackendOptions(
      *endpoints, *config, std::chrono::seconds(config->sync_timeout_seconds)));
  core::ModelCatalogue catalogue;
  core::CatalogueRefresher refresher(&backend, &catalogue);
  core::Executor executor(config->executor_threads, static_cast<size_t>(config->executor_queue));
  JobRunner runner(&jobs, &executor);
  DocsHandler docs(config->docs_dir);
  metrics::Registry registry;
  metrics::AddBuildInfo(&registry);
  GatewayMetrics gateway_metrics(&registry);
  MeteredBackend metered_backend(&backend, &gateway_metrics);
  RegisterJobGauges(&registry, &runner);
  core::RegisterWorkerPoolMetrics(&registry, &backend);
  runner.set_metrics(&gateway_metrics);
  runner.set_sync_budget(std::chrono::seconds(config->sync_timeout_seconds));
  std::vector<Task> tasks;
  for (const auto& [task, addresses] : endpoints->addresses) tasks.push_back(task);
  core::Readiness readiness(&jobs, &catalogue, tasks,
                           [&gateway_metrics](bool up) { gateway_metrics.SetRedisUp(up); });

  GatewayServices services;
  services.keys = &keys.value();
  services.quotas = &quotas;
  services.jobs = &jobs;
  services.admit_and_create = &admit_and_create;
  services.backend = &metered_backend;
  services.catalogue = &catalogue;
  services.docs = &docs;
  services.runner = &runner;
  services.executor = &executor;
  services.queue = &queue;
  services.genomes = &stores.genomes;
  services.waiter = &waiter;
  services.sync_budget = std::chrono::seconds(config->sync_timeout_seconds);
  services.metrics = &gateway_metrics;
  services.admit_ip = [&ip_limiter](const std::string& ip) -> std::optional<core::QuotaDecision> {
    IpDecision decision = ip_limiter.Admit(ip);
    if (decision.admitted) return std::nullopt;
    Status refused(ErrorCode::kTooManyRequests, "too many requests from this address");
    refused.set_retry_after_seconds(decision.retry_after_seconds);
    return core::QuotaDecision{refused, decision.info, core::RateLimitCause::kEdgeIp};
  };
  RequestPipeline pipeline(services, BuildRoutes(services));

  HttpServerOptions http;
  http.address = config->listen_address;
  http.port = config->port;
  http.threads = config->http_threads;
  http.drain_timeout = std::chrono::seconds(config->drain_timeout_seconds);
  // A connection is closed after this long without bytes, a sync call's included: the longest
  // sync call (its worker deadline) plus a minute to render and send its answer.
  http.keepalive_timeout = std::chrono::seconds(config->sync_timeout_seconds + 60);
  http.trusted_proxies = *trusted_proxies;
  http.max_buffered_body_bytes = static_cast<uint64_t>(config->max_buffered_body_mb) << 20;
  HttpServer server(http, [&pipeline](HttpRequest request, Responder respond) {
    pipeline.Handle(std::move(request), std::move(respond));
  });

  std::optional<observability::AdminServer> admin;
  if (!config->admin_listen.empty()) {
    admin.emplace(config->admin_listen, core::AdminRoutes(&registry, &readiness));
    if (Status started = admin->Start(); !started.ok()) {
      return FailStartup("admin_listen_failed", started);
    }
  }

  refresher.Start();
  runner.Start();
  waiter.Start();
  if (Status started = server.Start(); !started.ok()) {
    return FailStartup("listen_failed", started);
  }
  log::Info("gateway_started", {{"address", config->listen_address},
                                {"port", server.port()},
                                {"admin_port", admin ? admin->port() : 0},
                                {"version", ServiceVersion()},
                                {"keys", static_cast<int64_t>(keys->size())}});
  log::Flush();  // the start is worth seeing at once

  const int signal_number = signals.Wait();
  // Graceful termination: leave the Service (readiness 503), ask keep-alive clients to go
  // elsewhere, finish what was accepted within the drain budget, then stop.
  const auto drain_deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(config->drain_timeout_seconds);
  log::Info("gateway_stopping",
            {{"signal", signal_number}, {"drain_timeout_s", config->drain_timeout_seconds}});
  readiness.BeginDrain();
  server.BeginDrain();
  server.Stop();  // waits for in-flight responses (sync jobs among them), then stops listening
  const bool drained = runner.WaitIdle(drain_deadline);  // async jobs still running
  runner.Stop();  // cancels what is left
  waiter.Stop();  // sync clients still waiting for a runner get 503 (their jobs go on)
  executor.Shutdown();
  refresher.Stop();
  if (admin) admin->Stop();
  log::Info("gateway_stopped", {{"drained", drained}});
  log::Flush();
  return 0;
}
