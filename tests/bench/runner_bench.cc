#include "tests/bench/runner_bench.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "tests/bench/bare_forward.h"
#include "worker/batching/batching_model.h"
#include "worker/manifest/manifest.h"
#include "worker/models/host_memory.h"
#include "worker/models/torchscript_model.h"
#include "worker/service/worker_server.h"
#include "worker/tasks/task_runner.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::bench {
namespace {

using worker::FloatTensor;
using worker::IdTensor;
using worker::Model;
using worker::ModelManifest;

// Passes every call through and keeps a copy of its inputs.
class RecordingModel final : public Model {
 public:
  explicit RecordingModel(std::shared_ptr<Model> inner) : inner_(std::move(inner)) {}
  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(inputs);
    }
    return inner_->Forward(inputs);
  }
  const std::vector<CallInputs>& calls() const { return calls_; }

 private:
  std::shared_ptr<Model> inner_;
  std::mutex mu_;
  std::vector<CallInputs> calls_;
};

// Passes every call through and adds up the time spent inside it.
class TimingModel final : public Model {
 public:
  explicit TimingModel(std::shared_ptr<Model> inner) : inner_(std::move(inner)) {}
  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    const auto started = std::chrono::steady_clock::now();
    auto out = inner_->Forward(inputs);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::lock_guard<std::mutex> lock(mu_);
    seconds_ += seconds;
    return out;
  }
  // Seconds inside Forward since the last call.
  double Take() {
    std::lock_guard<std::mutex> lock(mu_);
    double s = seconds_;
    seconds_ = 0;
    return s;
  }

 private:
  std::shared_ptr<Model> inner_;
  std::mutex mu_;
  double seconds_ = 0;
};

// The model stack the worker serves (worker/service/worker_server.cc): TorchScript behind the
// dynamic-batching queue with the worker's default settings.
std::shared_ptr<Model> ServedStack(std::shared_ptr<Model> direct, const ModelManifest& manifest,
                                   int executors) {
  const worker::BatchingConfig defaults;
  if (!defaults.enabled) return direct;
  worker::BatchingOptions options;
  options.model_id = manifest.id;
  options.bases_per_row = manifest.context_window_bp;
  options.max_batch_bases = defaults.max_batch_bases;
  options.max_queue_bases = defaults.max_queue_bases;
  options.max_wait = std::chrono::microseconds(defaults.max_wait_us);
  // As the worker resolves 0: one pass at a time per group of intra-op threads.
  options.max_passes =
      executors > 0 ? executors
      : defaults.executors > 0
          ? defaults.executors
          : std::max(1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) /
                            std::max(1, worker::TorchThreads()));
  return std::make_shared<worker::BatchingModel>(std::move(direct), std::move(options));
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StatusOr<double> TimeRunner(Model& model, const ModelManifest& manifest,
                            const worker::Tokenizer& tokenizer,
                            const worker::v1::PredictRequest& request,
                            worker::v1::PredictResult* result = nullptr) {
  const auto started = std::chrono::steady_clock::now();
  auto out = worker::RunPrediction(model, manifest, tokenizer, request, {});
  const double seconds = SecondsSince(started);
  if (!out.ok()) return out.status();
  if (result) *result = std::move(out).value();
  return seconds;
}

}  // namespace

// Declared in runner_bench.h: the large-model suite writes its windows for the Python peers too.
bool DumpCalls(const std::string& prefix, const std::string& model_path, int threads, int reps,
               const std::vector<CallInputs>& calls) {
  std::ofstream bin(prefix + ".bin", std::ios::binary | std::ios::trunc);
  std::ostringstream json;
  json << "{\"model\": \"" << model_path << "\", \"threads\": " << threads << ", \"reps\": " << reps
       << ", \"calls\": [";
  int64_t offset = 0;
  for (size_t c = 0; c < calls.size(); ++c) {
    json << (c ? ", " : "") << "[";
    for (size_t i = 0; i < calls[c].size(); ++i) {
      const IdTensor& t = calls[c][i];
      bin.write(reinterpret_cast<const char*>(t.data.data()),
                static_cast<std::streamsize>(t.data.size() * sizeof(int64_t)));
      json << (i ? ", " : "") << "{\"offset\": " << offset << ", \"shape\": [";
      for (size_t d = 0; d < t.shape.size(); ++d) json << (d ? ", " : "") << t.shape[d];
      json << "]}";
      offset += static_cast<int64_t>(t.data.size());
    }
    json << "]";
  }
  json << "]}\n";
  std::ofstream(prefix + ".json", std::ios::trunc) << json.str();
  return static_cast<bool>(bin);
}

