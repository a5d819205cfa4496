// dnaserve-batching-bench: what the worker's fixed-shape, length-aware batching costs and buys,
// over gRPC straight to real dnaserve-worker processes (scripts/bench-batching runs it; figures
// in BENCHMARKS.md, "Deterministic, length-aware batching").
//
// One worker per configuration (--config, repeatable: the worker flags of each), all serving the
// same package; every round measures each configuration back to back (paired under the same
// machine load), and the report gives medians and each configuration's ratio to the first:
//   * throughput: `--concurrent` requests of `--length` bp at once, aggregate bp/s;
//   * alone: one request of `--length` bp, and one of `--short` bp, wall time;
//   * fairness: a `--long` bp request, and once it has reported its first progress a `--short`
//     bp one; the short one's wall time over its alone time (issue 28's target: <= 2).
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/bench/bench_common.h"
#include "tests/support/service_launcher.h"

namespace {

namespace v1 = dnaserve::worker::v1;
using Clock = std::chrono::steady_clock;
using dnaserve::bench::Median;
using dnaserve::bench::PairedRatio;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs one Predict to its end; `first_event` (may be null) is set at the first progress event.
bool Predict(v1::Worker::Stub& stub, const v1::PredictRequest& request,
             std::atomic<bool>* first_event = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  auto reader = stub.Predict(&context, request);
  v1::PredictEvent event;
  bool result = false;
  while (reader->Read(&event)) {
    if (first_event) *first_event = true;
    result = result || event.has_result();
  }
  return reader->Finish().ok() && result;
}

double TimedPredict(v1::Worker::Stub& stub, const v1::PredictRequest& request, bool* ok) {
  const auto start = Clock::now();
  *ok = Predict(stub, request) && *ok;
  return SecondsSince(start);
}

struct Config {
  std::string flags;
  dnaserve::testing::LaunchedWorker worker;
  std::unique_ptr<v1::Worker::Stub> stub;
  std::vector<double> concurrent_s, alone_s, short_s, fair_short_s, fair_long_s;
  bool ok = true;
};

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

std::string Fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Ms(double seconds) { return Fixed(seconds * 1000, 1) + " ms"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dnaserve-batching-bench: fixed-shape and length-aware batching, paired"};
  std::string models_dir, task_name = "chromatin", model, binary;
  std::vector<std::string> configs;
  int rounds = 5, concurrent = 8;
  int64_t length = 10000, long_bp = 100000, short_bp = 2000;
  app.add_option("--models-dir", models_dir, "model packages")->required();
  app.add_option("--task", task_name, "task of the package");
  app.add_option("--model", model, "package id (default: the task's default)");
  app.add_option("--config", configs, "worker flags of one configuration (repeatable)")
      ->required();
  app.add_option("--rounds", rounds, "paired rounds");
  app.add_option("--concurrent", concurrent, "requests at once in the throughput round");
  app.add_option("--length", length, "bp of the throughput requests");
  app.add_option("--long", long_bp, "bp of the long request of the fairness round");
  app.add_option("--short", short_bp, "bp of the short request of the fairness round");
  app.add_option("--worker", binary, "dnaserve-worker binary (default: this build's)");
  CLI11_PARSE(app, argc, argv);
  const auto task = dnaserve::TaskFromName(task_name);
  if (!task) {
    std::cerr << "unknown task " << task_name << "\n";
    return 2;
  }

  std::vector<std::unique_ptr<Config>> runs;
  for (const std::string& flags : configs) {
    auto run = std::make_unique<Config>();
    run->flags = flags;
    dnaserve::testing::WorkerLaunch launch;
    launch.binary = binary;
    launch.task = task_name;
    launch.models_dir = models_dir;
    launch.extra_args = Words(flags);
    if (!run->worker.Start(launch) || !run->worker.WaitUntilListening(std::chrono::seconds(60))) {
      std::cerr << "cannot start a worker with: " << flags << "\n";
      return 1;
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    run->stub = v1::Worker::NewStub(grpc::CreateCustomChannel(
        run->worker.address(), grpc::InsecureChannelCredentials(), args));
    runs.push_back(std::move(run));
  }
  auto request = [&](int64_t bp, unsigned seed) {
    v1::PredictRequest r = dnaserve::testing::RequestFor(*task, bp, seed);
    r.set_model(model);
    return r;
  };
  for (auto& run : runs) {  // loads the model
    bool ok = true;
    TimedPredict(*run->stub, request(short_bp, 1), &ok);
    if (!ok) {
      std::cerr << "warm-up failed with: " << run->flags << "\n";
      return 1;
    }
  }

  for (int round = 0; round < rounds; ++round) {
    for (auto& run : runs) {
      v1::Worker::Stub& stub = *run->stub;
      // Throughput: `concurrent` distinct requests at once.
      const auto start = Clock::now();
      std::vector<std::future<bool>> all;
      for (int i = 0; i < concurrent; ++i) {
        all.push_back(std::async(std::launch::async, [&, i] {
          return Predict(stub, request(length, 100 + static_cast<unsigned>(i)));
        }));
      }
      for (auto& f : all) run->ok = f.get() && run->ok;
      run->concurrent_s.push_back(SecondsSince(start));
      // Alone.
      run->alone_s.push_back(TimedPredict(stub, request(length, 7), &run->ok));
      run->short_s.push_back(TimedPredict(stub, request(short_bp, 8), &run->ok));
      // Fairness: the short request sent once the long one is running.
      std::atomic<bool> long_started{false};
      const auto long_start = Clock::now();
      auto long_call = std::async(std::launch::async, [&] {
        return Predict(stub, request(long_bp, 9), &long_started);
      });
      while (!long_started) std::this_thread::sleep_for(std::chrono::microseconds(200));
      run->fair_short_s.push_back(TimedPredict(stub, request(short_bp, 8), &run->ok));
      run->ok = long_call.get() && run->ok;
      run->fair_long_s.push_back(SecondsSince(long_start));
    }
  }

  const Config& base = *runs.front();
  std::cout << "| worker flags | " << concurrent << " x " << length << " bp at once | bp/s | vs first"
            << " | " << length << " bp alone | " << short_bp << " bp alone | " << short_bp
            << " bp behind " << long_bp << " bp | wait / alone | " << long_bp << " bp |\n"
            << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& run : runs) {
    std::vector<double> fairness;
    for (size_t i = 0; i < run->fair_short_s.size(); ++i) {
      fairness.push_back(run->fair_short_s[i] / run->short_s[i]);
    }
    const double bps = static_cast<double>(concurrent) *
                       static_cast<double>(dnaserve::testing::ScoredBases(*task, length)) /
                       Median(run->concurrent_s);
    std::cout << "| `" << run->flags << "` | " << Ms(Median(run->concurrent_s)) << " | "
              << Fixed(bps / 1000, 0) << " kb/s | "
              << Fixed(PairedRatio(base.concurrent_s, run->concurrent_s)) << " | "
              << Ms(Median(run->alone_s)) << " | " << Ms(Median(run->short_s)) << " | "
              << Ms(Median(run->fair_short_s)) << " | **" << Fixed(Median(fairness)) << "** | "
              << Ms(Median(run->fair_long_s)) << " |" << (run->ok ? "" : " (failures)") << "\n";
  }
  std::cout << "\nMedians over " << rounds
            << " rounds; vs first = the first configuration's time / this one's for the "
               "concurrent round, paired by round (> 1: faster). wait / alone = the short "
               "request's time behind the long one / its time alone, same round.\n";
  return 0;
}
