#include "worker/config/worker_config.h"

#include <CLI/CLI.hpp>
#include <string>

#include "common/command_line.h"
#include "common/task.h"

namespace dnaserve::worker {

StatusOr<WorkerConfig> ParseWorkerConfig(int argc, char** argv, bool* exit_now) {
  CLI::App app{"dnaserve inference worker: one task's models over gRPC"};
  WorkerConfig config;
  std::string task_name;
  app.add_option("--task", task_name, "promoter|splice|enhancer|chromatin|annotation|expression")
      ->required()
      ->check(CLI::IsMember(
          {"promoter", "splice", "enhancer", "chromatin", "annotation", "expression"}));
  app.add_option("--models-dir", config.models_dir, "directory of model packages")
      ->envname("DNASERVE_MODELS_DIR")
      ->required();
  app.add_option("--listen", config.listen_address, "gRPC listen address, e.g. 127.0.0.1:50051")
      ->required();
  app.add_option("--threads", config.torch_threads,
                 "LibTorch intra-op threads per forward pass (0 = LibTorch default)")
      ->envname("DNASERVE_WORKER_THREADS")
      ->check(CLI::Range(0, 256));
  app.add_option("--shutdown-grace-seconds", config.shutdown_grace_seconds,
                 "time in-flight calls get to finish after SIGTERM")
      ->envname("DNASERVE_WORKER_SHUTDOWN_GRACE_SECONDS")
      ->check(CLI::Range(0, 3600));
  app.add_option("--admin-listen", config.admin_listen,
                 "address:port for /metrics and /live (empty = off)")
      ->envname("DNASERVE_WORKER_ADMIN_LISTEN");
  app.add_option("--max-connection-age-seconds", config.max_connection_age_seconds,
                 "close client connections after this long so DNS-resolving clients see new "
                 "replicas (0 = never)")
      ->envname("DNASERVE_WORKER_MAX_CONNECTION_AGE_SECONDS")
      ->check(CLI::Range(0, 86400));
  BatchingConfig& batching = config.batching;
  app.add_flag("--batching,!--no-batching", batching.enabled,
               "dynamic batching across concurrent requests (default on)")
      ->envname("DNASERVE_WORKER_BATCHING");
  app.add_option("--batch-max-bases", batching.max_batch_bases,
                 "budget of one batched forward pass, in bases (windows x context)")
      ->envname("DNASERVE_WORKER_BATCH_MAX_BASES")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--batch-max-wait-us", batching.max_wait_us,
                 "how long a forward pass below budget waits for other requests (microseconds)")
      ->envname("DNASERVE_WORKER_BATCH_MAX_WAIT_US")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--batch-executors", batching.executors,
                 "forward passes running at once, per model (0 = CPUs / --threads)")
      ->envname("DNASERVE_WORKER_BATCH_EXECUTORS")
      ->check(CLI::Range(0, 64));
  app.add_option("--batch-rows-per-pass", batching.rows_per_pass,
                 "rows of every forward pass, so results never depend on what shares a batch; "
                 "longer calls queue in pieces of it (-1 = the package's batch_rows_per_pass, "
                 "else by task: 1 for splice and expression, 4 otherwise; 0 = any size, results "
                 "may differ in the last bits). Unset, rows narrower than the model's window "
                 "share a pass up to R windows' width; set, it caps every pass at R rows")
      ->envname("DNASERVE_WORKER_BATCH_ROWS_PER_PASS")
      ->check(CLI::Range(int64_t{-1}, int64_t{4096}));
  app.add_option("--queue-max-bases", batching.max_queue_bases,
                 "bases that admitted requests may hold per model; beyond it new requests get "
                 "503 + Retry-After")
      ->envname("DNASERVE_WORKER_QUEUE_MAX_BASES")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  if (Status parsed = ParseCommandLine(app, argc, argv, exit_now); !parsed.ok()) return parsed;
  if (*exit_now) return config;
  config.task = *TaskFromName(task_name);  // IsMember checked the name
  return config;
}

}  // namespace dnaserve::worker
