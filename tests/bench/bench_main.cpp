// dnaserve-bench: throughput of the worker against the bare TorchScript forward, the Python
// peer, cold starts and peak memory per worker, and concurrent requests through the gateway.
// Wiring and reporting only; see scripts/bench and BENCHMARKS.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/bench/bench_common.h"
#include "tests/bench/edge_bench.h"
#include "tests/bench/large_bench.h"
#include "tests/bench/queue_bench.h"
#include "tests/bench/runner_bench.h"
#include "tests/bench/service_bench.h"
#include "tests/support/test_env.h"
#include "worker/models/host_memory.h"

namespace {

using namespace dnaserve::bench;  // NOLINT: a main file

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

std::string Fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Kb(int64_t bases) {
  if (bases % 1000 == 0) return std::to_string(bases / 1000) + " kb";
  return std::to_string(bases) + " bp";
}

const RunnerFigures* FindRunner(const std::vector<RunnerFigures>& runner, const std::string& id,
                                int64_t bases) {
  for (const auto& f : runner) {
    if (f.model_id == id && f.bases == bases) return &f;
  }
  return nullptr;
}

std::string Markdown(const BenchSettings& s, const std::vector<RunnerFigures>& runner,
                     const std::vector<WorkerFigures>& workers,
                     const std::vector<GatewayFigures>& gateway,
                     const std::vector<std::string>& errors) {
  std::ostringstream md;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  md << "Run " << date << " on " << CpuModel() << ", " << std::thread::hardware_concurrency()
     << " vCPU; LibTorch intra-op threads " << s.threads << " (C++ and Python); " << s.reps
     << " timed repetitions at 10 kb, " << std::max(2, s.reps / 2) << " at 100 kb (medians).\n\n";
  if (!runner.empty()) {
    md << "### Worker runner vs bare TorchScript forward (one process)\n\n"
       << "| model | tokenizer | bp | windows | forward calls | bare forward | runner, worker "
          "stack | ratio | best-of-N ratio | outside the model | runner, no queue | ratio | "
          "outside the model | Python forward | Python / C++ |\n"
       << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& f : runner) {
      md << "| " << f.model_id << " | " << f.tokenizer << " | " << f.bases << " | " << f.windows
         << " | " << f.forward_calls << " | " << FormatSeconds(f.bare_s) << " | "
         << FormatSeconds(f.served_s) << " | **" << Fixed(f.served_ratio()) << "** | "
         << Fixed(f.served_best_ratio()) << " | "
         << FormatSeconds(std::max(0.0, f.served_s - f.served_model_s)) << " | "
         << FormatSeconds(f.direct_s) << " | " << Fixed(f.direct_ratio()) << " | "
         << FormatSeconds(std::max(0.0, f.direct_s - f.direct_model_s)) << " | "
         << (f.python_s > 0 ? FormatSeconds(f.python_s) : "n/a") << " | "
         << (f.python_s > 0 ? Fixed(f.python_ratio()) : "n/a") << " |\n";
    }
    md << "\nratio = bare forward time / runner time (= runner bp/s / bare bp/s), the median "
          "over repetitions of pairs measured back to back; times are medians. Best-of-N ratio "
          "= fastest bare / fastest runner repetition. Outside the "
          "model = runner time minus the time inside the model's forward calls (tokenising, "
          "windowing, stitching, rendering; for the worker stack also the batching queue). "
          "Python / C++ = C++ bare time / Python time (< 1: Python slower).\n\n";
  }
  if (!workers.empty()) {
    md << "### Worker processes (gRPC, fresh process per model)\n\n"
       << "| model | startup | cold load (reported) | first request | ";
    for (int64_t len : s.lengths) {
      md << "warm " << Kb(len) << " | ratio " << Kb(len) << " | CPU " << Kb(len) << " | faults "
         << Kb(len) << " | ";
    }
    md << "peak RSS (VmHWM) |\n|---|---:|---:|---:|";
    for (size_t i = 0; i < s.lengths.size(); ++i) md << "---:|---:|---:|---:|";
    md << "---:|\n";
    for (const auto& f : workers) {
      if (!f.error.empty()) {
        md << "| " << f.model_id << " | error: " << f.error << " |\n";
        continue;
      }
      md << "| " << f.model_id << " | " << FormatSeconds(f.startup_s) << " | " << f.cold_load_ms
         << " ms | " << FormatSeconds(f.cold_request_s) << " | ";
      for (int64_t len : s.lengths) {
        const int64_t bases = ScoredBases(f.task, len);
        auto it = f.warm_s.find(bases);
        if (it == f.warm_s.end() ||
            (f.task == dnaserve::Task::kExpression && len != s.lengths[0])) {
          md << "n/a | n/a | n/a | n/a | ";
          continue;
        }
        const RunnerFigures* r = FindRunner(runner, f.model_id, bases);
        md << FormatSeconds(it->second) << " | "
           << (r ? Fixed(r->bare_s / it->second) : std::string("n/a")) << " | ";
        auto cpu = f.warm_cpu_s.find(bases);
        auto faults = f.warm_faults.find(bases);
        md << (cpu != f.warm_cpu_s.end() ? FormatSeconds(cpu->second) : std::string("n/a"))
           << " | "
           << (faults != f.warm_faults.end() ? Fixed(faults->second, 0) : std::string("n/a"))
           << " | ";
      }
      md << Fixed(f.memory.hwm_kib / 1024.0, 0) << " MiB |\n";
    }
    md << "\nratio = bare forward time (table above) / warm Predict wall time over gRPC. CPU = "
          "the worker's CPU time per warm Predict (user + system, 10 ms ticks averaged over the "
          "timed calls); faults = its minor page faults per warm Predict.\n\n";
  }
  if (!gateway.empty()) {
    md << "### Concurrent promoter requests through the gateway\n\n"
       << "| worker batching | requests | bp each | one by one | all at once | ratio | failures "
          "|\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& g : gateway) {
      if (!g.error.empty()) {
        md << "| " << (g.batching ? "on" : "off") << " | error: " << g.error << " |\n";
        continue;
      }
      md << "| " << (g.batching ? "on" : "off") << " | " << g.requests << " | " << g.bases << " | "
         << FormatSeconds(g.sequential_s) << " | " << FormatSeconds(g.concurrent_s) << " | **"
         << Fixed(g.ratio()) << "** | " << g.failures << " |\n";
    }
    md << "\nratio = wall time of the concurrent round / wall time of the sequential round, "
          "median over "
       << s.gateway_rounds << " rounds (times are medians).\n\n";
  }
  for (const auto& e : errors) md << "- error: " << e << "\n";
  return md.str();
}

