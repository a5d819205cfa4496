// Benchmarks over real processes.
//
// Workers: one fresh dnaserve-worker per task (all packages of the models dir): time to accept
// gRPC, the cold first request (model_load_time_ms as the worker reports it), warm end-to-end
// Predict calls over gRPC at each length, and the process's peak RSS (VmHWM) afterwards.
//
// Gateway: the whole service (redis-server, a promoter worker, dnaserve-gateway, as scripts/run
// starts it): N concurrent promoter requests of the same length against the same N one after
// the other, wall time of each round; run with the worker's dynamic batching on and off.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/task.h"
#include "tests/bench/bench_common.h"
#include "tests/support/service_launcher.h"

namespace dnaserve::bench {

struct WorkerFigures {
  Task task = Task::kPromoter;
  std::string model_id;
  double startup_s = 0;              // spawn -> gRPC port accepting
  int64_t cold_load_ms = -1;         // model_load_time_ms of the first request
  double cold_request_s = 0;         // wall time of the first request (first length)
  std::map<int64_t, double> warm_s;  // bases -> median wall time of a warm Predict over gRPC
  // bases -> the worker's CPU time and minor page faults per warm Predict (mean over the timed
  // calls): CPU time is less disturbed by other load than wall time, and faults show memory the
  // worker maps again on every request (BENCHMARKS.md, table I).
  std::map<int64_t, double> warm_cpu_s;
  std::map<int64_t, double> warm_faults;
  ProcessMemory memory;              // after every request
  std::string error;
};

std::vector<WorkerFigures> RunWorkerBench(const BenchSettings& settings);

struct GatewayFigures {
  bool batching = true;
  int requests = 0;
  int64_t bases = 0;
  std::vector<double> sequential_all, concurrent_all;
  double sequential_s = 0;  // median
  double concurrent_s = 0;  // median
  int failures = 0;         // non-200 answers
  std::string error;
  // Median over rounds of concurrent / sequential wall time (each round measures both).
  double ratio() const { return PairedRatio(concurrent_all, sequential_all); }
};

GatewayFigures RunGatewayBench(const BenchSettings& settings, bool batching);

// Writes a keys file holding one key (client "bench", a rate no benchmark reaches, `concurrency`
// seats) and returns the key; "" with *error set on failure.
std::string IssueBenchKey(const BenchSettings& settings, const std::string& keys_file,
                          int concurrency, std::string* error);
// The dnaserve-worker the benchmarks run (this settings' binary, threads and extra flags).
testing::WorkerLaunch BenchWorker(const BenchSettings& settings, Task task,
                                  const std::string& models_dir, bool batching,
                                  const std::string& log_path);
// A dnaserve-gateway of settings.binary_dir on `redis_url` calling `workers`.
testing::GatewayLaunch BenchGateway(const BenchSettings& settings, const std::string& keys_file,
                                    const std::string& redis_url, const std::string& workers,
                                    const std::string& log_path);

}  // namespace dnaserve::bench
