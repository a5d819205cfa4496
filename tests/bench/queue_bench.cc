#include "tests/bench/queue_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/bench/service_bench.h"
#include "tests/support/redis_monitor.h"
#include "tests/support/test_env.h"

namespace dnaserve::bench {
namespace {

using dnaserve::testing::ChildProcess;
using dnaserve::testing::HttpRequest;
using dnaserve::testing::RedisMonitor;

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ReadLoad() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// The value below which a fraction `p` of the sorted values lie (nearest rank).
double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(rank, values.size() - 1)];
}

// The submitting client's side of one job: the gateway, the key and the body.
struct Client {
  std::string base;
  std::string auth;
  std::string body;

  // The job id of an accepted async job and the wall time the 202 was in hand; nullopt on
  // another answer.
  std::optional<std::pair<std::string, int64_t>> Submit() const {
    auto accepted = HttpRequest("POST", base + "/v1/tasks/promoter/predict",
                                {auth, "Content-Type: application/json", "Prefer: respond-async"},
                                body, 60);
    const int64_t at = WallMicros();
    auto id = accepted.Header("x-job-id");
    if (accepted.status != 202 || !id) return std::nullopt;
    return std::make_pair(*id, at);
  }
  // Polls the job until it has its result; false after `timeout`.
  bool WaitFinished(const std::string& job_id, std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (HttpRequest("GET", base + "/v1/tasks/jobs/" + job_id, {auth}).status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
};

// MONITOR times (µs) of the entry's XADD and of the write marking the job running, from line
// `from` on; -1 for one not seen.
std::pair<int64_t, int64_t> QueuedAndStarted(const std::vector<std::string>& lines, size_t from,
                                             const std::string& job_id) {
  const std::string id = "\"" + job_id + "\"";
  const std::string job_key = "\"dnaserve:job:" + job_id + "\"";
  int64_t queued = -1, started = -1;
  for (size_t i = from; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (queued < 0 && line.find("\"XADD\" \"dnaserve:queue:client:") != std::string::npos &&
        line.find(id) != std::string::npos) {
      queued = RedisMonitor::Micros(line);
    }
    if (started < 0 && line.find(job_key) != std::string::npos &&
        line.find("\"running\"") != std::string::npos) {
      started = RedisMonitor::Micros(line);
    }
  }
  return {queued, started};
}

}  // namespace

QueueFigures RunQueueBench(const BenchSettings& settings, const QueueSettings& q) {
  QueueFigures f;
  auto redis = dnaserve::testing::RedisServer::Start();
  if (!redis) {
    f.error = "redis-server is not installed or did not start";
    return f;
  }
  const std::string keys_file = settings.work_dir + "/queue-keys.json";
  const std::string key = IssueBenchKey(settings, keys_file, 64, &f.error);
  if (key.empty()) return f;
  dnaserve::testing::LaunchedWorker worker;
  worker.Start(BenchWorker(settings, Task::kPromoter, settings.models_dir, true,
                           settings.work_dir + "/queue-worker.log"));
  const std::string workers = "promoter=" + worker.address();
  dnaserve::testing::LaunchedGateway gateway;
  gateway.Start(BenchGateway(settings, keys_file, redis->url(), workers,
                             settings.work_dir + "/queue-gateway.log"));
  if (!worker.WaitUntilListening(std::chrono::seconds(60)) || !gateway.WaitUntilListening()) {
    f.error = "a process did not start; see the queue-*.log files in " + settings.work_dir;
    return f;
  }
  if (const std::string waiting = dnaserve::testing::WaitForModelLists(gateway.base_url(),
                                                                      {"promoter"});
      !waiting.empty()) {
    f.error = "the gateway never listed the " + waiting + " models; see " + settings.work_dir;
    return f;
  }
  RedisMonitor monitor;
  if (!monitor.Start(redis->port())) {
    f.error = "MONITOR could not be started";
    return f;
  }
  const Client client{gateway.base_url(), "Authorization: Bearer " + key,
                      "{\"sequence\": \"" + RandomBases(q.bp, 31) + "\"}"};

  std::vector<std::pair<std::string, std::string>> runners = {
      {"runner", settings.binary_dir + "/runner/dnaserve-runner"}};
  if (!q.baseline_runner.empty()) runners.push_back({"baseline", q.baseline_runner});
  for (const auto& [name, binary] : runners) f.series.push_back({name, {}, {}, -1, 0});

  f.load = ReadLoad();
  constexpr int kBlocks = 2;  // the runners alternate block by block
  for (int block = 0; block < kBlocks; ++block) {
    for (size_t r = 0; r < runners.size(); ++r) {
      QueueSeries& series = f.series[r];
      ChildProcess runner;
      // The default claim timeout (30 s), as deployed: tests shorten it.
      if (!dnaserve::testing::StartRunner(
              &runner, redis->url(), workers,
              settings.work_dir + "/queue-" + series.name + ".log",
              {{"DNASERVE_RUNNER_CLAIM_TIMEOUT", "30"}}, runners[r].second)) {
        f.error = "cannot start " + runners[r].second;
        return f;
      }
      // Warm: the runner knows the workers' models, the model has run.
      auto warm = client.Submit();
      if (!warm || !client.WaitFinished(warm->first, std::chrono::seconds(120))) {
        f.error = series.name + ": the warm-up job never finished; see " + settings.work_dir;
        return f;
      }
      if (block == 0) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const size_t before = monitor.Count();
        std::this_thread::sleep_for(std::chrono::seconds(q.idle_window_s));
        series.idle_commands_per_s =
            static_cast<double>(monitor.Count() - before) / q.idle_window_s;
        std::fprintf(stderr, "[bench] queue %s: %.2f Redis commands/s idle\n",
                     series.name.c_str(), series.idle_commands_per_s);
      }
      const int rounds = q.rounds / kBlocks + (block < q.rounds % kBlocks ? 1 : 0);
      for (int round = 0; round < rounds; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(q.idle_ms));
        const size_t from = monitor.Count();
        auto job = client.Submit();
        if (!job || !client.WaitFinished(job->first, std::chrono::seconds(60))) {
          ++series.failures;
          continue;
        }
        const auto [queued, started] = QueuedAndStarted(monitor.Lines(), from, job->first);
        if (queued < 0 || started < 0) {
          ++series.failures;
          continue;
        }
        series.start_ms.push_back(static_cast<double>(started - job->second) / 1000.0);
        series.queued_ms.push_back(static_cast<double>(started - queued) / 1000.0);
        std::fprintf(stderr, "[bench] queue %s: 202 -> running %.2f ms, queued -> running %.2f ms\n",
                     series.name.c_str(), series.start_ms.back(), series.queued_ms.back());
      }
      runner.Stop();
    }
  }
  monitor.Stop();
  gateway.process().Stop();
  worker.process().Stop();
  redis->Stop();
  return f;
}

