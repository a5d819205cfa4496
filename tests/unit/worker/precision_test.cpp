// The manifest's "precision" setting: its validation, what the machine must support, and the
// load path of each value through the real LibTorch runtime on a small generated package, with
// bf16 and int8 scores held to the drift worker/README.md documents ("Reduced precision").
#include <catch2/catch.hpp>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <random>
#include <string>

#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"
#include "worker/manifest/precision.h"
#include "worker/models/reduced_precision.h"
#include "worker/models/torchscript_model.h"

namespace dnaserve::worker {
namespace {

// worker/README.md, "Reduced precision": the largest change of a probability the tests accept.
constexpr float kBf16MaxDrift = 0.01f;
constexpr float kInt8MaxDrift = 0.01f;

const char kManifest[] = R"({
  "format_version": 1, "id": "promoter-x", "task": "promoter", "description": "d",
  "is_default": true, "tokenizer": {"type": "char"}, "context_window_bp": 2000,
  "trained_window_bp": null, "stride_bp": 1000, "output_labels": ["promoter"],
  "trained": false, "weights": "model.pt", "model_card": "MODEL_CARD.md" PRECISION})";

std::string WithPrecision(const std::string& field) {
  std::string json = kManifest;
  return json.replace(json.find("PRECISION"), 9, field);
}

std::string ErrorOf(const std::string& json) {
  auto parsed = ParseManifest(json, "promoter-x");
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

CATCH_TEST_CASE("precision: absent is fp32 and each named value parses", "[manifest][precision]") {
  auto absent = ParseManifest(WithPrecision(""), "promoter-x");
  CATCH_REQUIRE(absent.ok());
  CATCH_CHECK(absent->precision == Precision::kFp32);
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kInt8}) {
    auto parsed =
        ParseManifest(WithPrecision(std::string(", \"precision\": \"") + PrecisionName(p) + "\""),
                      "promoter-x");
    CATCH_REQUIRE(parsed.ok());
    CATCH_CHECK(parsed->precision == p);
  }
}

CATCH_TEST_CASE("precision: an unknown value is a load error naming the package",
                "[manifest][precision]") {
  const std::string fp16 = ErrorOf(WithPrecision(", \"precision\": \"fp16\""));
  CATCH_CHECK(Contains(fp16, "'precision' of package 'promoter-x' must be one of"));
  CATCH_CHECK(Contains(fp16, "(got \"fp16\")"));
  CATCH_CHECK(Contains(ErrorOf(WithPrecision(", \"precision\": 16")),
                       "'precision' of package 'promoter-x'"));
  CATCH_CHECK(Contains(ErrorOf(WithPrecision(", \"precision\": \"BF16\"")), "(got \"BF16\")"));
}

CATCH_TEST_CASE("precision: a setting the machine cannot honour is refused, never downgraded",
                "[precision]") {
  PrecisionSupport none;
  auto bf16 = CheckPrecisionSupported(Precision::kBf16, none, "m1");
  CATCH_CHECK_FALSE(bf16.ok());
  CATCH_CHECK(Contains(bf16.message(), "model 'm1' asks for precision bf16"));
  CATCH_CHECK(Contains(bf16.message(), "AVX512-BF16"));
  auto int8 = CheckPrecisionSupported(Precision::kInt8, none, "m1");
  CATCH_CHECK_FALSE(int8.ok());
  CATCH_CHECK(Contains(int8.message(), "no quantized engine"));
  CATCH_CHECK(CheckPrecisionSupported(Precision::kFp32, none, "m1").ok());

  PrecisionSupport cpu{false, true, true};
  CATCH_CHECK(CheckPrecisionSupported(Precision::kBf16, cpu, "m1").ok());
  CATCH_CHECK(CheckPrecisionSupported(Precision::kInt8, cpu, "m1").ok());
  PrecisionSupport cuda{true, false, true};
  CATCH_CHECK(CheckPrecisionSupported(Precision::kBf16, cuda, "m1").ok());  // autocast there
  CATCH_CHECK(Contains(CheckPrecisionSupported(Precision::kInt8, cuda, "m1").message(),
                       "no CUDA kernels"));
}

