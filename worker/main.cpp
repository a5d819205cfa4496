// dnaserve-worker: serves the models of one task over gRPC. Wiring only; see worker/README.md.
#include <CLI/CLI.hpp>
#include <string>

#include "common/log.h"
#include "common/task.h"
#include "worker/service/worker_server.h"

int main(int argc, char** argv) {
  CLI::App app{"dnaserve inference worker: one task's models over gRPC"};
  std::string task_name;
  dnaserve::worker::WorkerConfig config;
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
                 "LibTorch intra-op threads (0 = LibTorch default)")
      ->envname("DNASERVE_WORKER_THREADS")
      ->check(CLI::Range(0, 256));
  app.add_option("--shutdown-grace-seconds", config.shutdown_grace_seconds,
                 "time in-flight calls get to finish after SIGTERM")
      ->check(CLI::Range(0, 3600));
  CLI11_PARSE(app, argc, argv);

  config.task = *dnaserve::TaskFromName(task_name);
  dnaserve::log::Init("worker-" + task_name);
  return dnaserve::worker::RunWorkerServer(config);
}
