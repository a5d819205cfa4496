#include "tests/bench/edge_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <mutex>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/bench/service_bench.h"
#include "tests/support/test_env.h"

namespace dnaserve::bench {
namespace {

using dnaserve::testing::ChildProcess;

struct WrkResult {
  double rps = 0;
  double p50_us = 0;  // wrk --latency's 50 % line
  long long errors = 0;
  std::string error;  // wrk did not run or printed no rate
};

using dnaserve::testing::ShellQuote;

long long NumberAfter(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return 0;
  return std::atoll(text.c_str() + at + label.size());
}

// A percentile line of wrk --latency ("     50%  812.00us", "1.23ms", "1.01s"), in µs.
double WrkLatencyUs(const std::string& out, const std::string& percentile) {
  const size_t table = out.find("Latency Distribution");
  if (table == std::string::npos) return 0;
  const size_t at = out.find(percentile, table);
  if (at == std::string::npos) return 0;
  char* end = nullptr;
  const double value = std::strtod(out.c_str() + at + percentile.size(), &end);
  const std::string unit(end, std::min<size_t>(2, std::strlen(end)));
  if (unit == "us") return value;
  if (unit == "ms") return value * 1e3;
  if (!unit.empty() && unit[0] == 's') return value * 1e6;
  return 0;
}

// The predict load sent straight to the worker: `connections` threads calling Predict over one
// channel for `seconds`. Throughput, and the median of every call's latency.
WrkResult RunDirect(const EdgeSettings& edge, worker::v1::Worker::Stub& stub,
                    const worker::v1::PredictRequest& request) {
  WrkResult result;
  std::mutex mu;
  std::vector<double> latencies_us;
  long long errors = 0;
  const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(edge.seconds);
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < edge.predict_connections; ++c) {
    clients.emplace_back([&] {
      std::vector<double> mine;
      long long failed = 0;
      while (std::chrono::steady_clock::now() < stop) {
        grpc::ClientContext context;
        context.AddMetadata("x-request-id", "bench-direct");
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        const auto t0 = std::chrono::steady_clock::now();
        auto reader = stub.Predict(&context, request);
        worker::v1::PredictEvent event;
        bool answered = false;
        while (reader->Read(&event)) answered |= event.has_result();
        const bool ok = reader->Finish().ok() && answered;
        mine.push_back(std::chrono::duration<double, std::micro>(
                           std::chrono::steady_clock::now() - t0)
                           .count());
        if (!ok) ++failed;
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies_us.insert(latencies_us.end(), mine.begin(), mine.end());
      errors += failed;
    });
  }
  for (auto& t : clients) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.rps = static_cast<double>(latencies_us.size()) / elapsed;
  result.p50_us = Median(latencies_us);
  result.errors = errors;
  return result;
}

// Runs wrk and reads its "Requests/sec" line; non-2xx answers and socket errors count as errors.
WrkResult RunWrk(const EdgeSettings& edge, int connections, const std::string& url,
                 const std::vector<std::string>& headers, const std::string& script) {
  std::string command = "wrk --latency -t" + std::to_string(edge.wrk_threads) + " -c" +
                        std::to_string(connections) + " -d" + std::to_string(edge.seconds) + "s";
  for (const auto& h : headers) command += " -H " + ShellQuote(h);
  if (!script.empty()) command += " -s " + ShellQuote(script);
  command += " " + ShellQuote(url) + " 2>&1";
  WrkResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    result.error = "cannot run wrk";
    return result;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  const size_t at = out.find("Requests/sec:");
  if (status != 0 || at == std::string::npos) {
    result.error = "wrk failed (is it installed? scripts/bench installs it): " + out;
    return result;
  }
  result.rps = std::atof(out.c_str() + at + 13);
  result.p50_us = WrkLatencyUs(out, "50%");
  result.errors = NumberAfter(out, "Non-2xx or 3xx responses:");
  const size_t socket = out.find("Socket errors:");
  if (socket != std::string::npos) {
    const std::string line = out.substr(socket, out.find('\n', socket) - socket);
    for (const char* field : {"connect ", "read ", "write ", "timeout "}) {
      result.errors += NumberAfter(line, field);
    }
  }
  return result;
}

// utime + stime of a process, in seconds.
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string ReadLoad() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

struct Gateway {
  std::string name;  // "gateway" or "baseline"
  std::string binary;
  dnaserve::testing::LaunchedGateway launched;
  int port = 0;
  std::string job_id;
};

}  // namespace

EdgeFigures RunEdgeBench(const BenchSettings& settings, const EdgeSettings& edge) {
  EdgeFigures f;
  auto redis = dnaserve::testing::RedisServer::Start();
  if (!redis) {
    f.error = "redis-server is not installed or did not start";
    return f;
  }
  const std::string keys_file = settings.work_dir + "/edge-keys.json";
  const std::string key = IssueBenchKey(settings, keys_file, 64, &f.error);
  if (key.empty()) return f;

  dnaserve::testing::LaunchedWorker worker;
  worker.Start(BenchWorker(settings, Task::kPromoter, settings.models_dir, true,
                           settings.work_dir + "/edge-worker.log"));

  // Async jobs run in a runner since the gateway became thin: without one, the job to poll
  // would stay queued.
  ChildProcess runner;
  if (!dnaserve::testing::StartRunner(&runner, redis->url(), "promoter=" + worker.address(),
                                      settings.work_dir + "/edge-runner.log")) {
    f.error = "cannot start dnaserve-runner; see " + settings.work_dir + "/edge-runner.log";
    return f;
  }

  std::vector<std::unique_ptr<Gateway>> gateways;
  gateways.push_back(std::make_unique<Gateway>());
  gateways.back()->name = "gateway";
  gateways.back()->binary = settings.binary_dir + "/gateway/dnaserve-gateway";
  if (!edge.baseline_gateway.empty()) {
    gateways.push_back(std::make_unique<Gateway>());
    gateways.back()->name = "baseline";
    gateways.back()->binary = edge.baseline_gateway;
  }
  for (auto& g : gateways) {
    dnaserve::testing::GatewayLaunch launch =
        BenchGateway(settings, keys_file, redis->url(), "promoter=" + worker.address(),
                     settings.work_dir + "/edge-" + g->name + ".log");
    launch.binary = g->binary;
    // The per-IP limit is set out of reach: wrk is one address.
    launch.env = {{"DNASERVE_HTTP_THREADS", std::to_string(edge.http_threads)},
                  {"DNASERVE_IP_RATE", "10000000"},
                  {"DNASERVE_IP_BURST", "10000000"}};
    g->launched.Start(std::move(launch));
    g->port = g->launched.port();
  }
  const int bare_port = dnaserve::testing::FreePort();
  ChildProcess bare;
  bare.Start({settings.binary_dir + "/tests/bench/dnaserve-bare-http", "--port",
              std::to_string(bare_port), "--threads", std::to_string(edge.http_threads)},
             {}, settings.work_dir + "/edge-bare.log");

  bool up = worker.WaitUntilListening(std::chrono::seconds(60)) &&
            dnaserve::testing::WaitForPort(bare_port, std::chrono::seconds(30));
  for (auto& g : gateways) {
    up = up && dnaserve::testing::WaitForPort(g->port, std::chrono::seconds(30));
  }
  if (!up) {
    f.error = "a process did not start; see the edge-*.log files in " + settings.work_dir;
    return f;
  }

  const std::string body = "{\"sequence\": \"" + RandomBases(edge.predict_bp, 29) + "\"}";
  const std::string auth = "Authorization: Bearer " + key;
  const std::string script = settings.work_dir + "/edge-predict.lua";
  {
    std::ofstream lua(script, std::ios::trunc);
    lua << "wrk.method = \"POST\"\nwrk.body = [[" << body << "]]\n"
        << "wrk.headers[\"Content-Type\"] = \"application/json\"\n";
  }
  std::string direct_model;  // the model the gateway resolved (its answers' meta.model)
  for (auto& g : gateways) {
    const std::string base = "http://127.0.0.1:" + std::to_string(g->port);
    // Until the gateway has the worker's models and the model is warm.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (dnaserve::testing::HttpRequest("POST", base + "/v1/tasks/promoter/predict",
                                          {auth, "Content-Type: application/json"}, body, 60)
               .status != 200) {
      if (std::chrono::steady_clock::now() > deadline) {
        f.error = g->name + ": the warm-up predict never succeeded; see " + settings.work_dir;
        return f;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (direct_model.empty()) {
      auto warm = dnaserve::testing::HttpRequest("POST", base + "/v1/tasks/promoter/predict",
                                                 {auth, "Content-Type: application/json"}, body,
                                                 60);
      const std::string mark = "\"model\":\"";
      const size_t at = warm.body.find(mark);
      if (at != std::string::npos) {
        const size_t from = at + mark.size();
        direct_model = warm.body.substr(from, warm.body.find('"', from) - from);
      }
    }
    // A finished job to poll.
    auto accepted = dnaserve::testing::HttpRequest(
        "POST", base + "/v1/tasks/promoter/predict",
        {auth, "Content-Type: application/json", "Prefer: respond-async"}, body, 60);
    auto id = accepted.Header("x-job-id");
    if (accepted.status != 202 || !id) {
      f.error = g->name + ": the async submission was answered " + std::to_string(accepted.status);
      return f;
    }
    g->job_id = *id;
    while (dnaserve::testing::HttpRequest("GET", base + "/v1/tasks/jobs/" + g->job_id, {auth})
               .status != 200) {
      if (std::chrono::steady_clock::now() > deadline) {
        f.error = g->name + ": the job never finished";
        return f;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  struct Run {
    std::string name;
    int pid;  // the server process
    int connections;
    std::string url;
    std::vector<std::string> headers;
    std::string script;
    bool direct = false;  // the predict load over gRPC to the worker, not wrk
  };
  std::vector<std::vector<Run>> groups;  // runs of one group alternate with each other
  std::vector<Run> health = {{"health: bare Pistache", bare.pid(), edge.connections,
                              "http://127.0.0.1:" + std::to_string(bare_port) + "/health", {}, ""}};
  std::vector<Run> poll, predict;
  for (auto& g : gateways) {
    const std::string base = "http://127.0.0.1:" + std::to_string(g->port);
    const int pid = g->launched.process().pid();
    health.push_back({"health: " + g->name, pid, edge.connections, base + "/health", {}, ""});
    poll.push_back({"job poll: " + g->name, pid, edge.connections,
                    base + "/v1/tasks/jobs/" + g->job_id, {auth}, ""});
    predict.push_back({"predict " + std::to_string(edge.predict_bp) + " bp: " + g->name, pid,
                       edge.predict_connections, base + "/v1/tasks/promoter/predict", {auth},
                       script});
  }
  // The same predict, straight to the worker: the same bases, the model the gateway chose and
  // the gateway's default options (tests/support/predict_requests.cc).
  worker::v1::PredictRequest direct_request = BenchRequest(Task::kPromoter, edge.predict_bp);
  direct_request.set_sequence(RandomBases(edge.predict_bp, 29));
  direct_request.set_model(direct_model);
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(worker.address(), grpc::InsecureChannelCredentials(),
                                           channel_args);
  auto stub = worker::v1::Worker::NewStub(channel);
  predict.push_back({"predict " + std::to_string(edge.predict_bp) + " bp: direct to worker",
                     worker.process().pid(), edge.predict_connections, worker.address(), {}, "",
                     true});
  groups = {health, poll, predict};
  std::map<std::string, size_t> index;
  for (const auto& group : groups) {
    for (const auto& run : group) {
      index[run.name] = f.series.size();
      f.series.push_back({run.name, {}, {}, {}, {}, 0});
    }
  }
  f.load = ReadLoad();
  for (int round = 0; round < edge.rounds; ++round) {
    for (auto group : groups) {
      if (round % 2 == 1) std::reverse(group.begin(), group.end());
      for (const auto& run : group) {
        const double cpu_before = ProcessCpuSeconds(run.pid);
        const double own_before = ProcessCpuSeconds(getpid());
        WrkResult r = run.direct ? RunDirect(edge, *stub, direct_request)
                                 : RunWrk(edge, run.connections, run.url, run.headers, run.script);
        const double cpu = ProcessCpuSeconds(run.pid) - cpu_before;
        const double own = ProcessCpuSeconds(getpid()) - own_before;
        if (!r.error.empty()) {
          f.error = run.name + ": " + r.error;
          return f;
        }
        EdgeSeries& s = f.series[index[run.name]];
        s.rps.push_back(r.rps);
        s.p50_us.push_back(r.p50_us);
        const double requests = r.rps * edge.seconds;
        s.cpu_us.push_back(requests > 0 ? cpu * 1e6 / requests : 0);
        if (run.direct) s.client_cpu_us.push_back(requests > 0 ? own * 1e6 / requests : 0);
        s.errors += r.errors;
        std::fprintf(stderr,
                     "[bench] edge round %d %s: %.0f req/s, p50 %.0f us, %.1f us CPU/request%s%s\n",
                     round + 1, run.name.c_str(), r.rps, r.p50_us, s.cpu_us.back(),
                     run.direct ? (", client " + std::to_string(std::lround(
                                                      s.client_cpu_us.back())) + " us").c_str()
                                : "",
                     r.errors ? (" (" + std::to_string(r.errors) + " errors)").c_str() : "");
      }
    }
  }
  for (auto& g : gateways) g->launched.process().Stop();
  bare.Stop();
  worker.process().Stop();
  redis->Stop();
  return f;
}

namespace {

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

std::string EdgeMarkdown(const EdgeSettings& edge, const EdgeFigures& f) {
  std::ostringstream md;
  md << "### The edge's own cost (wrk -t" << edge.wrk_threads << ", " << edge.seconds
     << " s per run, " << edge.rounds << " rounds, " << edge.http_threads
     << " reactor threads)\n\n";
  if (!f.error.empty()) {
    md << "- error: " << f.error << "\n\n";
    return md.str();
  }
  md << "Load average before the first round: " << f.load << "\n\n"
     << "| series | connections | median req/s | best req/s | each round | p50 latency (median) "
        "| server CPU per request (median) | errors |\n"
     << "|---|---:|---:|---:|---|---:|---:|---:|\n";
  for (const auto& s : f.series) {
    std::string rounds;
    for (double r : s.rps) rounds += (rounds.empty() ? "" : ", ") + Fixed(r / 1000, 1) + "k";
    const int connections =
        s.name.rfind("predict", 0) == 0 ? edge.predict_connections : edge.connections;
    md << "| " << s.name << " | " << connections << " | " << Fixed(Median(s.rps), 0) << " | "
       << Fixed(Max(s.rps), 0) << " | " << rounds << " | " << Fixed(Median(s.p50_us), 0)
       << " µs | " << Fixed(Median(s.cpu_us), 1)
       << " µs | " << s.errors << " |\n";
  }
  const EdgeSeries* bare = f.Find("health: bare Pistache");
  md << "\n";
  for (const char* who : {"gateway", "baseline"}) {
    const EdgeSeries* g = f.Find(std::string("health: ") + who);
    if (!bare || !g) continue;
    md << "- /health, " << who << " / bare: paired median **"
       << Fixed(PairedRatio(g->rps, bare->rps), 2) << "**, best-of-" << g->rps.size() << " "
       << Fixed(Max(g->rps) / std::max(1.0, Max(bare->rps)), 2)
       << "; server CPU per request, bare / " << who << ": "
       << Fixed(PairedRatio(bare->cpu_us, g->cpu_us), 2) << "\n";
  }
  for (const char* what : {"health", "job poll"}) {
    const EdgeSeries* now = f.Find(std::string(what) + ": gateway");
    const EdgeSeries* before = f.Find(std::string(what) + ": baseline");
    if (!now || !before) continue;
    md << "- " << what << ", gateway / baseline: paired median **"
       << Fixed(PairedRatio(now->rps, before->rps), 2) << "**\n";
  }
  const EdgeSeries* p_now = nullptr;
  const EdgeSeries* p_before = nullptr;
  for (const auto& s : f.series) {
    if (s.name.rfind("predict", 0) != 0) continue;
    if (s.name.find(": gateway") != std::string::npos) p_now = &s;
    if (s.name.find(": baseline") != std::string::npos) p_before = &s;
  }
  const EdgeSeries* p_direct = nullptr;
  for (const auto& s : f.series) {
    if (s.name.rfind("predict", 0) == 0 && s.name.find(": direct") != std::string::npos) {
      p_direct = &s;
    }
  }
  for (const EdgeSeries* g : {p_now, p_before}) {
    if (!g || !p_direct) continue;
    std::vector<double> added;
    for (size_t i = 0; i < g->p50_us.size() && i < p_direct->p50_us.size(); ++i) {
      added.push_back(g->p50_us[i] - p_direct->p50_us[i]);
    }
    md << "- predict, " << (g == p_now ? "gateway" : "baseline")
       << " / direct to worker (same load, same concurrency): paired median **"
       << Fixed(PairedRatio(g->rps, p_direct->rps), 2) << "**; added p50 latency, paired median **"
       << Fixed(Median(added), 0) << " µs**; the gateway's CPU per request "
       << Fixed(Median(g->cpu_us), 1) << " µs (the worker's per direct request "
       << Fixed(Median(p_direct->cpu_us), 1) << " µs; the gRPC client's per direct call "
       << Fixed(Median(p_direct->client_cpu_us), 1) << " µs)\n";
  }
  if (p_now && p_before) {
    md << "- predict, gateway / baseline: paired median **"
       << Fixed(PairedRatio(p_now->rps, p_before->rps), 2) << "**\n";
  }
  md << "\nPaired ratios are medians over rounds of runs made back to back; best-of-N divides "
        "the best rounds.\n\n";
  return md.str();
}

std::string EdgeJson(const EdgeFigures& f) {
  std::ostringstream j;
  j << "{\"load\": \"" << f.load << "\", \"error\": \"" << (f.error.empty() ? "" : "see log")
    << "\", \"series\": [";
  for (size_t i = 0; i < f.series.size(); ++i) {
    const auto& s = f.series[i];
    j << (i ? ", " : "") << "{\"name\": \"" << s.name << "\", \"rps\": [";
    for (size_t k = 0; k < s.rps.size(); ++k) j << (k ? ", " : "") << Fixed(s.rps[k], 1);
    j << "], \"p50_us\": [";
    for (size_t k = 0; k < s.p50_us.size(); ++k) j << (k ? ", " : "") << Fixed(s.p50_us[k], 1);
    j << "], \"cpu_us_per_request\": [";
    for (size_t k = 0; k < s.cpu_us.size(); ++k) j << (k ? ", " : "") << Fixed(s.cpu_us[k], 2);
    j << "], \"errors\": " << s.errors << "}";
  }
  j << "]}";
  return j.str();
}

}  // namespace dnaserve::bench