// Fixed input: 4 windows of 2,000 random bases (char ids 1-5), seed 28.
IdTensor FixedInput() {
  std::mt19937 rng(28);
  std::uniform_int_distribution<int64_t> base(1, 4);
  IdTensor ids;
  ids.shape = {4, 2000};
  for (int i = 0; i < 4 * 2000; ++i) ids.data.push_back(base(rng));
  return ids;
}

std::vector<float> Scores(Model& model) {
  auto out = model.Forward({FixedInput()});
  CATCH_REQUIRE(out.ok());
  return (*out)[0].data;
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  CATCH_REQUIRE(a.size() == b.size());
  float max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  return max_diff;
}

CATCH_TEST_CASE("precision: bf16 and int8 load, convert and stay within the documented drift",
                "[torch][precision]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  const std::string weights = *dir + "/promoter-human-tiny/model.pt";
  auto fp32 = LoadTorchScriptModel(weights, Precision::kFp32, "promoter-human-tiny");
  CATCH_REQUIRE(fp32.ok());
  const std::vector<float> reference = Scores(**fp32);
  const PrecisionSupport support = DetectPrecisionSupport();

  for (auto [precision, bound] : {std::pair{Precision::kBf16, kBf16MaxDrift},
                                  std::pair{Precision::kInt8, kInt8MaxDrift}}) {
    CATCH_INFO("precision " << PrecisionName(precision));
    auto model = LoadTorchScriptModel(weights, precision, "promoter-human-tiny");
    if (!CheckPrecisionSupported(precision, support, "promoter-human-tiny").ok()) {
      CATCH_CHECK_FALSE(model.ok());  // refused, with the reason, on this machine
      CATCH_WARN("this machine cannot run " << PrecisionName(precision) << ": drift not checked");
      continue;
    }
    CATCH_REQUIRE(model.ok());
    const float drift = MaxAbsDiff(reference, Scores(**model));
    CATCH_CHECK(drift > 0.0f);  // the setting took effect: fp32 gives exactly the reference
    CATCH_CHECK(drift <= bound);
  }
}

CATCH_TEST_CASE("precision: the rewrite reports what it converted, and int8 weights must say so",
                "[torch][precision]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  const std::string weights = *dir + "/promoter-human-tiny/model.pt";
  PrecisionSupport cpu{false, true, true};
  torch::jit::Module module = torch::jit::load(weights);
  module.eval();
  auto int8 = ApplyReducedPrecision(&module, Precision::kInt8, cpu, weights);
  CATCH_REQUIRE(int8.ok());
  CATCH_CHECK(int8->rewritten_ops > 0);  // the Linear layers outside the fused encoder layers

  // Saved after conversion, the file holds int8 ops: the manifest must declare int8 to load it.
  const std::string saved = dnaserve::testing::MakeTempDir("precision") + "/model.int8.pt";
  module.save(saved);
  auto as_fp32 = LoadTorchScriptModel(saved, Precision::kFp32, "m1");
  CATCH_REQUIRE_FALSE(as_fp32.ok());
  CATCH_CHECK(Contains(as_fp32.status().message(), "holds int8-quantized ops"));
  CATCH_CHECK(Contains(as_fp32.status().message(), "precision fp32"));
  auto as_int8 = LoadTorchScriptModel(saved, Precision::kInt8, "m1");
  CATCH_REQUIRE(as_int8.ok());
  auto converted_at_load = LoadTorchScriptModel(weights, Precision::kInt8, "m1");
  CATCH_REQUIRE(converted_at_load.ok());
  CATCH_CHECK(MaxAbsDiff(Scores(**as_int8), Scores(**converted_at_load)) == 0.0f);

  torch::jit::Module plain = torch::jit::load(weights);
  plain.eval();
  auto bf16 = ApplyReducedPrecision(&plain, Precision::kBf16, cpu, weights);
  CATCH_REQUIRE(bf16.ok());
  CATCH_CHECK(bf16->rewritten_ops > 0);
  CATCH_CHECK_FALSE(bf16->cuda_autocast.has_value());
  // On CUDA nothing is rewritten: bf16 becomes autocast to float16 around each pass.
  torch::jit::Module on_gpu = torch::jit::load(weights);
  auto cuda = ApplyReducedPrecision(&on_gpu, Precision::kBf16, PrecisionSupport{true, false, true},
                                    weights);
  CATCH_REQUIRE(cuda.ok());
  CATCH_CHECK(cuda->rewritten_ops == 0);
  CATCH_CHECK(cuda->cuda_autocast == at::kHalf);
}


