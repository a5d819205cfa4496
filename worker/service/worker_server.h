// Process wiring of a worker: read the task's model packages, serve gRPC (Worker + the standard
// grpc.health.v1 service) until SIGTERM/SIGINT, then shut down gracefully.
#pragma once

#include <cstdint>
#include <string>

#include "common/task.h"
#include "worker/batching/pass_width.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

// Dynamic batching across concurrent requests (worker/batching/batching_model.h); sizes in
// bases = windows x the model's context_window_bp.
// Defaults measured on a 2-vCPU VM with the bundled models (worker/README.md, "Execution").
struct BatchingConfig {
  bool enabled = true;
  int64_t max_batch_bases = 32768;    // one stacked forward pass
  int64_t max_queue_bases = 1048576;  // admitted requests' seats per model; then 503 + Retry-After
  int max_wait_us = 0;                // how long a pass below budget waits for company
  int executors = 0;                  // passes running at once per model; 0 = CPUs / torch threads
  // Rows of every forward pass (worker/batching/fixed_rows_model.h): a prediction's numbers are
  // then the same alone or batched with any others, and a long request's calls queue in pieces
  // of these rows (fairness). 0 = passes of any size (results may differ in the last bits);
  // kRowsPerPassByTask = the package's "batch_rows_per_pass", else DefaultRowsPerPass(task).
  int64_t rows_per_pass = kRowsPerPassByTask;
  static constexpr int64_t kRowsPerPassByTask = -1;
};

struct WorkerConfig {
  Task task = Task::kPromoter;
  std::string models_dir;            // holds <model_id>/manifest.json packages
  std::string listen_address;        // e.g. "127.0.0.1:50051"
  int torch_threads = 1;             // LibTorch intra-op threads; 0 keeps LibTorch's default
  int shutdown_grace_seconds = 10;   // in-flight calls get this long, then are cancelled
  int max_message_bytes = 64 << 20;  // largest request accepted
  // "address:port" of the operations listener (/metrics, /live); empty = none.
  std::string admin_listen;
  // Clients' connections are closed after this long (gracefully, calls in flight finish), so
  // that clients resolving a Kubernetes headless Service by DNS see new replicas. 0 = never.
  int max_connection_age_seconds = 0;
  BatchingConfig batching;
};

// The rows per pass a worker of `task` uses unless told otherwise: 1 where the task's runner
// calls the model one window at a time (splice, expression), so a lone request never computes
// filler rows; 4 elsewhere: on CPU the bundled packages cost least per window at 2-4 rows, and
// passes of 1 or 2 rows made a lone 10 kb chromatin request up to twice as slow as passes of 16
// (BENCHMARKS.md, "Deterministic, length-aware batching").
int64_t DefaultRowsPerPass(Task task);

// The rows per forward pass `manifest`'s model runs with: `configured` when the operator set it
// (>= 0: one setting for every model of the worker), else the package's "batch_rows_per_pass",
// else DefaultRowsPerPass of its task. Every replica serving a package must agree on it
// (worker/README.md, "Execution"), which the package's own value guarantees.
int64_t RowsPerPassFor(const ModelManifest& manifest, int64_t configured);

// Values per row of the model's first input for one serving window of `manifest`
// (context_window_bp bases through its tokenizer); 0 when that count depends on the bases (BPE,
// and any tokenizer with a pad id) or the tokenizer does not load.
int64_t ServingWindowColumns(const ModelManifest& manifest);

// How the passes of `manifest`'s model scale with the row width (worker/batching/pass_width.h):
// R = RowsPerPassFor(manifest, configured) rows of the serving window's width, up to R x that
// width of narrower rows. An operator's explicit setting (`configured` > 0) caps the rows at R,
// so narrow rows then run R to a pass as before; the package's or the task's R does not.
// Only meaningful when RowsPerPassFor(...) > 0.
PassWidth PassWidthFor(const ModelManifest& manifest, int64_t configured);

// Blocks until a termination signal has been handled; returns the process exit code
// (0 after a clean shutdown, 1 when the server could not start).
int RunWorkerServer(const WorkerConfig& config);

}  // namespace dnaserve::worker
