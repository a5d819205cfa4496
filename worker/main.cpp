// dnaserve-worker: serves the models of one task over gRPC. Wiring only; see worker/README.md.
#include <iostream>
#include <string>

#include "common/command_line.h"
#include "common/log.h"
#include "common/task.h"
#include "worker/config/worker_config.h"

int main(int argc, char** argv) {
  bool exit_now = false;
  auto config = dnaserve::worker::ParseWorkerConfig(argc, argv, &exit_now);
  if (exit_now) return 0;
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return dnaserve::kBadConfigurationExit;
  }
  dnaserve::log::Init("worker-" + std::string(dnaserve::TaskName(config->task)));
  return dnaserve::worker::RunWorkerServer(*config);
}