// A copy of promoter-human-tiny in `models_dir` as package `id`, its manifest's precision set to
// `precision_field` (the text after "seed": ..., e.g. ", \"precision\": \"int8\"").
void CopyPackage(const std::string& from, const std::string& models_dir, const std::string& id,
                 const std::string& precision_field) {
  namespace fs = std::filesystem;
  const std::string to = models_dir + "/" + id;
  fs::copy(from, to, fs::copy_options::recursive);
  std::string manifest = testing::ReadFile(to + "/manifest.json");
  manifest.replace(manifest.find("promoter-human-tiny"), 19, id);
  manifest.replace(manifest.rfind('}'), 1, precision_field + "}");
  testing::WriteFile(to + "/manifest.json", manifest);
}

CATCH_TEST_CASE("precision: the worker binary serves each setting and refuses a mismatch",
                "[torch][precision][grpc]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  const std::string source = *dir + "/promoter-human-tiny";
  const std::string models = dnaserve::testing::MakeTempDir("precision-models");
  CopyPackage(source, models, "p-fp32", "");
  CopyPackage(source, models, "p-int8", ", \"precision\": \"int8\"");
  // Weights converted to int8 and saved, under a manifest that does not say so.
  CopyPackage(source, models, "p-mismatch", "");
  torch::jit::Module module = torch::jit::load(source + "/model.pt");
  module.eval();
  CATCH_REQUIRE(ApplyReducedPrecision(&module, Precision::kInt8, PrecisionSupport{false, true, true},
                                      "model.pt").ok());
  module.save(models + "/p-mismatch/model.pt");

  testing::WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kPromoter, models));
  auto scores = [&](const std::string& id, v1::PredictResult* result) {
    v1::PredictRequest request = testing::RequestFor(Task::kPromoter, 6000, 28);
    request.set_model(id);
    return worker.Predict(request, result);
  };
  v1::PredictResult fp32, int8, mismatch;
  CATCH_REQUIRE(scores("p-fp32", &fp32).ok());
  CATCH_REQUIRE(scores("p-int8", &int8).ok());
  CATCH_REQUIRE(fp32.promoter().windows_size() == int8.promoter().windows_size());
  CATCH_REQUIRE(fp32.promoter().windows_size() > 0);
  double drift = 0;
  for (int i = 0; i < fp32.promoter().windows_size(); ++i) {
    drift = std::max(drift, std::fabs(fp32.promoter().windows(i).score() -
                                      int8.promoter().windows(i).score()));
  }
  CATCH_CHECK(drift > 0.0);
  CATCH_CHECK(drift <= kInt8MaxDrift);
  grpc::Status refused = scores("p-mismatch", &mismatch);
  CATCH_CHECK(refused.error_code() == grpc::StatusCode::UNAVAILABLE);
  CATCH_CHECK(Contains(refused.error_message(), "model 'p-mismatch' could not be loaded"));
  CATCH_CHECK(Contains(refused.error_message(), "holds int8-quantized ops"));
}

}  // namespace
}  // namespace dnaserve::worker
