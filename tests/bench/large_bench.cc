#include "tests/bench/large_bench.h"

#include <grpcpp/grpcpp.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/bench/bare_forward.h"
#include "tests/bench/matmul_limit.h"
#include "tests/bench/runner_bench.h"
#include "tests/bench/service_bench.h"
#include "worker/batching/fixed_rows_model.h"
#include "worker/models/host_memory.h"
#include "worker/models/torchscript_model.h"
#include "worker/service/worker_server.h"
#include "worker/tasks/task_runner.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::bench {
namespace {

namespace v1 = worker::v1;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Fixed(double v, int digits = 2) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// What make_bert_package.py --shape base/large writes beside the manifest.
struct Architecture {
  EncoderShape shape;
  std::string name;        // "base", "large"
  std::string checkpoint;  // the Hugging Face checkpoint the package was exported from
  int64_t max_positions = 0;
  int64_t template_tokens = 0;
  std::vector<int64_t> lengths;
  bool full_suite = false;  // precision and concurrency rows too
  std::string dtype = "fp32";  // "bf16": a whole-bf16 export (the eager peer builds one too)
};

bool ReadArchitecture(const std::string& package_dir, Architecture* a) {
  std::ifstream in(package_dir + "/bench-architecture.json");
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) return false;
  auto get_int = [&](const char* name) -> int64_t {
    return doc.HasMember(name) && doc[name].IsInt64() ? doc[name].GetInt64() : 0;
  };
  a->shape.layers = get_int("layers");
  a->shape.hidden = get_int("hidden");
  a->shape.heads = get_int("heads");
  a->shape.intermediate = get_int("intermediate");
  a->max_positions = get_int("max_positions");
  a->template_tokens = get_int("template_tokens");
  if (doc.HasMember("shape") && doc["shape"].IsString()) a->name = doc["shape"].GetString();
  if (doc.HasMember("checkpoint") && doc["checkpoint"].IsString()) {
    a->checkpoint = doc["checkpoint"].GetString();
  }
  if (doc.HasMember("bench_lengths") && doc["bench_lengths"].IsArray()) {
    for (const auto& v : doc["bench_lengths"].GetArray()) {
      if (v.IsInt64()) a->lengths.push_back(v.GetInt64());
    }
  }
  if (a->lengths.empty()) a->lengths = {10000};
  if (doc.HasMember("dtype") && doc["dtype"].IsString()) a->dtype = doc["dtype"].GetString();
  a->full_suite = doc.HasMember("full_suite") && doc["full_suite"].IsBool() &&
                  doc["full_suite"].GetBool();
  return a->shape.layers > 0 && a->shape.hidden > 0 && a->max_positions > a->template_tokens;
}

// Keeps every forward call's inputs and answers with constant promoter probabilities: the
// windows depend only on the sequence and the tokenizer, so recording needs no real forward
// (which costs minutes at 100 kb for these models).
class StubRecorder final : public worker::Model {
 public:
  StatusOr<std::vector<worker::FloatTensor>> Forward(
      const std::vector<worker::IdTensor>& inputs) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(inputs);
    worker::FloatTensor out;
    const int64_t rows = inputs.empty() || inputs[0].shape.empty() ? 0 : inputs[0].shape[0];
    out.shape = {rows};
    out.data.assign(static_cast<size_t>(rows), 0.5f);
    return std::vector<worker::FloatTensor>{std::move(out)};
  }
  const std::vector<CallInputs>& calls() const { return calls_; }

 private:
  std::mutex mu_;
  std::vector<CallInputs> calls_;
};

// The first window of a call: a warm-up that costs one window, not a whole request.
CallInputs FirstRow(const CallInputs& call) {
  CallInputs out;
  for (const worker::IdTensor& t : call) {
    worker::IdTensor row;
    row.shape = t.shape;
    row.shape[0] = std::min<int64_t>(1, row.shape[0]);
    int64_t per_row = 1;
    for (size_t d = 1; d < t.shape.size(); ++d) per_row *= t.shape[d];
    row.data.assign(t.data.begin(), t.data.begin() + row.shape[0] * per_row);
    out.push_back(std::move(row));
  }
  return out;
}

