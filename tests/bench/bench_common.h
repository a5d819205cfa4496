// Shared pieces of dnaserve-bench: settings, timing statistics, requests, process memory.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "tests/support/predict_requests.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::bench {

struct BenchSettings {
  std::string models_dir;               // packages to measure (every task found there)
  std::vector<std::string> extra_dirs;  // more models dirs (exported BERT, OpenSpliceAI, ...)
  std::string work_dir;                 // scratch: window dumps, logs
  std::string binary_dir;               // CMake build root (dnaserve-worker, -gateway, -keys)
  std::string source_dir;               // repository root (the Python peer script)
  std::string python = "/usr/bin/python3";
  int threads = 1;  // LibTorch intra-op threads, everywhere
  int reps = 5;     // timed repetitions at 10 kb (100 kb: max(2, reps / 2))
  std::vector<int64_t> lengths = {10000, 100000};
  bool runner = true;  // in-process runner vs bare forward (+ Python peer)
  bool python_peer = true;
  bool workers = true;  // worker processes: cold start, RSS, gRPC end to end
  bool gateway = true;  // 8 concurrent promoter requests through the gateway
  int gateway_requests = 8;
  int gateway_rounds = 3;
  int64_t gateway_bp = 10000;
  std::vector<std::string> worker_args;  // appended to every dnaserve-worker command line
  int served_executors = 0;  // in-process worker stack: passes at once (0 = worker default)
  bool defaults_only = false;  // measure only each task's default package of a models dir
};

// The packages of `models_dir` to measure, by task then id: all of them, or (defaults_only)
// the one per task a worker serves by default (marked is_default, else the first by id).
std::vector<worker::ModelManifest> PackagesToMeasure(const std::string& models_dir,
                                                     bool defaults_only);

double Median(std::vector<double> values);
double Min(const std::vector<double>& values);
// Median of numerator[i] / denominator[i] (pairs measured back to back); 0 when empty.
double PairedRatio(const std::vector<double>& numerator, const std::vector<double>& denominator);
// Min(numerator) / Min(denominator); 0 when either is empty.
double BestRatio(const std::vector<double>& numerator, const std::vector<double>& denominator);

// Requests: the worker tests' (tests/support/predict_requests.h), with the benchmarks' own seed.
using testing::RandomBases;
using testing::ScoredBases;
inline worker::v1::PredictRequest BenchRequest(Task task, int64_t length) {
  return testing::RequestFor(task, length, 11);
}

// VmHWM and VmRSS of a process from /proc/<pid>/status, in KiB (-1 when unreadable).
struct ProcessMemory {
  int64_t hwm_kib = -1;
  int64_t rss_kib = -1;
};
ProcessMemory ReadProcessMemory(int pid);

// CPU time (user + system, every thread that ever ran, in clock ticks of 10 ms) and minor page
// faults of a process so far, from /proc/<pid>/stat; cpu_s < 0 when unreadable.
struct ProcessCounters {
  double cpu_s = -1;
  int64_t minor_faults = -1;
};
ProcessCounters ReadProcessCounters(int pid);

// Runs `call` on `clients` threads that wait at a start line and leave together: the wall time
// from the start until the last call returned, and how many calls returned false.
struct AllAtOnce {
  double wall_s = 0;
  int failures = 0;
};
AllAtOnce RunAllAtOnce(int clients, const std::function<bool()>& call);

// Runs a Python peer's shell `command`, whose stdout is one JSON object with a numeric
// "median_s"; false when it cannot start, exits non-zero or prints anything else.
bool RunJsonPeer(const std::string& command, rapidjson::Document* out);

std::string FormatSeconds(double seconds);            // "12.3 ms" / "1.23 s"
std::string FormatBpPerSecond(double bp_per_second);  // "1.23 Mbp/s"

}  // namespace dnaserve::bench