std::string QueueMarkdown(const QueueSettings& q, const QueueFigures& f) {
  std::ostringstream md;
  md << "### Queued jobs on an idle stack (" << q.rounds << " async " << q.bp
     << " bp promoter jobs per runner, each after " << q.idle_ms << " ms idle)\n\n";
  if (!f.error.empty()) {
    md << "- error: " << f.error << "\n\n";
    return md.str();
  }
  md << "Load average before the first round: " << f.load << "\n\n"
     << "| runner | jobs | 202 -> running: median | p90 | max | queued -> running: median | p90 "
        "| max | Redis commands/s, stack idle | failures |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& s : f.series) {
    md << "| " << s.name << " | " << s.start_ms.size() << " | "
       << Fixed(Median(s.start_ms), 2) << " ms | " << Fixed(Percentile(s.start_ms, 0.9), 2)
       << " ms | " << Fixed(Percentile(s.start_ms, 1.0), 2) << " ms | "
       << Fixed(Median(s.queued_ms), 2) << " ms | " << Fixed(Percentile(s.queued_ms, 0.9), 2)
       << " ms | " << Fixed(Percentile(s.queued_ms, 1.0), 2) << " ms | "
       << Fixed(s.idle_commands_per_s, 2) << " | " << s.failures << " |\n";
  }
  md << "\n202 -> running: from the client holding the 202 to redis-server executing the "
        "runner's write of state running (MONITOR's timestamp; one machine, one clock); "
        "negative when the runner started the job before the client had read its answer. "
        "Queued -> running: from the gateway's XADD of the entry to that write, both MONITOR "
        "times. Idle: every command Redis executed over " << q.idle_window_s
     << " s with nothing queued.\n\n";
  return md.str();
}

std::string QueueJson(const QueueFigures& f) {
  std::ostringstream j;
  auto list = [](const std::vector<double>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Fixed(v[i], 3);
    return out + "]";
  };
  j << "{\"load\": \"" << f.load << "\", \"error\": \"" << (f.error.empty() ? "" : "see log")
    << "\", \"series\": [";
  for (size_t i = 0; i < f.series.size(); ++i) {
    const auto& s = f.series[i];
    j << (i ? ", " : "") << "{\"name\": \"" << s.name << "\", \"start_ms\": " << list(s.start_ms)
      << ", \"queued_ms\": " << list(s.queued_ms)
      << ", \"idle_commands_per_s\": " << Fixed(s.idle_commands_per_s, 3)
      << ", \"failures\": " << s.failures << "}";
  }
  j << "]}";
  return j.str();
}

}  // namespace dnaserve::bench