struct Row {
  int64_t bases = 0;
  int64_t windows = 0;
  int calls = 0;
  int64_t tokens = 0;  // the longest window's tokens, as the encoder sees it ([CLS]/[SEP] in)
  double flops = 0;    // encoder matmul FLOPs of one request
  std::vector<double> bare_all, worker_all;
  double py_script_s = -1, py_eager_s = -1;
  std::string py_error;
  double bare_s() const { return Median(bare_all); }
  double worker_s() const { return Median(worker_all); }
};

struct PrecisionRow {
  std::string precision;
  std::string worker_status;  // "ok" or why there is no worker figure
  double worker_s = -1;
  double worker_drift = -1;   // max |score - fp32 score| over the request's windows
  double eager_s = -1;
  double eager_drift = -1;    // max |output - fp32 eager output| over every call
  bool eager_nan = false;     // the eager module's outputs held NaN (left out of the drift)
  std::string eager_error;
};

struct ConcurrencyRow {
  std::string setting;
  double wall_s = 0;
  int failures = 0;
  std::string error;
};

struct PackageFigures {
  std::string model_id;
  Architecture arch;
  MatmulLimit limit;
  std::string limit_error;
  double startup_s = 0, cold_request_s = 0;
  int64_t cold_load_ms = -1;
  ProcessMemory memory;
  std::vector<Row> rows;
  int64_t rows_per_pass = 0;  // the worker's passes for this package (RowsPerPassFor)
  double eager_fp32_s = -1;  // the first row's eager time, the precision rows' reference
  std::vector<PrecisionRow> precision;
  double one_thread_bare_s = -1;  // first row's request, bare forward at one intra-op thread
  std::vector<ConcurrencyRow> concurrency;
  std::string error;
};

struct GrpcOutcome {
  grpc::Status status;
  v1::PredictResult result;
  double seconds = 0;
};

GrpcOutcome Predict(v1::Worker::Stub& stub, const v1::PredictRequest& request) {
  GrpcOutcome outcome;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(30));
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

