// How soon an idle stack starts an async job, and what idle runners cost Redis (BENCHMARKS.md,
// "Queued jobs on an idle stack"). A redis-server, a promoter worker, a dnaserve-gateway and one
// dnaserve-runner, as scripts/run starts them. Each round leaves the stack idle for a while,
// then submits one async promoter job and waits for its result:
//  - 202 to start: from the moment the client has the 202 (its clock) to the runner's write
//    marking the job running (the time redis-server stamps on that write in MONITOR: the same
//    machine's clock), i.e. what a client polling at once would wait for "running";
//  - queued to start: from the gateway's XADD of the entry to that write, both MONITOR times;
//  - idle commands: everything Redis executed over a quiet window with nothing queued (the
//    gateway sends nothing then, so these are the runner's), per second.
// Optionally a second runner binary (e.g. main's, which polls) is measured in the same run, the
// two alternating in blocks of rounds so that drift hits both alike.
#pragma once

#include <string>
#include <vector>

#include "tests/bench/bench_common.h"

namespace dnaserve::bench {

struct QueueSettings {
  int rounds = 40;               // jobs per runner binary
  int idle_ms = 300;             // quiet time before each job
  int idle_window_s = 20;        // the quiet window whose commands are counted
  int64_t bp = 2000;             // bases of each promoter job
  std::string baseline_runner;   // another dnaserve-runner binary ("" = none)
};

struct QueueSeries {
  std::string name;                 // "runner" or "baseline"
  std::vector<double> start_ms;     // 202 -> running, each round
  std::vector<double> queued_ms;    // XADD -> running, each round
  double idle_commands_per_s = -1;  // over the quiet window
  int failures = 0;                 // rounds whose job did not finish or was not found
};

struct QueueFigures {
  std::vector<QueueSeries> series;
  std::string load;  // /proc/loadavg before the first round
  std::string error;
};

QueueFigures RunQueueBench(const BenchSettings& settings, const QueueSettings& queue);
std::string QueueMarkdown(const QueueSettings& queue, const QueueFigures& figures);
std::string QueueJson(const QueueFigures& figures);

}  // namespace dnaserve::bench
