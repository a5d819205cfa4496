// The large-model suite (--suites large; BENCHMARKS.md, table O): production-size BERT packages
// (random weights, GENA-LM-base and -large shapes; tests/bench/make_bert_package.py --shape) against
// the machine's own limit and their peers, in one run. For each package of the models dirs that
// carries bench-architecture.json:
//   - the matmul limit of its layer shapes at the worker's thread count (matmul_limit.h);
//   - per length: the bare C++ forward and a fresh dnaserve-worker over gRPC, interleaved, over
//     the same request; achieved GFLOP/s (FLOPs counted from the architecture and the tokens of
//     the recorded windows) and its ratio to the limit; the Python peers (python_large_peer.py:
//     TorchScript and the eager module) over the same window tensors;
//   - the worker's startup, cold load and peak RSS;
// and for the packages marked full_suite, at their first length:
//   - reduced precision: a copy of the package whose manifest says "precision": "bf16" / "int8",
//     served by a fresh worker (a worker that does not know the key refuses the package: the
//     row says "not supported by this worker build"), timed, and its scores' drift from fp32;
//     the same precisions applied to the Python eager module;
//   - concurrency: N concurrent requests to a worker per thread/executor setting, aggregate bp/s
//     against cores x the one-thread bare forward's bp/s.
#pragma once

#include <string>
#include <vector>

#include "tests/bench/bench_common.h"

namespace dnaserve::bench {

struct LargeSettings {
  int concurrent = 8;  // requests released together in the concurrency rows
  // "<threads>x<executors>" worker settings to try under concurrency ("1x0": 1 thread, default
  // executors; "2x1": 2 threads, one pass at a time; "nb1": 1 thread, batching off).
  std::vector<std::string> concurrency_settings = {"1x0", "2x1", "nb1"};
  std::vector<std::string> precisions = {"bf16", "int8"};
  double matmul_seconds = 1.0;  // timing per product in the matmul limit
  int long_reps = 1;            // timed repetitions above 10 kb (each is minutes)
  int64_t max_bp = 0;           // > 0: skip lengths above it (a bounded run on a busy machine)
};

// Runs the suite; returns its Markdown section and fills *json with its raw figures.
std::string RunLargeBench(const BenchSettings& settings, const LargeSettings& large,
                          std::string* json, std::vector<std::string>* errors);

}  // namespace dnaserve::bench
