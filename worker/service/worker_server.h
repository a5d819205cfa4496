// Process wiring of a worker: read the task's model packages, serve gRPC (Worker + the standard
// grpc.health.v1 service) until SIGTERM/SIGINT, then shut down gracefully.
#pragma once

#include <string>

#include "common/task.h"

namespace dnaserve::worker {

struct WorkerConfig {
  Task task = Task::kPromoter;
  std::string models_dir;            // holds <model_id>/manifest.json packages
  std::string listen_address;        // e.g. "127.0.0.1:50051"
  int torch_threads = 0;             // LibTorch intra-op threads; 0 keeps LibTorch's default
  int shutdown_grace_seconds = 10;   // in-flight calls get this long, then are cancelled
  int max_message_bytes = 64 << 20;  // largest request accepted
};

// Blocks until a termination signal has been handled; returns the process exit code
// (0 after a clean shutdown, 1 when the server could not start).
int RunWorkerServer(const WorkerConfig& config);

}  // namespace dnaserve::worker
