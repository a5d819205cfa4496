#include "tests/bench/service_bench.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::bench {
namespace {

namespace v1 = worker::v1;
using dnaserve::testing::ChildProcess;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct PredictOutcome {
  grpc::Status status;
  v1::PredictResult result;
  double seconds = 0;
};

PredictOutcome PredictOverGrpc(v1::Worker::Stub& stub, const v1::PredictRequest& request) {
  PredictOutcome outcome;
  grpc::ClientContext context;
  context.AddMetadata("x-request-id", "bench");
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  const auto started = Clock::now();
  auto reader = stub.Predict(&context, request);
  v1::PredictEvent event;
  while (reader->Read(&event)) {
    if (event.has_result()) outcome.result = event.result();
  }
  outcome.status = reader->Finish();
  outcome.seconds = SecondsSince(started);
  return outcome;
}


WorkerFigures MeasureWorker(const BenchSettings& settings, Task task,
                            const worker::ModelManifest& manifest, const std::string& models_dir) {
  WorkerFigures f;
  f.task = task;
  f.model_id = manifest.id;
  const std::string log = settings.work_dir + "/worker-" + manifest.id + ".log";
  dnaserve::testing::LaunchedWorker worker;
  ChildProcess& process = worker.process();
  const auto spawned = Clock::now();
  if (!worker.Start(BenchWorker(settings, task, models_dir, true, log))) {
    f.error = "cannot start dnaserve-worker";
    return f;
  }
  // Minutes, not seconds: a worker digests every package's weights before it listens
  // (worker/manifest/manifest.cc), a gigabyte and more for the large-model packages.
  if (!worker.WaitUntilListening(std::chrono::minutes(5))) {
    f.error = "the worker did not open its port; see " + log;
    return f;
  }
  f.startup_s = SecondsSince(spawned);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto channel =
      grpc::CreateCustomChannel(worker.address(), grpc::InsecureChannelCredentials(), args);
  auto stub = v1::Worker::NewStub(channel);

  std::vector<int64_t> lengths = settings.lengths;
  if (task == Task::kExpression) lengths = {kExpressionWindowBp};
  bool first = true;
  for (int64_t length : lengths) {
    v1::PredictRequest request = BenchRequest(task, length);
    request.set_model(manifest.id);
    const int reps = length <= 10000 ? settings.reps : std::max(2, settings.reps / 2);
    std::vector<double> warm;
    ProcessCounters before;
    for (int r = 0; r < reps + 1; ++r) {  // the first call of each length is a warm-up
      if (r == 1) before = ReadProcessCounters(process.pid());
      PredictOutcome outcome = PredictOverGrpc(*stub, request);
      if (!outcome.status.ok()) {
        f.error = "Predict failed: " + outcome.status.error_message();
        return f;
      }
      if (first) {
        f.cold_load_ms = outcome.result.model_load_time_ms();
        f.cold_request_s = outcome.seconds;
        first = false;
      }
      if (r > 0) warm.push_back(outcome.seconds);
    }
    f.warm_s[ScoredBases(task, length)] = Median(warm);
    const ProcessCounters after = ReadProcessCounters(process.pid());
    if (before.cpu_s >= 0 && after.cpu_s >= 0) {
      f.warm_cpu_s[ScoredBases(task, length)] = (after.cpu_s - before.cpu_s) / reps;
      f.warm_faults[ScoredBases(task, length)] =
          static_cast<double>(after.minor_faults - before.minor_faults) / reps;
    }
  }
  f.memory = ReadProcessMemory(process.pid());
  process.Stop();
  return f;
}

}  // namespace

dnaserve::testing::WorkerLaunch BenchWorker(const BenchSettings& settings, Task task,
                                            const std::string& models_dir, bool batching,
                                            const std::string& log_path) {
  dnaserve::testing::WorkerLaunch launch;
  launch.binary = settings.binary_dir + "/worker/dnaserve-worker";
  launch.task = std::string(TaskName(task));
  launch.models_dir = models_dir;
  launch.extra_args = {"--threads", std::to_string(settings.threads),
                       batching ? "--batching" : "--no-batching"};
  launch.extra_args.insert(launch.extra_args.end(), settings.worker_args.begin(),
                           settings.worker_args.end());
  launch.log_path = log_path;
  return launch;
}

dnaserve::testing::GatewayLaunch BenchGateway(const BenchSettings& settings,
                                              const std::string& keys_file,
                                              const std::string& redis_url,
                                              const std::string& workers,
                                              const std::string& log_path) {
  dnaserve::testing::GatewayLaunch launch;
  launch.binary = settings.binary_dir + "/gateway/dnaserve-gateway";
  launch.redis_url = redis_url;
  launch.workers = workers;
  launch.keys_file = keys_file;
  launch.log_path = log_path;
  return launch;
}