std::unique_ptr<v1::Worker::Stub> StubFor(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return v1::Worker::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

std::vector<double> WindowScores(const v1::PredictResult& result) {
  std::vector<double> scores;
  for (const auto& w : result.promoter().windows()) scores.push_back(w.score());
  return scores;
}

// -1 when the lists differ in length; NaN when a score is NaN.
double MaxDifference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return -1;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::nan("");
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs a Python peer command (stdout: one JSON object); fills *seconds and *drift, or returns
// the error.
std::string RunPeer(const std::string& command, const std::string& log, double* seconds,
                    double* drift, bool* nan_outputs = nullptr) {
  rapidjson::Document doc;
  if (!RunJsonPeer(command + " 2>" + log, &doc)) {
    return "Python peer failed; see " + log;
  }
  *seconds = doc["median_s"].GetDouble();
  if (drift && doc.HasMember("max_abs_diff") && doc["max_abs_diff"].IsNumber()) {
    *drift = doc["max_abs_diff"].GetDouble();
  }
  if (nan_outputs && doc.HasMember("nan_outputs") && doc["nan_outputs"].IsBool()) {
    *nan_outputs = doc["nan_outputs"].GetBool();
  }
  return "";
}

std::string PeerCommand(const BenchSettings& s, const std::string& prefix,
                        const std::string& mode, const std::string& checkpoint,
                        const std::string& dtype) {
  // The worker's malloc thresholds, as python_peer.py gets them (runner_bench.cc says why).
  std::string command =
      "MALLOC_MMAP_THRESHOLD_=" + std::to_string(worker::kForwardMmapThresholdBytes) +
      " MALLOC_TRIM_THRESHOLD_=" + std::to_string(worker::kForwardTrimThresholdBytes) +
      " MALLOC_ARENA_MAX=" + std::to_string(worker::kForwardMaxArenas) + " " + s.python + " " +
      s.source_dir + "/tests/bench/python_large_peer.py --index " + prefix + ".json --data " +
      prefix + ".bin --mode " + mode + " --dtype " + dtype;
  if (mode == "eager") command += " --checkpoint " + checkpoint;
  return command;
}

// A copy of the package whose manifest adds "precision": <precision> (the weights and tokenizer
// linked, not copied); returns its models dir.
std::string PrecisionPackage(const BenchSettings& s, const worker::ModelManifest& manifest,
                             const std::string& precision) {
  const std::string models_dir = s.work_dir + "/precision-" + precision;
  const std::string dir = models_dir + "/" + manifest.id;
  fs::remove_all(models_dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(manifest.package_dir)) {
    const std::string name = entry.path().filename().string();
    if (name != "manifest.json") fs::create_symlink(entry.path(), dir + "/" + name);
  }
  rapidjson::Document doc;
  const std::string text = ReadFile(manifest.package_dir + "/manifest.json");
  doc.Parse(text.c_str());
  std::string out = text;
  // Insert the key after the opening brace: the rest stays byte for byte as exported.
  const size_t brace = out.find('{');
  if (brace != std::string::npos) {
    out.insert(brace + 1, "\n  \"precision\": \"" + precision + "\",");
  }
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << out;
  return models_dir;
}

const char kNotSupported[] = "not supported by this worker build";

PrecisionRow MeasurePrecision(const BenchSettings& s, const worker::ModelManifest& manifest,
                              const std::string& precision, int64_t length,
                              const std::vector<double>& fp32_scores) {
  PrecisionRow row;
  row.precision = precision;
  const std::string models_dir = PrecisionPackage(s, manifest, precision);
  const std::string log = s.work_dir + "/worker-" + manifest.id + "-" + precision + ".log";
  dnaserve::testing::LaunchedWorker worker;
  auto refused = [&](const std::string& why) {
    // A worker without the manifest key rejects it as an unknown field.
    const std::string text = why + " " + ReadFile(log);
    row.worker_status = text.find("precision") != std::string::npos
                            ? std::string(kNotSupported) + " (the manifest key is refused)"
                            : why;
  };
  if (!worker.Start(BenchWorker(s, Task::kPromoter, models_dir, true, log)) ||
      !worker.WaitUntilListening(std::chrono::minutes(5))) {
    refused("the worker did not start; see " + log);
    return row;
  }
  auto stub = StubFor(worker.address());
  v1::PredictRequest request = BenchRequest(Task::kPromoter, length);
  request.set_model(manifest.id);
  GrpcOutcome first = Predict(*stub, request);
  if (!first.status.ok()) {
    refused("Predict failed: " + first.status.error_message());
    worker.process().Stop();
    return row;
  }
  std::vector<double> times;
  for (int r = 0; r < s.reps; ++r) {
    GrpcOutcome o = Predict(*stub, request);
    if (!o.status.ok()) {
      row.worker_status = "Predict failed: " + o.status.error_message();
      worker.process().Stop();
      return row;
    }
    times.push_back(o.seconds);
  }
  worker.process().Stop();
  row.worker_s = Median(times);
  row.worker_drift = MaxDifference(WindowScores(first.result), fp32_scores);
  row.worker_status = std::isnan(row.worker_drift) ? "ok, but NaN scores"
                      : row.worker_drift == 0
                          ? "ok, but the scores equal fp32's exactly: was the key applied?"
                          : "ok";
  return row;
}

// N Predict calls released together over one channel; the wall time until the last answers.
ConcurrencyRow MeasureConcurrency(const BenchSettings& s, const LargeSettings& large,
                                  const worker::ModelManifest& manifest, int64_t length,
                                  const std::string& setting) {
  ConcurrencyRow row;
  row.setting = setting;
  BenchSettings local = s;
  bool batching = true;
  std::string spec = setting;
  if (spec.rfind("nb", 0) == 0) {
    batching = false;
    spec = spec.substr(2) + "x0";
  }
  const size_t x = spec.find('x');
  local.threads = std::max(1, std::atoi(spec.substr(0, x).c_str()));
  const int executors = x == std::string::npos ? 0 : std::atoi(spec.substr(x + 1).c_str());
  local.worker_args.clear();
  if (executors > 0 && batching) {
    local.worker_args = {"--batch-executors", std::to_string(executors)};
  }
  const std::string log = s.work_dir + "/worker-" + manifest.id + "-concurrent-" + setting + ".log";
  dnaserve::testing::LaunchedWorker worker;
  if (!worker.Start(BenchWorker(local, Task::kPromoter, manifest.package_dir + "/..", batching,
                                log)) ||
      !worker.WaitUntilListening(std::chrono::minutes(5))) {
    row.error = "the worker did not start; see " + log;
    return row;
  }
  auto stub = StubFor(worker.address());
  v1::PredictRequest request = BenchRequest(Task::kPromoter, length);
  request.set_model(manifest.id);
  if (!Predict(*stub, request).status.ok()) {  // load the model and warm it
    row.error = "warm-up Predict failed; see " + log;
    worker.process().Stop();
    return row;
  }
  const AllAtOnce run =
      RunAllAtOnce(large.concurrent, [&] { return Predict(*stub, request).status.ok(); });
  row.wall_s = run.wall_s;
  row.failures = run.failures;
  worker.process().Stop();
  return row;
}

Status MeasurePackage(const BenchSettings& s, const LargeSettings& large,
                      const worker::ModelManifest& manifest, const Architecture& arch,
                      PackageFigures* f) {
  f->model_id = manifest.id;
  f->arch = arch;
  auto tokenizer_or = worker::LoadTokenizer(manifest);
  if (!tokenizer_or.ok()) return tokenizer_or.status();
  const worker::Tokenizer& tokenizer = **tokenizer_or;
  const int64_t max_tokens = arch.max_positions - arch.template_tokens;

  // 1. Record each length's windows (no forward pass needed) and count their FLOPs.
  std::vector<std::vector<CallInputs>> recorded;
  // The bare forward replays the passes the worker's model runs: the task's calls cut (and
  // filled) into the package's rows per pass. FLOPs count the task's own windows, filler not.
  const int64_t rows_per_pass =
      worker::RowsPerPassFor(manifest, worker::BatchingConfig::kRowsPerPassByTask);
  f->rows_per_pass = rows_per_pass;
  for (int64_t length : arch.lengths) {
    StubRecorder windows;
    auto result = worker::RunPrediction(windows, manifest, tokenizer,
                                        BenchRequest(Task::kPromoter, length), {});
    if (!result.ok()) return result.status();
    auto recorder = std::make_shared<StubRecorder>();
    if (rows_per_pass > 0) {
      worker::FixedRowsModel passes(recorder, rows_per_pass);
      for (const CallInputs& call : windows.calls()) {
        if (auto r = passes.Forward(call); !r.ok()) return r.status();
      }
    } else {
      for (const CallInputs& call : windows.calls()) (void)recorder->Forward(call);
    }
    Row row;
    row.bases = ScoredBases(Task::kPromoter, length);
    row.windows = result->windows_processed();
    row.calls = static_cast<int>(recorder->calls().size());
    for (const CallInputs& call : windows.calls()) {
      const auto& shape = call.at(0).shape;
      const int64_t tokens = std::min(shape.at(1), max_tokens) + arch.template_tokens;
      row.tokens = std::max(row.tokens, tokens);
      row.flops += static_cast<double>(shape.at(0)) * EncoderFlops(arch.shape, tokens);
    }
    f->rows.push_back(row);
    recorded.push_back(recorder->calls());
  }

  // 2. The limit: this encoder's products at the window's token count, the worker's threads.
  auto limit = MeasureMatmulLimit(arch.shape, f->rows.at(0).tokens, s.threads, large.matmul_seconds);
  if (limit.ok()) {
    f->limit = *limit;
  } else {
    f->limit_error = limit.status().message();
  }
  std::fprintf(stderr, "[bench] %s: matmul limit fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n",
               manifest.id.c_str(), f->limit.fp32_gflops, f->limit.bf16_gflops);

  // 3. Bare forward and a fresh worker, interleaved per repetition.
  double load_s = 0;
  auto bare_or = BareForward::Load(manifest.WeightsPath(), &load_s);
  if (!bare_or.ok()) return bare_or.status();
  BareForward& bare = **bare_or;
  bare.Prepare({FirstRow(recorded.at(0).at(0))});  // warm-up: the profiling executor's runs
  for (int i = 0; i < 2; ++i) {
    if (auto w = bare.RunAll(); !w.ok()) return w.status();
  }
  const std::string log = s.work_dir + "/worker-" + manifest.id + ".log";
  dnaserve::testing::LaunchedWorker worker;
  const auto spawned = Clock::now();
  if (!worker.Start(BenchWorker(s, Task::kPromoter, manifest.package_dir + "/..", true, log)) ||
      !worker.WaitUntilListening(std::chrono::minutes(5))) {
    return Internal("the worker did not start; see " + log);
  }
  f->startup_s = SecondsSince(spawned);
  auto stub = StubFor(worker.address());
  std::vector<double> fp32_scores;
  for (size_t i = 0; i < f->rows.size(); ++i) {
    Row& row = f->rows[i];
    v1::PredictRequest request = BenchRequest(Task::kPromoter, arch.lengths[i]);
    request.set_model(manifest.id);
    if (i == 0) {  // the cold request loads the model; it is also the worker's warm-up
      GrpcOutcome cold = Predict(*stub, request);
      if (!cold.status.ok()) return Internal("Predict failed: " + cold.status.error_message());
      f->cold_load_ms = cold.result.model_load_time_ms();
      f->cold_request_s = cold.seconds;
      fp32_scores = WindowScores(cold.result);
    }
    bare.Prepare(recorded[i]);
    const int reps = arch.lengths[i] <= 10000 ? s.reps : large.long_reps;
    for (int r = 0; r < reps; ++r) {
      GrpcOutcome o = Predict(*stub, request);
      if (!o.status.ok()) return Internal("Predict failed: " + o.status.error_message());
      row.worker_all.push_back(o.seconds);
      auto b = bare.RunAll();
      if (!b.ok()) return b.status();
      row.bare_all.push_back(*b);
    }
    std::fprintf(stderr, "[bench] %s %lld bp: bare %s, worker %s\n", manifest.id.c_str(),
                 static_cast<long long>(row.bases), FormatSeconds(row.bare_s()).c_str(),
                 FormatSeconds(row.worker_s()).c_str());
  }
  f->memory = ReadProcessMemory(worker.process().pid());
  worker.process().Stop();

  // 4. The Python peers over the same windows.
  for (size_t i = 0; i < f->rows.size(); ++i) {
    Row& row = f->rows[i];
    const int reps = arch.lengths[i] <= 10000 ? s.reps : large.long_reps;
    const std::string prefix =
        s.work_dir + "/large-windows-" + manifest.id + "-" + std::to_string(row.bases);
    if (!DumpCalls(prefix, manifest.WeightsPath(), s.threads, reps, recorded[i])) {
      row.py_error = "cannot write " + prefix + ".bin";
      continue;
    }
    std::string e1 = RunPeer(PeerCommand(s, prefix, "script", arch.checkpoint, arch.dtype),
                             prefix + ".script.log", &row.py_script_s, nullptr);
    std::string e2 = RunPeer(PeerCommand(s, prefix, "eager", arch.checkpoint, arch.dtype),
                             prefix + ".eager.log", &row.py_eager_s, nullptr);
    row.py_error = e1.empty() ? e2 : e1;
    std::fprintf(stderr, "[bench] %s %lld bp: python script %s, eager %s %s\n",
                 manifest.id.c_str(), static_cast<long long>(row.bases),
                 FormatSeconds(row.py_script_s).c_str(), FormatSeconds(row.py_eager_s).c_str(),
                 row.py_error.c_str());
  }
  if (!arch.full_suite) return Status::Ok();

  // 5. Reduced precision at the first length: the worker (manifest key) and the eager module.
  f->eager_fp32_s = f->rows[0].py_eager_s;
  const std::string prefix0 =
      s.work_dir + "/large-windows-" + manifest.id + "-" + std::to_string(f->rows[0].bases);
  for (const std::string& precision : large.precisions) {
    PrecisionRow row = MeasurePrecision(s, manifest, precision, arch.lengths[0], fp32_scores);
    row.eager_error = RunPeer(PeerCommand(s, prefix0, "eager", arch.checkpoint, precision),
                              prefix0 + "." + precision + ".log", &row.eager_s, &row.eager_drift,
                              &row.eager_nan);
    std::fprintf(stderr, "[bench] %s %s: worker %s (%s), eager %s drift %.2e\n",
                 manifest.id.c_str(), precision.c_str(), FormatSeconds(row.worker_s).c_str(),
                 row.worker_status.c_str(), FormatSeconds(row.eager_s).c_str(), row.eager_drift);
    f->precision.push_back(std::move(row));
  }

  // 6. Concurrency: the one-thread bare forward first (the machine's cores' worth), then each
  // worker setting under N concurrent requests.
  worker::SetTorchThreads(1);
  bare.Prepare(recorded[0]);
  std::vector<double> one;
  for (int r = 0; r < std::max(1, s.reps); ++r) {
    auto b = bare.RunAll();
    if (b.ok()) one.push_back(*b);
  }
  worker::SetTorchThreads(s.threads);
  f->one_thread_bare_s = Median(one);
  for (const std::string& setting : large.concurrency_settings) {
    ConcurrencyRow row = MeasureConcurrency(s, large, manifest, arch.lengths[0], setting);
    std::fprintf(stderr, "[bench] %s concurrent %s: %s %s\n", manifest.id.c_str(),
                 setting.c_str(), FormatSeconds(row.wall_s).c_str(), row.error.c_str());
    f->concurrency.push_back(std::move(row));
  }
  return Status::Ok();
}

std::string SettingLabel(const std::string& setting) {
  if (setting.rfind("nb", 0) == 0) return "--no-batching --threads " + setting.substr(2);
  const size_t x = setting.find('x');
  const std::string threads = setting.substr(0, x);
  const std::string executors = x == std::string::npos ? "0" : setting.substr(x + 1);
  return "--threads " + threads + " --batch-executors " + executors +
         (executors == "0" ? " (CPUs / threads)" : "");
}

std::string Markdown(const BenchSettings& s, const LargeSettings& large,
                     const std::vector<PackageFigures>& packages) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::ostringstream md;
  md << "### Large models: production-size BERT packages (random weights, untrained)\n\n"
     << "LibTorch intra-op threads " << s.threads << " (worker, bare C++, Python); " << s.reps
     << " timed repetitions at 10 kb, " << large.long_reps << " above (medians). GFLOP = the "
        "encoder's matrix-product FLOPs counted from the architecture "
        "(tests/bench/matmul_limit.h: per layer and window of L tokens 8Lh^2 + 4Lhf + 4L^2h).\n\n";
  md << "#### The matmul limit (one encoder layer's products, LibTorch, " << s.threads
     << " threads)\n\n| model | product | dims | per layer | fp32 GFLOP/s | bf16 GFLOP/s |\n"
        "|---|---|---|---:|---:|---:|\n";
  for (const auto& p : packages) {
    if (!p.limit_error.empty()) {
      md << "| " << p.model_id << " | error: " << p.limit_error << " |\n";
      continue;
    }
    for (const auto& m : p.limit.products) {
      md << "| " << p.model_id << " | " << m.name << " | " << m.dims << " | " << m.per_layer
         << " | " << Fixed(m.fp32_gflops, 1) << " | "
         << (m.bf16_gflops > 0 ? Fixed(m.bf16_gflops, 1) : "error: " + m.error) << " |\n";
    }
    md << "| " << p.model_id << " | **layer limit** | L = " << p.limit.tokens << " | | **"
       << Fixed(p.limit.fp32_gflops, 1) << "** | **" << Fixed(p.limit.bf16_gflops, 1)
       << "** |\n";
  }
  md << "\nlayer limit = the layer's FLOPs / the sum over its products of FLOPs / measured rate.\n\n";

  md << "#### Forward passes: worker over gRPC, bare C++, Python\n\n"
     << "| model | bp | windows | tokens/window | GFLOP/request | bare C++ | GFLOP/s | of fp32 "
        "limit | worker (gRPC) | bare / worker | Python TorchScript | C++ / Py TS | Python eager "
        "| C++ / eager |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& p : packages) {
    if (!p.error.empty()) {
      md << "| " << p.model_id << " | error: " << p.error << " |\n";
      continue;
    }
    for (const auto& r : p.rows) {
      const double bare = r.bare_s(), work = r.worker_s();
      const double gflops = bare > 0 ? r.flops / bare / 1e9 : 0;
      md << "| " << p.model_id << " | " << r.bases << " | " << r.windows << " | " << r.tokens
         << " | " << Fixed(r.flops / 1e9, 0) << " | " << FormatSeconds(bare) << " | "
         << Fixed(gflops, 1) << " | "
         << (p.limit.fp32_gflops > 0 ? Fixed(100 * gflops / p.limit.fp32_gflops, 0) + "%" : "n/a")
         << " | " << FormatSeconds(work) << " | **" << Fixed(PairedRatio(r.bare_all, r.worker_all))
         << "** | " << (r.py_script_s > 0 ? FormatSeconds(r.py_script_s) : "n/a") << " | "
         << (r.py_script_s > 0 ? Fixed(r.py_script_s / bare) : "n/a") << " | "
         << (r.py_eager_s > 0 ? FormatSeconds(r.py_eager_s) : "n/a") << " | "
         << (r.py_eager_s > 0 ? Fixed(r.py_eager_s / bare) : "n/a") << " |\n";
    }
  }
  md << "\nbare / worker = bare C++ time / worker wall time per request, median of pairs measured "
        "back to back (>= 0.95 asked). C++ / Py = Python time / C++ bare time (> 1: C++ "
        "faster). Every runtime replays the same forward passes: the task's windows in the "
        "worker's passes of R rows (";
  for (size_t i = 0; i < packages.size(); ++i) {
    md << (i ? ", " : "") << packages[i].model_id << ": R = " << packages[i].rows_per_pass;
  }
  md << ").\n\n";

  md << "#### Worker processes\n\n| model | parameters (encoder shape) | startup | cold load "
        "(reported) | first request (10 kb) | peak RSS (VmHWM) |\n|---|---|---:|---:|---:|---:|\n";
  for (const auto& p : packages) {
    md << "| " << p.model_id << " | " << p.arch.shape.layers << " x " << p.arch.shape.hidden
       << ", " << p.arch.shape.heads << " heads, " << p.arch.shape.intermediate << " | "
       << FormatSeconds(p.startup_s) << " | " << p.cold_load_ms << " ms | "
       << FormatSeconds(p.cold_request_s) << " | " << Fixed(p.memory.hwm_kib / 1024.0, 0)
       << " MiB |\n";
  }
  md << "\n";

  for (const auto& p : packages) {
    if (p.precision.empty() && p.concurrency.empty()) continue;
    const Row& r0 = p.rows.at(0);
    md << "#### Reduced precision (" << p.model_id << ", " << r0.bases << " bp)\n\n"
       << "| precision | worker (manifest key) | worker time | worker drift (max abs, window "
          "scores) | Python eager | eager fp32 / this | eager drift (max abs) |\n"
          "|---|---|---:|---:|---:|---:|---:|\n";
    for (const auto& q : p.precision) {
      md << "| " << q.precision << " | " << q.worker_status << " | "
         << (q.worker_s > 0 ? FormatSeconds(q.worker_s) : "n/a") << " | "
         << (std::isnan(q.worker_drift) ? "NaN"
             : q.worker_drift >= 0     ? Fixed(q.worker_drift, 5)
                                       : std::string("n/a"))
         << " | "
         << (q.eager_s > 0 ? FormatSeconds(q.eager_s) : "error: " + q.eager_error) << " | "
         << (q.eager_s > 0 && p.eager_fp32_s > 0 ? Fixed(p.eager_fp32_s / q.eager_s) : "n/a")
         << " | "
         << (q.eager_nan ? "NaN outputs"
                         : q.eager_drift >= 0 ? Fixed(q.eager_drift, 5) : std::string("n/a"))
         << " |\n";
    }
    md << "\nbf16 limit / fp32 limit (matmul, above): "
       << (p.limit.fp32_gflops > 0 ? Fixed(p.limit.bf16_gflops / p.limit.fp32_gflops) : "n/a")
       << ". Drift of the eager module: the promoter probability (softmax output) against the "
          "fp32 eager module's, over every window; random weights, so a figure for the "
          "arithmetic, not for a trained model's scores.\n\n";
    const double one_bps = p.one_thread_bare_s > 0 ? r0.bases / p.one_thread_bare_s : 0;
    md << "#### " << large.concurrent << " concurrent requests of " << r0.bases << " bp ("
       << p.model_id << ")\n\nOne-thread bare forward: " << FormatSeconds(p.one_thread_bare_s)
       << " per request = " << FormatBpPerSecond(one_bps) << "; " << cores << " cores' worth: "
       << FormatBpPerSecond(cores * one_bps) << ".\n\n"
       << "| worker setting | wall time | aggregate bp/s | / (cores x one-thread bare bp/s) | "
          "failures |\n|---|---:|---:|---:|---:|\n";
    for (const auto& c : p.concurrency) {
      if (!c.error.empty()) {
        md << "| " << SettingLabel(c.setting) << " | error: " << c.error << " |\n";
        continue;
      }
      const double bps = large.concurrent * r0.bases / c.wall_s;
      md << "| " << SettingLabel(c.setting) << " | " << FormatSeconds(c.wall_s) << " | "
         << FormatBpPerSecond(bps) << " | **"
         << (one_bps > 0 ? Fixed(bps / (cores * one_bps)) : "n/a") << "** | " << c.failures
         << " |\n";
    }
    md << "\n";
  }
  return md.str();
}