namespace {

// Runs tests/bench/python_peer.py; fills figures.python_s or figures.python_error.
void RunPythonPeer(const BenchSettings& settings, const std::string& prefix,
                   RunnerFigures* figures) {
  // The peer's malloc gets the worker's thresholds and arena count (worker/models/host_memory.h)
  // through glibc's environment variables, so that both sides reuse their freed activations and
  // the comparison is LibTorch's C++ against its Python; with glibc's defaults the peer
  // re-faulted them on every call (Python / C++ 0.26-0.43 instead of 0.84-0.94 for
  // chromatin-human at 100 kb).
  const std::string command =
      "MALLOC_MMAP_THRESHOLD_=" + std::to_string(worker::kForwardMmapThresholdBytes) +
      " MALLOC_TRIM_THRESHOLD_=" + std::to_string(worker::kForwardTrimThresholdBytes) +
      " MALLOC_ARENA_MAX=" + std::to_string(worker::kForwardMaxArenas) + " " +
      settings.python + " " + settings.source_dir + "/tests/bench/python_peer.py --index " +
      prefix + ".json --data " + prefix + ".bin 2>" + prefix + ".python.log";
  rapidjson::Document doc;
  if (!RunJsonPeer(command, &doc)) {
    figures->python_error = "python peer failed; see " + prefix + ".python.log";
    return;
  }
  figures->python_s = doc["median_s"].GetDouble();
}

Status MeasurePackage(const BenchSettings& settings, const ModelManifest& manifest,
                      std::vector<RunnerFigures>* out) {
  auto tokenizer_or = worker::LoadTokenizer(manifest);
  if (!tokenizer_or.ok()) return tokenizer_or.status();
  const worker::Tokenizer& tokenizer = **tokenizer_or;
  auto direct_or = worker::LoadTorchScriptModel(manifest.WeightsPath());
  if (!direct_or.ok()) return direct_or.status();
  auto timed = std::make_shared<TimingModel>(std::move(direct_or).value());
  std::shared_ptr<Model> direct = timed;
  std::shared_ptr<Model> served = ServedStack(direct, manifest, settings.served_executors);
  double load_s = 0;
  auto bare_or = BareForward::Load(manifest.WeightsPath(), &load_s);
  if (!bare_or.ok()) return bare_or.status();
  BareForward& bare = **bare_or;

  std::vector<int64_t> lengths = settings.lengths;
  if (manifest.task == Task::kExpression) lengths = {kExpressionWindowBp};
  for (int64_t length : lengths) {
    RunnerFigures f;
    f.model_id = manifest.id;
    f.task = manifest.task;
    f.tokenizer = worker::TokenizerLabel(manifest.tokenizer);
    f.bases = ScoredBases(manifest.task, length);
    f.load_s = load_s;
    const auto request = BenchRequest(manifest.task, length);

    RecordingModel recorder(direct);
    worker::v1::PredictResult result;
    auto recorded = TimeRunner(recorder, manifest, tokenizer, request, &result);
    if (!recorded.ok()) return recorded.status();
    f.forward_calls = static_cast<int>(recorder.calls().size());
    f.windows = result.windows_processed();
    bare.Prepare(recorder.calls());

    const int reps = length <= 10000 ? settings.reps : std::max(2, settings.reps / 2);
    // Warm-up: first calls allocate, JIT-profile and fill caches.
    if (auto w = TimeRunner(*served, manifest, tokenizer, request); !w.ok()) return w.status();
    if (auto w = bare.RunAll(); !w.ok()) return w.status();
    std::vector<double> served_model, direct_model;
    for (int r = 0; r < reps; ++r) {
      timed->Take();
      auto s = TimeRunner(*served, manifest, tokenizer, request);
      if (!s.ok()) return s.status();
      served_model.push_back(timed->Take());
      auto b = bare.RunAll();
      if (!b.ok()) return b.status();
      auto d = TimeRunner(*direct, manifest, tokenizer, request);
      if (!d.ok()) return d.status();
      direct_model.push_back(timed->Take());
      f.served_all.push_back(*s);
      f.bare_all.push_back(*b);
      f.direct_all.push_back(*d);
    }
    f.served_s = Median(f.served_all);
    f.direct_s = Median(f.direct_all);
    f.bare_s = Median(f.bare_all);
    f.served_model_s = Median(served_model);
    f.direct_model_s = Median(direct_model);

    if (settings.python_peer) {
      const std::string prefix =
          settings.work_dir + "/windows-" + manifest.id + "-" + std::to_string(f.bases);
      if (DumpCalls(prefix, manifest.WeightsPath(), settings.threads, reps, recorder.calls())) {
        RunPythonPeer(settings, prefix, &f);
      } else {
        f.python_error = "cannot write " + prefix + ".bin";
      }
    }
    std::fprintf(stderr, "[bench] %s %lld bp: served %s, direct %s, bare %s, python %s\n",
                 manifest.id.c_str(), static_cast<long long>(f.bases),
                 FormatSeconds(f.served_s).c_str(), FormatSeconds(f.direct_s).c_str(),
                 FormatSeconds(f.bare_s).c_str(),
                 f.python_s > 0 ? FormatSeconds(f.python_s).c_str() : f.python_error.c_str());
    out->push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace

std::vector<RunnerFigures> RunRunnerBench(const BenchSettings& settings,
                                          std::vector<std::string>* errors) {
  worker::SetTorchThreads(settings.threads);
  std::vector<RunnerFigures> figures;
  std::vector<std::string> dirs = {settings.models_dir};
  dirs.insert(dirs.end(), settings.extra_dirs.begin(), settings.extra_dirs.end());
  for (const std::string& models_dir : dirs) {
    for (const ModelManifest& manifest : PackagesToMeasure(models_dir, settings.defaults_only)) {
      Status status = MeasurePackage(settings, manifest, &figures);
      if (!status.ok()) errors->push_back(manifest.package_dir + ": " + status.message());
    }
  }
  return figures;
}

}  // namespace dnaserve::bench
