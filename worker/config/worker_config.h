// The worker's settings from its flags and environment variables (--help lists them), so that
// main.cpp only wires. Bad values are refused here, before anything starts.
#pragma once

#include "common/status.h"
#include "worker/service/worker_server.h"

namespace dnaserve::worker {

// --help prints the help and sets *exit_now; a missing or bad flag is a bad_request naming it.
StatusOr<WorkerConfig> ParseWorkerConfig(int argc, char** argv, bool* exit_now);

}  // namespace dnaserve::worker