std::string Json(const std::vector<PackageFigures>& packages) {
  auto list = [](const std::vector<double>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Fixed(v[i], 6);
    return out + "]";
  };
  std::ostringstream j;
  j << "[";
  for (size_t i = 0; i < packages.size(); ++i) {
    const auto& p = packages[i];
    j << (i ? ", " : "") << "{\"model\": \"" << p.model_id << "\", \"limit_fp32_gflops\": "
      << Fixed(p.limit.fp32_gflops, 3) << ", \"limit_bf16_gflops\": "
      << Fixed(p.limit.bf16_gflops, 3) << ", \"startup_s\": " << Fixed(p.startup_s, 4)
      << ", \"cold_load_ms\": " << p.cold_load_ms << ", \"vm_hwm_kib\": " << p.memory.hwm_kib
      << ", \"one_thread_bare_s\": " << Fixed(p.one_thread_bare_s, 6) << ", \"rows\": [";
    for (size_t k = 0; k < p.rows.size(); ++k) {
      const auto& r = p.rows[k];
      j << (k ? ", " : "") << "{\"bases\": " << r.bases << ", \"windows\": " << r.windows
        << ", \"tokens\": " << r.tokens << ", \"flops\": " << Fixed(r.flops, 0)
        << ", \"bare_s\": " << list(r.bare_all) << ", \"worker_s\": " << list(r.worker_all)
        << ", \"python_script_s\": " << Fixed(r.py_script_s, 6)
        << ", \"python_eager_s\": " << Fixed(r.py_eager_s, 6) << "}";
    }
    j << "], \"precision\": [";
    for (size_t k = 0; k < p.precision.size(); ++k) {
      const auto& q = p.precision[k];
      j << (k ? ", " : "") << "{\"precision\": \"" << q.precision << "\", \"worker_s\": "
        << Fixed(q.worker_s, 6) << ", \"worker_drift\": " << Fixed(q.worker_drift, 8)
        << ", \"eager_s\": " << Fixed(q.eager_s, 6) << ", \"eager_drift\": "
        << Fixed(q.eager_drift, 8) << "}";
    }
    j << "], \"concurrency\": [";
    for (size_t k = 0; k < p.concurrency.size(); ++k) {
      const auto& c = p.concurrency[k];
      j << (k ? ", " : "") << "{\"setting\": \"" << c.setting << "\", \"wall_s\": "
        << Fixed(c.wall_s, 6) << ", \"failures\": " << c.failures << "}";
    }
    j << "]}";
  }
  j << "]";
  return j.str();
}

}  // namespace

