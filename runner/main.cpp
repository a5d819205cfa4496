// dnaserve-runner: wiring only. Runs the jobs gateways queue in Redis (async predictions, both
// workflows) until SIGINT/SIGTERM, then finishes what it can and hands the rest back.
#include <filesystem>
#include <iostream>

#include "common/command_line.h"
#include "common/log.h"
#include "common/shutdown_signals.h"
#include "common/version.h"
#include "core/dispatch/catalogue_refresher.h"
#include "core/dispatch/worker_client.h"
#include "core/jobs/redis_job_store.h"
#include "core/ops/admin_routes.h"
#include "core/quota/redis_quota_store.h"
#include "core/redis/redis_connection.h"
#include "runner/config/runner_config.h"
#include "runner/queue_runner.h"
#include "runner/workflows/genome_publication.h"
#include "runner/workflows/variant_resources.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

// What is in the scratch directory at start-up was left by a runner that died mid-job (a
// Kubernetes pod keeps its emptyDir across container restarts): its jobs run again elsewhere.
void ClearScratch(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code remove_ec;
    std::filesystem::remove_all(entry.path(), remove_ec);
    if (!remove_ec) ++removed;
  }
  if (removed > 0) log::Info("runner_scratch_cleared", {{"dir", dir}, {"entries", removed}});
}

}  // namespace

int main(int argc, char** argv) {
  log::Init("runner");
  bool exit_now = false;
  auto config = runner::ParseRunnerConfig(argc, argv, &exit_now);
  if (exit_now) return 0;
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return kBadConfigurationExit;
  }
  auto endpoints = core::WorkerEndpoints::Parse(config->workers);
  if (!endpoints.ok()) return FailStartup("workers_invalid", endpoints.status());
  auto redis = core::ConnectRedis(*config);
  if (!redis.ok()) return FailStartup("redis_url_invalid", redis.status());
  if (Status credentials = core::CheckRedisCredentials(**redis); !credentials.ok()) {
    return FailStartup("redis_credentials_refused", credentials);
  }
  ClearScratch(config->variant_work_dir);
  auto variant = VariantResources::Load(VariantSettingsFrom(*config));
  if (!variant.ok()) return FailStartup("variant_workflow_invalid", variant.status());

  const ShutdownSignals signals;  // every thread started below inherits the blocked mask

  core::SharedStores stores(*redis, *config);
  core::RedisJobStore& jobs = stores.jobs;
  core::RedisQuotaStore& quotas = stores.quotas;
  core::RedisJobQueue& queue = stores.queue;
  core::GrpcInferenceBackend backend(core::WorkerBackendOptions(
      *endpoints, *config, std::chrono::seconds(config->worker_call_timeout_seconds)));
  core::ModelCatalogue catalogue;
  core::CatalogueRefresher refresher(&backend, &catalogue);
  core::Executor executor(config->executor_threads, static_cast<size_t>(config->executor_threads) * 4);

  runner::JobServices services;
  services.backend = &backend;
  services.catalogue = &catalogue;
  services.executor = &executor;
  services.variant = variant->get();
  services.max_model_calls = config->job_max_model_calls;
  services.jobs = &jobs;
  runner::AnswerCache answer_cache(
      *redis, {config->answer_cache_bytes, config->answer_cache_ttl_seconds, "dnaserve:"});
  services.answer_cache = &answer_cache;
  services.interval_answer_max_bytes = config->interval_answer_max_bytes;
  runner::QueueRunnerOptions options;
  options.consumer = config->runner_id;
  options.slots = config->slots;
  options.client_slots = config->client_slots;
  options.claim_timeout = std::chrono::seconds(config->claim_timeout_seconds);
  options.max_attempts = config->max_attempts;
  options.job_max = std::chrono::seconds(config->job_max_seconds);
  std::vector<Task> tasks;
  for (const auto& [task, addresses] : endpoints->addresses) tasks.push_back(task);
  // Jobs wait until every family's models are known, or for at most 30 s: a family that is
  // down at start-up must not stop the runner from running the others' jobs.
  const auto started = std::chrono::steady_clock::now();
  options.ready = [&catalogue, tasks, started] {
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(30)) return true;
    for (Task task : tasks) {
      if (!catalogue.Known(task)) return false;
    }
    return true;
  };

  metrics::Registry registry;
  metrics::AddBuildInfo(&registry);
  core::RegisterWorkerPoolMetrics(&registry, &backend);
  runner::QueueRunner runner(&queue, &jobs, &quotas, services, options, &registry);
  core::Readiness readiness(&jobs, &catalogue, tasks);
  std::optional<observability::AdminServer> admin;
  if (!config->admin_listen.empty()) {
    admin.emplace(config->admin_listen, core::AdminRoutes(&registry, &readiness));
    if (Status started = admin->Start(); !started.ok()) {
      return FailStartup("admin_listen_failed", started);
    }
  }

  // GET /v1/genomes: what this runner holds, for the gateways (which read no reference). Reads
  // the whole reference once for its MD5s (logged with the seconds it took).
  const auto listing_started = std::chrono::steady_clock::now();
  if (Status published = runner::PublishGenomes(**variant, &stores.genomes); !published.ok()) {
    log::Warn("genome_listing_not_published", {{"reason", published.message()}});
  } else if ((*variant)->Genome("GRCh37") != nullptr) {
    log::Info("genome_listing_published",
              {{"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                         listing_started)
                               .count()}});
  }
  refresher.Start();
  runner.Start();
  log::Info("runner_started", {{"runner_id", config->runner_id},
                               {"slots", config->slots},
                               {"client_slots", config->client_slots},
                               {"admin_port", admin ? admin->port() : 0},
                               {"version", ServiceVersion()},
                               {"object_store", (*variant)->store() != nullptr},
                               {"grch37_catalogue", (*variant)->Genome("GRCh37") != nullptr}});

  const int signal_number = signals.Wait();
  const auto drain_deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(config->drain_timeout_seconds);
  log::Info("runner_stopping",
            {{"signal", signal_number}, {"drain_timeout_s", config->drain_timeout_seconds}});
  readiness.BeginDrain();
  const bool drained = runner.Drain(drain_deadline);
  runner.Stop();  // what still runs goes back to the queue for another runner
  executor.Shutdown();
  refresher.Stop();
  if (admin) admin->Stop();
  log::Info("runner_stopped", {{"drained", drained}});
  return 0;
}