std::string IssueBenchKey(const BenchSettings& settings, const std::string& keys_file,
                          int concurrency, std::string* error) {
  // dnaserve-keys prints the key, then its entry.
  const std::string key_command = settings.binary_dir +
                                  "/gateway/dnaserve-keys new --client bench --rate 600000 "
                                  "--concurrency " +
                                  std::to_string(concurrency) + " 2>/dev/null";
  FILE* pipe = popen(key_command.c_str(), "r");
  char line1[4096] = {0}, line2[4096] = {0};
  const bool got_key =
      pipe && fgets(line1, sizeof(line1), pipe) && fgets(line2, sizeof(line2), pipe);
  if (pipe) pclose(pipe);
  if (!got_key) {
    *error = "dnaserve-keys did not issue a key";
    return "";
  }
  std::string key(line1);
  std::string entry(line2);
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  while (!entry.empty() && (entry.back() == '\n' || entry.back() == '\r')) entry.pop_back();
  std::FILE* keys = std::fopen(keys_file.c_str(), "w");
  if (!keys) {
    *error = "cannot write " + keys_file;
    return "";
  }
  std::fprintf(keys, "{\"keys\": [%s]}\n", entry.c_str());
  std::fclose(keys);
  return key;
}

std::vector<WorkerFigures> RunWorkerBench(const BenchSettings& settings) {
  std::vector<WorkerFigures> figures;
  std::vector<std::string> dirs = {settings.models_dir};
  dirs.insert(dirs.end(), settings.extra_dirs.begin(), settings.extra_dirs.end());
  for (const std::string& models_dir : dirs) {
    for (const worker::ModelManifest& manifest :
         PackagesToMeasure(models_dir, settings.defaults_only)) {
      // One fresh process per model, so its cold start and peak RSS are its own.
      WorkerFigures f = MeasureWorker(settings, manifest.task, manifest, models_dir);
      std::fprintf(stderr, "[bench] worker %s: startup %s, cold load %lld ms, VmHWM %lld KiB%s\n",
                   f.model_id.c_str(), FormatSeconds(f.startup_s).c_str(),
                   static_cast<long long>(f.cold_load_ms),
                   static_cast<long long>(f.memory.hwm_kib),
                   f.error.empty() ? "" : (" ERROR " + f.error).c_str());
      figures.push_back(std::move(f));
    }
  }
  return figures;
}

GatewayFigures RunGatewayBench(const BenchSettings& settings, bool batching) {
  GatewayFigures f;
  f.batching = batching;
  f.requests = settings.gateway_requests;
  f.bases = settings.gateway_bp;
  const std::string tag = batching ? "batching" : "no-batching";

  auto redis = dnaserve::testing::RedisServer::Start();
  if (!redis) {
    f.error = "redis-server is not installed or did not start";
    return f;
  }
  // A key with room for every concurrent request.
  const std::string keys_file = settings.work_dir + "/gateway-keys-" + tag + ".json";
  const std::string key = IssueBenchKey(settings, keys_file, std::max(8, 2 * f.requests), &f.error);
  if (key.empty()) return f;

  dnaserve::testing::LaunchedWorker worker;
  worker.Start(BenchWorker(settings, Task::kPromoter, settings.models_dir, batching,
                           settings.work_dir + "/gateway-worker-" + tag + ".log"));
  dnaserve::testing::GatewayLaunch gateway_launch =
      BenchGateway(settings, keys_file, redis->url(), "promoter=" + worker.address(),
                   settings.work_dir + "/gateway-" + tag + ".log");
  gateway_launch.env = {{"DNASERVE_IP_RATE", "100000"}, {"DNASERVE_IP_BURST", "100000"}};
  dnaserve::testing::LaunchedGateway launched_gateway;
  launched_gateway.Start(std::move(gateway_launch));
  ChildProcess& gateway = launched_gateway.process();
  ChildProcess& worker_process = worker.process();
  const std::string base = launched_gateway.base_url();
  if (!worker.WaitUntilListening(std::chrono::seconds(60)) ||
      !launched_gateway.WaitUntilListening(std::chrono::seconds(30))) {
    f.error = "the worker or the gateway did not start; see " + settings.work_dir;
    return f;
  }
  const std::vector<std::string> headers = {"Authorization: Bearer " + key,
                                            "Content-Type: application/json"};
  const std::string body = "{\"sequence\": \"" + RandomBases(f.bases, 23) + "\"}";
  auto post = [&] {
    return dnaserve::testing::HttpRequest("POST", base + "/v1/tasks/promoter/predict", headers,
                                          body, 600);
  };
  // Until the gateway has the worker's models and the model is warm.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (true) {
    auto r = post();
    if (r.status == 200) break;
    if (Clock::now() > deadline) {
      f.error = "warm-up request never succeeded (last status " + std::to_string(r.status) +
                "); see " + settings.work_dir;
      return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (int i = 0; i < 2; ++i) post();  // a few more warm calls

  for (int round = 0; round < settings.gateway_rounds; ++round) {
    auto started = Clock::now();
    for (int i = 0; i < f.requests; ++i) {
      if (post().status != 200) ++f.failures;
    }
    f.sequential_all.push_back(SecondsSince(started));

    // All requests leave together: each thread waits at a start line.
    const AllAtOnce run = RunAllAtOnce(f.requests, [&] { return post().status == 200; });
    f.concurrent_all.push_back(run.wall_s);
    f.failures += run.failures;
  }
  f.sequential_s = Median(f.sequential_all);
  f.concurrent_s = Median(f.concurrent_all);
  gateway.Stop();
  worker_process.Stop();
  redis->Stop();
  std::fprintf(
      stderr, "[bench] gateway (%s): %d x %lld bp sequential %s, concurrent %s, ratio %.2f\n",
      tag.c_str(), f.requests, static_cast<long long>(f.bases),
      FormatSeconds(f.sequential_s).c_str(), FormatSeconds(f.concurrent_s).c_str(), f.ratio());
  return f;
}

}  // namespace dnaserve::bench