std::string RunLargeBench(const BenchSettings& settings, const LargeSettings& large,
                          std::string* json, std::vector<std::string>* errors) {
  worker::SetTorchThreads(settings.threads);
  std::vector<PackageFigures> packages;
  std::vector<std::string> dirs = {settings.models_dir};
  dirs.insert(dirs.end(), settings.extra_dirs.begin(), settings.extra_dirs.end());
  for (const std::string& models_dir : dirs) {
    for (const worker::ModelManifest& manifest : PackagesToMeasure(models_dir, false)) {
      Architecture arch;
      if (!ReadArchitecture(manifest.package_dir, &arch)) continue;  // not a large package
      if (large.max_bp > 0) {
        arch.lengths.erase(std::remove_if(arch.lengths.begin(), arch.lengths.end(),
                                          [&](int64_t bp) { return bp > large.max_bp; }),
                           arch.lengths.end());
        if (arch.lengths.empty()) continue;
      }
      PackageFigures f;
      Status status = MeasurePackage(settings, large, manifest, arch, &f);
      if (!status.ok()) {
        f.error = status.message();
        errors->push_back("large: " + manifest.id + ": " + status.message());
      }
      packages.push_back(std::move(f));
    }
  }
  if (packages.empty()) errors->push_back("large: no package with bench-architecture.json");
  *json = Json(packages);
  return Markdown(settings, large, packages);
}

}  // namespace dnaserve::bench
