// scripts/export_hf_bert.py end to end. hf_export_check.py (beside this file) builds tiny random
// BERT checkpoints in the Hugging Face layout, exports them and compares the TorchScript with an
// independent eager implementation of the Hugging Face math; these tests require that it passed,
// then load the packages with the worker's own code and serve them from a real dnaserve-worker
// over gRPC.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <rapidjson/document.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"
#include "worker/models/reduced_precision.h"
#include "worker/models/torchscript_model.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using testing::RandomBases;
using testing::ReadFile;

struct ExportRun {
  std::string skipped;  // non-empty: why nothing ran
  std::string dir;      // <dir>/models/<id>, <dir>/summary.json
  int exit_code = -1;
  std::string output;
};

// The Python sources the check's result depends on.
std::string SourcesDigest() {
  const std::string root = dnaserve::testing::SourceDir();
  std::string all;
  for (const char* file :
       {"/scripts/export_hf_bert.py", "/scripts/dnaserve_models/hf_bert.py",
        "/scripts/dnaserve_models/checkpoint_io.py",
        "/scripts/dnaserve_models/hf_tokenizer_json.py", "/tests/unit/worker/hf_export_check.py"}) {
    all += ReadFile(root + file);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016zx", std::hash<std::string>{}(all));
  return hex;
}

// Runs hf_export_check.py (about 20 s: torch is imported once per exported variant). CTest runs
// each test case in its own process, so a passing run is kept in the build tree, keyed by the
// digest of the Python sources, and shared under a file lock by the test processes.
const ExportRun& RunExportCheck() {
  static const ExportRun run = [] {
    ExportRun r;
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      r.skipped = "LibTorch for Python is missing (/usr/bin/python3 cannot import torch)";
      return r;
    }
    const std::string cache_root = dnaserve::testing::BinaryDir() + "/tests/hf-export-check";
    fs::create_directories(cache_root);
    r.dir = cache_root + "/" + SourcesDigest();
    const int lock = open((cache_root + "/.lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock >= 0) flock(lock, LOCK_EX);
    const std::string log = r.dir + "/check.log";
    if (ReadFile(r.dir + "/exit_code") == "0") {
      r.exit_code = 0;
    } else {
      std::error_code ignored;
      for (const auto& old : fs::directory_iterator(cache_root, ignored)) {
        if (old.is_directory()) fs::remove_all(old.path(), ignored);  // stale digests
      }
      fs::create_directories(r.dir);
      const std::string command = "/usr/bin/python3 " + dnaserve::testing::SourceDir() +
                                  "/tests/unit/worker/hf_export_check.py --workdir " + r.dir +
                                  " >" + log + " 2>&1";
      const int status = std::system(command.c_str());
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      testing::WriteFile(r.dir + "/exit_code", std::to_string(r.exit_code));
    }
    if (lock >= 0) close(lock);  // releases the lock
    r.output = ReadFile(log);
    return r;
  }();
  return run;
}

#define REQUIRE_EXPORT_OR_SKIP(run)                         \
  const ExportRun& run = RunExportCheck();                  \
  if (!run.skipped.empty()) {                               \
    CATCH_WARN("skipped: " << run.skipped);                 \
    return;                                                 \
  }                                                         \
  CATCH_INFO("hf_export_check.py output:\n" << run.output); \
  CATCH_REQUIRE(run.exit_code == 0)

const char* const kPackages[] = {"promoter-bert-tiny", "splice-bert-tiny",
                                 "enhancer-bert-tiny-preln", "chromatin-bert-tiny"};

CATCH_TEST_CASE("HF BERT export: TorchScript equals the independent Hugging Face math",
                "[hf_export]") {
  REQUIRE_EXPORT_OR_SKIP(run);
  const std::string summary_text = ReadFile(run.dir + "/summary.json");
  rapidjson::Document summary;
  summary.Parse(summary_text.c_str(), summary_text.size());
  CATCH_REQUIRE_FALSE(summary.HasParseError());
  CATCH_REQUIRE(summary["failures"].Size() == 0);
  std::set<std::string> seen;
  std::set<std::string> formats;
  for (const auto& v : summary["variants"].GetArray()) {
    CATCH_INFO(v["id"].GetString());
    seen.insert(v["id"].GetString());
    formats.insert(v["weights_format"].GetString());
    CATCH_CHECK(v["max_abs_diff"].GetDouble() < 1e-5);
  }
  CATCH_CHECK(seen == std::set<std::string>(std::begin(kPackages), std::end(kPackages)));
  CATCH_CHECK(formats == std::set<std::string>{"bin", "safetensors"});
  // Every broken checkpoint was refused with its message and no package.
  std::set<std::string> refusals;
  for (const auto& r : summary["refusals"].GetArray()) {
    CATCH_INFO(r["case"].GetString());
    CATCH_CHECK(r["refused"].GetBool());
    refusals.insert(r["case"].GetString());
  }
  CATCH_CHECK(refusals.count("missing-tensor") == 1);
  CATCH_CHECK(refusals.count("corrupt-safetensors") == 1);
  CATCH_CHECK(refusals.count("tokenizer-beyond-vocab") == 1);
  CATCH_CHECK(refusals.count("dnabert2-alibi") == 1);
}

CATCH_TEST_CASE("HF BERT export: packages pass the worker's manifest, tokenizer and model checks",
                "[hf_export]") {
  REQUIRE_EXPORT_OR_SKIP(run);
  for (const char* id : kPackages) {
    CATCH_INFO(id);
    auto manifest = LoadManifest(run.dir + "/models/" + id);
    CATCH_REQUIRE(manifest.ok());
    CATCH_CHECK(manifest->tokenizer.type == TokenizerType::kBpe);
    CATCH_CHECK(manifest->tokenizer.file == "tokenizer.json");
    CATCH_CHECK_FALSE(manifest->trained);
    auto tokenizer = LoadTokenizer(*manifest);
    CATCH_INFO((tokenizer.ok() ? std::string() : tokenizer.status().message()));
    CATCH_REQUIRE(tokenizer.ok());
    auto model = LoadTorchScriptModel(manifest->WeightsPath());
    CATCH_REQUIRE(model.ok());
    // The worker's own encoding of a window runs through the exported model.
    std::vector<int64_t> ids;
    (*tokenizer)->EncodeIds(RandomBases(120, 3), &ids);
    IdTensor input{{1, static_cast<int64_t>(ids.size())}, ids};
    auto out = (*model)->Forward({input});
    CATCH_REQUIRE(out.ok());
    CATCH_REQUIRE(out->size() == 1);
    const FloatTensor& y = (*out)[0];
    if (manifest->task == Task::kPromoter) {
      CATCH_CHECK(y.shape == std::vector<int64_t>{1});
    } else if (manifest->task == Task::kSplice) {
      CATCH_CHECK(y.shape == std::vector<int64_t>{1, static_cast<int64_t>(ids.size()), 3});
    } else {
      CATCH_CHECK(y.shape ==
                  std::vector<int64_t>{1, static_cast<int64_t>(manifest->output_labels.size())});
    }
  }
}

CATCH_TEST_CASE("HF BERT export: a bf16 export runs as exported, within the drift of fp32",
                "[hf_export][precision]") {
  REQUIRE_EXPORT_OR_SKIP(run);
  const std::string bf16_dir = run.dir + "/models-bf16/promoter-bert-tiny-bf16";
  auto manifest = LoadManifest(bf16_dir);
  CATCH_REQUIRE(manifest.ok());
  CATCH_CHECK(manifest->precision == Precision::kBf16);
  CATCH_CHECK(manifest->batch_rows_per_pass == 1);
  // The weights are bfloat16: a manifest that says otherwise is refused, naming the fix.
  auto as_fp32 = LoadTorchScriptModel(manifest->WeightsPath(), Precision::kFp32, manifest->id);
  CATCH_REQUIRE_FALSE(as_fp32.ok());
  CATCH_CHECK(as_fp32.status().message().find("holds bfloat16 weights") != std::string::npos);
  if (!CheckPrecisionSupported(Precision::kBf16, DetectPrecisionSupport(), manifest->id).ok()) {
    CATCH_WARN("this machine cannot run bf16: the bf16 export's outputs are not checked");
    return;
  }
  auto bf16 = LoadTorchScriptModel(manifest->WeightsPath(), Precision::kBf16, manifest->id);
  CATCH_REQUIRE(bf16.ok());
  auto fp32 = LoadTorchScriptModel(run.dir + "/models/promoter-bert-tiny/model.pt");
  CATCH_REQUIRE(fp32.ok());
  auto tokenizer = LoadTokenizer(*manifest);
  CATCH_REQUIRE(tokenizer.ok());
  std::vector<int64_t> ids;
  (*tokenizer)->EncodeIds(RandomBases(120, 5), &ids);
  IdTensor input{{1, static_cast<int64_t>(ids.size())}, ids};
  auto a = (*fp32)->Forward({input});
  auto b = (*bf16)->Forward({input});
  CATCH_REQUIRE(a.ok());
  CATCH_REQUIRE(b.ok());
  CATCH_REQUIRE((*a)[0].data.size() == (*b)[0].data.size());
  float drift = 0;
  for (size_t i = 0; i < (*a)[0].data.size(); ++i) {
    drift = std::max(drift, std::abs((*a)[0].data[i] - (*b)[0].data[i]));
  }
  CATCH_CHECK(drift > 0.0f);    // it did run in bf16
  CATCH_CHECK(drift <= 0.01f);  // worker/README.md, "Reduced precision"
}

using testing::WorkerProcess;

CATCH_TEST_CASE("HF BERT export: dnaserve-worker serves the exported packages over gRPC",
                "[hf_export][grpc]") {
  REQUIRE_EXPORT_OR_SKIP(run);
  const std::string worker_binary = testing::WorkerBinary();
  CATCH_INFO("build the dnaserve-worker target first: " << worker_binary);
  CATCH_REQUIRE(fs::exists(worker_binary));
  const std::string models = run.dir + "/models";
  const int64_t length = 1000;
  const std::string sequence = RandomBases(length, 41);

  CATCH_SECTION("promoter: one probability per window") {
    WorkerProcess worker;
    CATCH_REQUIRE(worker.Start(Task::kPromoter, models, {}, run.dir + "/worker-promoter.log"));
    v1::PredictRequest request;
    request.set_sequence(sequence);
    request.mutable_promoter()->set_threshold(0.5);
    v1::PredictResult result;
    grpc::Status status = worker.Predict(request, &result);
    CATCH_INFO(status.error_message() << "\n" << ReadFile(run.dir + "/worker-promoter.log"));
    CATCH_REQUIRE(status.ok());
    CATCH_CHECK(result.model() == "promoter-bert-tiny");
    CATCH_CHECK(result.cold_start());
    const auto windows = PlanWindows(length, 300, 150);  // the variant's --context/--stride
    CATCH_REQUIRE(result.promoter().windows_size() == static_cast<int>(windows.size()));
    CATCH_CHECK(result.windows_processed() == static_cast<int>(windows.size()));
    std::set<double> distinct;
    for (const auto& w : result.promoter().windows()) {
      CATCH_CHECK(w.score() >= 0.0);
      CATCH_CHECK(w.score() <= 1.0);
      distinct.insert(w.score());
    }
    CATCH_CHECK(distinct.size() > 1);  // different windows, different probabilities
  }

  CATCH_SECTION("splice: token sites tile the sequence and carry the model's scores") {
    WorkerProcess worker;
    CATCH_REQUIRE(worker.Start(Task::kSplice, models, {}, run.dir + "/worker-splice.log"));
    v1::PredictRequest request;
    request.set_sequence(sequence);
    auto* options = request.mutable_splice();
    options->set_threshold(0.0);  // every token emits both site types
    options->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
    options->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
    options->set_max_sites(20000);
    v1::PredictResult result;
    grpc::Status status = worker.Predict(request, &result);
    CATCH_INFO(status.error_message() << "\n" << ReadFile(run.dir + "/worker-splice.log"));
    CATCH_REQUIRE(status.ok());
    CATCH_CHECK(result.splice().windows_size() == 3);  // ceil(1000 / 400)
    std::vector<v1::SpliceSite> donors;
    for (const auto& s : result.splice().sites()) {
      if (s.type() == v1::SPLICE_SITE_TYPE_DONOR) donors.push_back(s);
    }
    CATCH_REQUIRE_FALSE(donors.empty());
    std::sort(donors.begin(), donors.end(),
              [](const auto& a, const auto& b) { return a.start() < b.start(); });
    // The model drops its [CLS]/[SEP] rows, so output row t is DNA token t of the window: token
    // indices restart at 0 in every window and the token spans tile [0, length) exactly.
    int64_t expected_start = 0;
    int window = -1;
    int64_t expected_token = 0;
    for (const auto& s : donors) {
      if (s.window_index() != window) {
        window = s.window_index();
        expected_token = 0;
      }
      CATCH_CHECK(s.start() == expected_start);
      CATCH_CHECK(s.end() > s.start());
      CATCH_CHECK(s.token_index() == expected_token);
      expected_start = s.end();
      ++expected_token;
    }
    CATCH_CHECK(window == 2);
    CATCH_CHECK(expected_start == length);

    // The scores are the exported model's rows for those tokens.
    auto manifest = LoadManifest(models + "/splice-bert-tiny");
    CATCH_REQUIRE(manifest.ok());
    auto tokenizer = LoadTokenizer(*manifest);
    auto model = LoadTorchScriptModel(manifest->WeightsPath());
    CATCH_REQUIRE(tokenizer.ok());
    CATCH_REQUIRE(model.ok());
    std::vector<int64_t> ids;
    (*tokenizer)->EncodeIds(sequence.substr(0, 400), &ids);
    auto out = (*model)->Forward({IdTensor{{1, static_cast<int64_t>(ids.size())}, ids}});
    CATCH_REQUIRE(out.ok());
    int checked = 0;
    for (const auto& s : donors) {
      if (s.window_index() != 0) continue;
      CATCH_REQUIRE(s.token_index() < static_cast<int64_t>(ids.size()));
      const float* row = (*out)[0].data.data() + s.token_index() * 3;
      CATCH_CHECK(std::abs(s.donor_score() - row[2]) < 1e-6);
      CATCH_CHECK(std::abs(s.acceptor_score() - row[1]) < 1e-6);
      ++checked;
    }
    CATCH_CHECK(checked > 0);
  }

  CATCH_SECTION("enhancer (pre-LayerNorm) and chromatin: one row of outputs per window") {
    {
      WorkerProcess worker;
      CATCH_REQUIRE(worker.Start(Task::kEnhancer, models, {}, run.dir + "/worker-enhancer.log"));
      v1::PredictRequest request;
      request.set_sequence(sequence);
      request.mutable_enhancer();
      v1::PredictResult result;
      grpc::Status status = worker.Predict(request, &result);
      CATCH_INFO(status.error_message());
      CATCH_REQUIRE(status.ok());
      CATCH_CHECK(result.enhancer().windows_size() == 5);  // ceil(1000 / 249)
      CATCH_CHECK(result.enhancer().windows(0).dev() != result.enhancer().windows(0).hk());
    }
    WorkerProcess worker;
    CATCH_REQUIRE(worker.Start(Task::kChromatin, models, {}, run.dir + "/worker-chromatin.log"));
    v1::PredictRequest request;
    request.set_sequence(sequence);
    request.mutable_chromatin()->set_threshold(0.0);  // every feature is reported
    v1::PredictResult result;
    grpc::Status status = worker.Predict(request, &result);
    CATCH_INFO(status.error_message());
    CATCH_REQUIRE(status.ok());
    const auto windows = PlanWindows(length, 250, 200);
    CATCH_REQUIRE(result.chromatin().windows_size() == static_cast<int>(windows.size()));
    for (const auto& w : result.chromatin().windows()) {
      CATCH_CHECK(w.features_size() == 5);
      for (const auto& feature : w.features()) {
        CATCH_CHECK(feature.probability() > 0.0);
        CATCH_CHECK(feature.probability() < 1.0);
      }
    }
  }
}

}  // namespace
}  // namespace dnaserve::worker
