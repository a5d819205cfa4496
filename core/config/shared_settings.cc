#include "core/config/shared_settings.h"

#include <CLI/CLI.hpp>

#include "common/file_text.h"

namespace dnaserve::core {

void AddSharedOptions(CLI::App& app, SharedSettings& s) {
  app.add_option("--redis-url", s.redis_url,
                 "redis://host:port[/db] of the job store, job queue and quotas")
      ->envname("DNASERVE_REDIS_URL");
  app.add_option("--redis-sentinels", s.redis_sentinels,
                 "host:port,... of Redis sentinels: Redis is then the primary they name (the "
                 "URL gives only credentials and db)")
      ->envname("DNASERVE_REDIS_SENTINELS");
  app.add_option("--redis-primary-name", s.redis_primary_name,
                 "the sentinels' name of the Redis primary (required with --redis-sentinels)")
      ->envname("DNASERVE_REDIS_PRIMARY_NAME");
  app.add_option("--redis-password-file", s.redis_password_file,
                 "file holding the Redis data nodes' password (instead of the URL's)")
      ->envname("DNASERVE_REDIS_PASSWORD_FILE");
  app.add_option("--redis-sentinel-password-file", s.redis_sentinel_password_file,
                 "file holding the sentinels' own password (their requirepass)")
      ->envname("DNASERVE_REDIS_SENTINEL_PASSWORD_FILE");
  app.add_option("--redis-wait-replicas", s.redis_wait_replicas,
                 "Redis replicas that must confirm a job's queue entry before it is accepted "
                 "(0 = none)")
      ->envname("DNASERVE_REDIS_WAIT_REPLICAS")
      ->check(CLI::Range(0, 16));
  app.add_option("--redis-wait-timeout-ms", s.redis_wait_timeout_ms,
                 "milliseconds the replicas have to confirm; past it the job is refused (503)")
      ->envname("DNASERVE_REDIS_WAIT_TIMEOUT_MS")
      ->check(CLI::Range(10, 60000));
  app.add_option("--workers", s.workers, "task=host:port[;host:port],... worker addresses")
      ->envname("DNASERVE_WORKERS")
      ->required();
  app.add_option("--worker-health-interval-ms", s.worker_health_interval_ms,
                 "milliseconds between grpc.health.v1 checks of every worker")
      ->envname("DNASERVE_WORKER_HEALTH_INTERVAL_MS")
      ->check(CLI::Range(100, 600000));
  app.add_option("--worker-keepalive", s.worker_keepalive_seconds,
                 "seconds between pings on busy worker connections (and the ping timeout)")
      ->envname("DNASERVE_WORKER_KEEPALIVE")
      ->check(CLI::Range(5, 3600));
  app.add_option("--admin-listen", s.admin_listen,
                 "address:port for /metrics, /ready and /live (empty = off)")
      ->envname("DNASERVE_ADMIN_LISTEN");
  app.add_option("--max-queued-jobs", s.max_queued_jobs,
                 "queued and running jobs one client may have (then 429)")
      ->envname("DNASERVE_MAX_QUEUED_JOBS")
      ->check(CLI::Range(1, 100000));
  app.add_option("--client-result-bytes", s.client_result_bytes,
                 "bytes of stored job results (compressed) each client may keep; its oldest are "
                 "evicted beyond it (0 = no limit)")
      ->envname("DNASERVE_CLIENT_RESULT_BYTES")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
}

namespace {
RedisJobStoreOptions StoreOptions(const SharedSettings& s) {
  RedisJobStoreOptions options;
  options.client_result_bytes = s.client_result_bytes;
  return options;
}
JobQueueOptions QueueOptions(const SharedSettings& s) {
  JobQueueOptions options;
  options.max_jobs_per_client = s.max_queued_jobs;
  return options;
}
}  // namespace

StatusOr<std::shared_ptr<RedisConnection>> ConnectRedis(const SharedSettings& s) {
  RedisOptions options;
  if (!s.redis_sentinels.empty()) {
    auto sentinels = ParseRedisEndpoints(s.redis_sentinels);
    if (!sentinels.ok()) return sentinels.status();
    if (s.redis_primary_name.empty()) {
      return BadRequest("DNASERVE_REDIS_SENTINELS needs DNASERVE_REDIS_PRIMARY_NAME");
    }
    options.sentinels = *sentinels;
    options.primary_name = s.redis_primary_name;
  } else if (!s.redis_primary_name.empty()) {
    return BadRequest("DNASERVE_REDIS_PRIMARY_NAME is set without DNASERVE_REDIS_SENTINELS");
  }
  if (!s.redis_sentinel_password_file.empty()) {
    if (s.redis_sentinels.empty()) {
      return BadRequest(
          "DNASERVE_REDIS_SENTINEL_PASSWORD_FILE is set without DNASERVE_REDIS_SENTINELS");
    }
    auto password = ReadSecretFile(s.redis_sentinel_password_file);
    if (!password.ok()) return password.status();
    options.sentinel_password = std::move(password).value();
  }
  if (!s.redis_password_file.empty()) {
    auto password = ReadSecretFile(s.redis_password_file);
    if (!password.ok()) return password.status();
    options.password = std::move(password).value();
  }
  options.wait_replicas = static_cast<int>(s.redis_wait_replicas);
  options.wait_timeout = std::chrono::milliseconds(s.redis_wait_timeout_ms);
  // A command that waits for replicas must not be taken for a dead connection.
  options.command_timeout += options.wait_timeout;
  return RedisConnection::Create(s.redis_url, options);
}

Status CheckRedisCredentials(RedisConnection& redis) {
  Status ping = redis.Ping();
  if (ping.ok() || !redis.credentials_refused()) return Status::Ok();
  return BadRequest("redis " + redis.Describe() + " refused the credentials: " + ping.message());
}

SharedStores::SharedStores(const std::shared_ptr<RedisConnection>& redis,
                           const SharedSettings& settings)
    : jobs(redis, nullptr, StoreOptions(settings)),
      quotas(redis),
      queue(redis, QueueOptions(settings)),
      genomes(redis) {}

GrpcInferenceBackend::Options WorkerBackendOptions(const WorkerEndpoints& endpoints,
                                                   const SharedSettings& s,
                                                   std::chrono::seconds call_deadline) {
  GrpcInferenceBackend::Options options;
  options.endpoints = endpoints;
  options.predict_deadline = call_deadline;
  options.health_interval = std::chrono::milliseconds(s.worker_health_interval_ms);
  options.keepalive_time = options.keepalive_timeout =
      std::chrono::seconds(s.worker_keepalive_seconds);
  return options;
}

}  // namespace dnaserve::core
