// The edge's own cost (BENCHMARKS.md): requests per second through dnaserve-gateway against a
// bare Pistache server (dnaserve-bare-http) with the same reactor threads, keep-alive, on the
// same machine in the same run, measured with wrk:
//  - GET /health on the bare server, on this build's gateway and (optionally) on a baseline
//    gateway binary, e.g. main's, alternating in every round so drift hits all alike;
//  - an authenticated job poll (GET /v1/tasks/jobs/{id} of a finished job);
//  - a synchronous promoter predict of a small sequence (default 2 kb, 8 connections), and the
//    same load sent straight to the worker over gRPC (8 client threads on one channel, as the
//    gateway's own client), in the same rounds: the gateway's cost on a real prediction as a
//    ratio of throughputs and a difference of median latencies.
#pragma once

#include <string>
#include <vector>

#include "tests/bench/bench_common.h"

namespace dnaserve::bench {

struct EdgeSettings {
  int rounds = 5;            // each round runs every series once, in alternating order
  int seconds = 4;           // wrk duration per run
  int wrk_threads = 2;
  int connections = 16;      // /health and the poll
  int predict_connections = 8;
  int64_t predict_bp = 2000;
  int http_threads = 2;      // the gateway's DNASERVE_HTTP_THREADS and the bare server's
  std::string baseline_gateway;  // another dnaserve-gateway binary to compare ("" = none)
};

struct EdgeSeries {
  std::string name;          // e.g. "health: gateway"
  std::vector<double> rps;   // requests/s of each round
  // CPU time (user + system) the server process spent per request in each round, in µs: on a
  // shared machine a steadier measure of the server's own cost than its throughput.
  std::vector<double> cpu_us;
  // Median latency of each round, in µs (wrk's 50th percentile; the direct series' own).
  std::vector<double> p50_us;
  // The direct series only: the bench's own CPU per call, i.e. what a gRPC client (the sync
  // API, 8 threads) spends on one Predict. Any gateway pays about this much for its worker call,
  // so it bounds from below what the gateway's CPU per sync predict can come down to.
  std::vector<double> client_cpu_us;
  long long errors = 0;      // non-2xx answers and socket errors, all rounds
};

struct EdgeFigures {
  std::vector<EdgeSeries> series;
  std::string load;  // /proc/loadavg before the first round
  std::string error;
  const EdgeSeries* Find(const std::string& name) const {
    for (const auto& s : series) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
};

EdgeFigures RunEdgeBench(const BenchSettings& settings, const EdgeSettings& edge);
std::string EdgeMarkdown(const EdgeSettings& edge, const EdgeFigures& figures);
std::string EdgeJson(const EdgeFigures& figures);

}  // namespace dnaserve::bench
