// Settings the gateway and the runner both take, under the same flags and variables: the Redis
// they share (job store, queue, quotas), the workers they call, their operations listener and
// the per-client bounds that both apply to the queue and the stored results. Each binary's
// config derives from this, so its fields read as the binary's own.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/command_line.h"
#include "common/status.h"
#include "core/dispatch/worker_client.h"
#include "core/jobs/genome_listing.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/redis_quota_store.h"

namespace CLI {
class App;
}

namespace dnaserve::core {

struct SharedSettings {
  std::string redis_url = "redis://127.0.0.1:6379";  // DNASERVE_REDIS_URL
  // DNASERVE_REDIS_SENTINELS: "host:port,host:port,..." of Redis sentinels. When set, Redis is
  // the primary the sentinels name for DNASERVE_REDIS_PRIMARY_NAME (followed across failovers)
  // and DNASERVE_REDIS_URL gives only the credentials and the database. Empty = the URL's host.
  std::string redis_sentinels;
  std::string redis_primary_name;  // DNASERVE_REDIS_PRIMARY_NAME
  // DNASERVE_REDIS_PASSWORD_FILE: the data nodes' password, instead of the URL's (a mounted
  // Secret). DNASERVE_REDIS_SENTINEL_PASSWORD_FILE: the sentinels' own (`requirepass` in
  // sentinel.conf), which is a separate secret. Empty = none.
  std::string redis_password_file;
  std::string redis_sentinel_password_file;
  // DNASERVE_REDIS_WAIT_REPLICAS: replicas that must have a job's queue entry before it is
  // accepted (WAIT), within DNASERVE_REDIS_WAIT_TIMEOUT_MS; else the job is refused (503).
  int64_t redis_wait_replicas = 0;
  int64_t redis_wait_timeout_ms = 500;
  // DNASERVE_WORKERS: "promoter=host:port,splice=host:port;host:port,..."
  std::string workers;
  // DNASERVE_WORKER_HEALTH_INTERVAL_MS: how often every worker gets a grpc.health.v1 check.
  int64_t worker_health_interval_ms = 1000;
  // DNASERVE_WORKER_KEEPALIVE: seconds between pings on a worker connection with calls open,
  // and how long a ping may go unanswered before those calls fail (workers accept >= 5).
  int64_t worker_keepalive_seconds = 10;
  // DNASERVE_ADMIN_LISTEN: "address:port" of the operations listener (/metrics, /ready, /live);
  // empty = none. Kept off the public port: see deploy/README.md.
  std::string admin_listen;
  // DNASERVE_MAX_QUEUED_JOBS: queued and running jobs one client may have in the runners' queue.
  int64_t max_queued_jobs = 64;
  // DNASERVE_CLIENT_RESULT_BYTES: stored job results (compressed) each client may keep; past
  // it the client's oldest results are evicted (core/jobs/job_store.h). 0 = no limit.
  int64_t client_result_bytes = 64LL << 20;
};

// Adds the shared flags (each with its environment variable) to `app`, bound to `settings`.
void AddSharedOptions(CLI::App& app, SharedSettings& settings);

// The Redis connection of the shared settings (one address, or a Sentinel group; the
// passwords; the WAIT setting). bad_request when the settings do not make sense together or a
// password file cannot be read.
StatusOr<std::shared_ptr<RedisConnection>> ConnectRedis(const SharedSettings& settings);

// At start-up: one PING. A Redis or sentinels that refuse the credentials give bad_request
// saying which (the binary then exits: waiting would not help); Redis unreachable is not an
// error here (readiness reports it until Redis answers). Bounded by the connection's timeouts.
Status CheckRedisCredentials(RedisConnection& redis);

// The Redis-backed stores a gateway and a runner share, set up from the shared settings.
struct SharedStores {
  SharedStores(const std::shared_ptr<RedisConnection>& redis, const SharedSettings& settings);
  RedisJobStore jobs;
  RedisQuotaStore quotas;
  RedisJobQueue queue;
  GenomeListing genomes;  // GET /v1/genomes: runners publish, gateways read
};

// The worker client's options from the shared settings; `call_deadline` caps one worker call.
GrpcInferenceBackend::Options WorkerBackendOptions(const WorkerEndpoints& endpoints,
                                                   const SharedSettings& settings,
                                                   std::chrono::seconds call_deadline);

}  // namespace dnaserve::core