std::string Json(const BenchSettings& s, const std::vector<RunnerFigures>& runner,
                 const std::vector<WorkerFigures>& workers,
                 const std::vector<GatewayFigures>& gateway) {
  auto list = [](const std::vector<double>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Fixed(v[i], 6);
    return out + "]";
  };
  std::ostringstream j;
  j << "{\"threads\": " << s.threads << ", \"cpu\": \"" << CpuModel() << "\", \"runner\": [";
  for (size_t i = 0; i < runner.size(); ++i) {
    const auto& f = runner[i];
    j << (i ? ", " : "") << "{\"model\": \"" << f.model_id << "\", \"task\": \""
      << dnaserve::TaskName(f.task) << "\", \"bases\": " << f.bases
      << ", \"windows\": " << f.windows << ", \"forward_calls\": " << f.forward_calls
      << ", \"load_s\": " << Fixed(f.load_s, 6) << ", \"bare_s\": " << list(f.bare_all)
      << ", \"served_s\": " << list(f.served_all) << ", \"direct_s\": " << list(f.direct_all)
      << ", \"served_model_s\": " << Fixed(f.served_model_s, 6)
      << ", \"direct_model_s\": " << Fixed(f.direct_model_s, 6)
      << ", \"python_median_s\": " << Fixed(f.python_s, 6)
      << ", \"served_ratio\": " << Fixed(f.served_ratio(), 4)
      << ", \"served_best_ratio\": " << Fixed(f.served_best_ratio(), 4)
      << ", \"direct_ratio\": " << Fixed(f.direct_ratio(), 4)
      << ", \"python_ratio\": " << Fixed(f.python_ratio(), 4) << "}";
  }
  j << "], \"workers\": [";
  for (size_t i = 0; i < workers.size(); ++i) {
    const auto& f = workers[i];
    j << (i ? ", " : "") << "{\"model\": \"" << f.model_id
      << "\", \"startup_s\": " << Fixed(f.startup_s, 4) << ", \"cold_load_ms\": " << f.cold_load_ms
      << ", \"cold_request_s\": " << Fixed(f.cold_request_s, 4) << ", \"warm_s\": {";
    size_t k = 0;
    for (const auto& [bases, seconds] : f.warm_s) {
      j << (k++ ? ", " : "") << "\"" << bases << "\": " << Fixed(seconds, 6);
    }
    j << "}, \"warm_cpu_s\": {";
    k = 0;
    for (const auto& [bases, seconds] : f.warm_cpu_s) {
      j << (k++ ? ", " : "") << "\"" << bases << "\": " << Fixed(seconds, 6);
    }
    j << "}, \"warm_minor_faults\": {";
    k = 0;
    for (const auto& [bases, faults] : f.warm_faults) {
      j << (k++ ? ", " : "") << "\"" << bases << "\": " << Fixed(faults, 1);
    }
    j << "}, \"vm_hwm_kib\": " << f.memory.hwm_kib << ", \"vm_rss_kib\": " << f.memory.rss_kib
      << ", \"error\": \"" << f.error << "\"}";
  }
  j << "], \"gateway\": [";
  for (size_t i = 0; i < gateway.size(); ++i) {
    const auto& g = gateway[i];
    j << (i ? ", " : "") << "{\"batching\": " << (g.batching ? "true" : "false")
      << ", \"requests\": " << g.requests << ", \"bases\": " << g.bases
      << ", \"sequential_s\": " << list(g.sequential_all)
      << ", \"concurrent_s\": " << list(g.concurrent_all) << ", \"ratio\": " << Fixed(g.ratio(), 4)
      << ", \"failures\": " << g.failures << ", \"error\": \"" << g.error << "\"}";
  }
  j << "]}\n";
  return j.str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dnaserve benchmarks (not a test): worker vs bare forward, Python peer, cold "
      "start and RSS, concurrent requests through the gateway"};
  BenchSettings s;
  s.binary_dir = dnaserve::testing::BinaryDir();
  s.source_dir = dnaserve::testing::SourceDir();
  std::string out_md;
  std::string out_json;
  std::string suites = "runner,workers,gateway";
  app.add_option("--models-dir", s.models_dir, "model packages to measure")->required();
  app.add_option("--extra-models-dir", s.extra_dirs, "further models dirs (repeatable)");
  app.add_option("--work-dir", s.work_dir, "scratch directory (window dumps, process logs)");
  app.add_option("--threads", s.threads, "LibTorch intra-op threads")->check(CLI::Range(1, 256));
  app.add_option("--reps", s.reps, "timed repetitions at 10 kb")->check(CLI::Range(1, 1000));
  app.add_option("--lengths", s.lengths, "input lengths in bp");
  app.add_option("--suites", suites, "comma-separated: runner, workers, gateway, edge, queue, large");
  EdgeSettings edge;
  app.add_option("--edge-rounds", edge.rounds, "edge suite: rounds")->check(CLI::Range(1, 100));
  app.add_option("--edge-seconds", edge.seconds, "edge suite: seconds per wrk run")
      ->check(CLI::Range(1, 600));
  app.add_option("--edge-baseline-gateway", edge.baseline_gateway,
                 "edge suite: another dnaserve-gateway binary measured alongside (e.g. main's)");
  app.add_option("--edge-predict-bp", edge.predict_bp, "edge suite: bases of the sync predict")
      ->check(CLI::Range(300, 500000));
  QueueSettings queue;
  app.add_option("--queue-rounds", queue.rounds, "queue suite: jobs per runner binary")
      ->check(CLI::Range(1, 10000));
  app.add_option("--queue-idle-ms", queue.idle_ms, "queue suite: quiet time before each job")
      ->check(CLI::Range(0, 60000));
  app.add_option("--queue-idle-window", queue.idle_window_s,
                 "queue suite: seconds of quiet whose Redis commands are counted")
      ->check(CLI::Range(1, 600));
  app.add_option("--queue-baseline-runner", queue.baseline_runner,
                 "queue suite: another dnaserve-runner binary measured alongside (e.g. main's)");
  LargeSettings large;
  app.add_option("--large-concurrent", large.concurrent, "large suite: concurrent requests")
      ->check(CLI::Range(1, 64));
  app.add_option("--large-settings", large.concurrency_settings,
                 "large suite: worker settings under concurrency (1x0 = --threads 1, default "
                 "executors; 2x1; nb1 = --no-batching --threads 1)");
  app.add_option("--large-precisions", large.precisions, "large suite: manifest precisions");
  app.add_option("--large-long-reps", large.long_reps, "large suite: repetitions above 10 kb")
      ->check(CLI::Range(1, 100));
  app.add_option("--large-max-bp", large.max_bp, "large suite: skip longer inputs (0: none)");
  app.add_option("--large-matmul-seconds", large.matmul_seconds,
                 "large suite: timing per matrix product of the limit");
  app.add_option("--gateway-requests", s.gateway_requests, "concurrent requests")
      ->check(CLI::Range(1, 256));
  app.add_option("--gateway-rounds", s.gateway_rounds, "rounds of each")->check(CLI::Range(1, 100));
  app.add_option("--worker-arg", s.worker_args,
                 "extra dnaserve-worker argument, repeatable (--worker-arg=--batch-executors "
                 "--worker-arg=2)");
  app.add_option("--served-executors", s.served_executors,
                 "passes at once in the in-process worker stack (0 = the worker's default)");
  app.add_flag("--defaults-only", s.defaults_only,
               "measure only each task's default package of every models dir");
  app.add_option("--python", s.python, "interpreter with torch for the Python peer");
  app.add_flag("!--no-python", s.python_peer, "skip the Python peer");
  app.add_option("--markdown", out_md, "write the Markdown tables here too");
  app.add_option("--json", out_json, "write raw figures (every repetition) as JSON");
  CLI11_PARSE(app, argc, argv);
  // The in-process runs (bare forward, runner) get the worker's malloc policy, so that the bare
  // forward, the denominator of every ratio, is the same forward the worker runs: without it
  // whether a pass re-faults its freed activations depends on what else this process left on
  // its heap (worker/models/host_memory.cc).
  dnaserve::worker::ApplyForwardPassMallocPolicy(dnaserve::worker::kForwardMaxArenas);
  s.runner = suites.find("runner") != std::string::npos;
  s.workers = suites.find("workers") != std::string::npos;
  s.gateway = suites.find("gateway") != std::string::npos;
  const bool run_edge = suites.find("edge") != std::string::npos;
  const bool run_queue = suites.find("queue") != std::string::npos;
  const bool run_large = suites.find("large") != std::string::npos;
  if (s.work_dir.empty()) s.work_dir = dnaserve::testing::MakeTempDir("dnaserve-bench");
  std::filesystem::create_directories(s.work_dir);

  std::vector<std::string> errors;
  std::vector<RunnerFigures> runner;
  std::vector<WorkerFigures> workers;
  std::vector<GatewayFigures> gateway;
  if (s.runner) runner = RunRunnerBench(s, &errors);
  if (s.workers) workers = RunWorkerBench(s);
  if (s.gateway) {
    gateway.push_back(RunGatewayBench(s, /*batching=*/true));
    gateway.push_back(RunGatewayBench(s, /*batching=*/false));
  }
  EdgeFigures edge_figures;
  if (run_edge) {
    edge_figures = RunEdgeBench(s, edge);
    if (!edge_figures.error.empty()) errors.push_back("edge: " + edge_figures.error);
  }
  QueueFigures queue_figures;
  if (run_queue) {
    queue_figures = RunQueueBench(s, queue);
    if (!queue_figures.error.empty()) errors.push_back("queue: " + queue_figures.error);
  }
  std::string large_md, large_json;
  if (run_large) large_md = RunLargeBench(s, large, &large_json, &errors);
  std::string md = Markdown(s, runner, workers, gateway, errors);
  md += large_md;
  if (run_edge) md += EdgeMarkdown(edge, edge_figures);
  if (run_queue) md += QueueMarkdown(queue, queue_figures);
  std::fputs(md.c_str(), stdout);
  if (!out_md.empty()) std::ofstream(out_md, std::ios::trunc) << md;
  if (!out_json.empty()) {
    std::string json = Json(s, runner, workers, gateway);
    if (run_edge) {
      json.erase(json.rfind('}'));
      json += ", \"edge\": " + EdgeJson(edge_figures) + "}\n";
    }
    if (run_large) {
      json.erase(json.rfind('}'));
      json += ", \"large\": " + large_json + "}\n";
    }
    if (run_queue) {
      json.erase(json.rfind('}'));
      json += ", \"queue\": " + QueueJson(queue_figures) + "}\n";
    }
    std::ofstream(out_json, std::ios::trunc) << json;
  }
  return errors.empty() ? 0 : 1;
}
