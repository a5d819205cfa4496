// The generated TorchScript packages through the real LibTorch runtime (no gRPC).
#include "worker/models/torchscript_model.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"
#include "worker/tasks/task_runner.h"

namespace dnaserve::worker {
namespace {

using testing::RandomBases;
using testing::RequestFor;

CATCH_TEST_CASE("every generated package loads and runs its task", "[torch][models]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  for (Task task : kAllTasks) {
    CATCH_INFO("task " << TaskName(task));
    ManifestScan scan = ScanModelsDir(*dir, task);
    CATCH_REQUIRE(scan.models.size() == 1);
    const ModelManifest& manifest = scan.models[0];
    auto model = LoadTorchScriptModel(manifest.WeightsPath());
    CATCH_REQUIRE(model.ok());
    auto result = RunPrediction(**model, manifest, RequestFor(task, 3000, 42), RunHooks{});
    CATCH_REQUIRE(result.ok());
    CATCH_CHECK(result->windows_processed() >= 1);
  }
}

CATCH_TEST_CASE("the expression model's output depends on the description", "[torch][models]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  ManifestScan scan = ScanModelsDir(*dir, Task::kExpression);
  CATCH_REQUIRE(scan.models.size() == 1);
  auto model = LoadTorchScriptModel(scan.models[0].WeightsPath());
  CATCH_REQUIRE(model.ok());
  v1::PredictRequest request = RequestFor(Task::kExpression, 9198, 42);
  auto liver = RunPrediction(**model, scan.models[0], request, RunHooks{});
  request.mutable_expression()->set_description("brain, fetal, female");
  auto brain = RunPrediction(**model, scan.models[0], request, RunHooks{});
  auto brain_again = RunPrediction(**model, scan.models[0], request, RunHooks{});
  CATCH_REQUIRE(liver.ok());
  CATCH_REQUIRE(brain.ok());
  CATCH_CHECK(liver->expression().expression_log_tpm() != brain->expression().expression_log_tpm());
  CATCH_CHECK(brain->expression().expression_log_tpm() ==
              brain_again->expression().expression_log_tpm());   // deterministic
  CATCH_CHECK(liver->expression().expression_log_tpm() >= 0.0);  // softplus output
}

CATCH_TEST_CASE("LibTorch failures become statuses", "[torch]") {
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-torch-bad");
  testing::WriteFile(dir + "/model.pt", "this is not a zip archive");
  auto bad = LoadTorchScriptModel(dir + "/model.pt");
  CATCH_REQUIRE_FALSE(bad.ok());
  CATCH_CHECK(bad.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(bad.status().message().find("cannot load TorchScript file " + dir + "/model.pt") ==
              0);
  CATCH_CHECK(bad.status().message().find('\n') == std::string::npos);  // no backtrace
  auto missing = LoadTorchScriptModel(dir + "/absent.pt");
  CATCH_REQUIRE_FALSE(missing.ok());
  testing::RemoveScratch(dir);

  std::string why;
  auto models = testing::GeneratedModelsDir(&why);
  if (!models) {
    CATCH_WARN("skipped the forward-failure half: " << why);
    return;
  }
  auto promoter = LoadTorchScriptModel(*models + "/promoter-human-tiny/model.pt");
  CATCH_REQUIRE(promoter.ok());
  IdTensor out_of_vocab{{1, 2000}, std::vector<int64_t>(2000, 9999)};
  auto failed = (*promoter)->Forward({out_of_vocab});
  CATCH_REQUIRE_FALSE(failed.ok());
  CATCH_CHECK(failed.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(failed.status().message().rfind("model forward failed: ", 0) == 0);
  IdTensor ok{{1, 2000}, std::vector<int64_t>(2000, 1)};
  auto good = (*promoter)->Forward({ok});
  CATCH_REQUIRE(good.ok());
  CATCH_REQUIRE(good->size() == 1);
  CATCH_CHECK((*good)[0].shape == std::vector<int64_t>{1});
}

// Manual: `worker_tests "[.timing]"` prints load and 10 kb inference times per model
// (DNASERVE_TIMING_BP=500000 for another length).
CATCH_TEST_CASE("timing: load and 10 kb inference per generated model", "[.timing]") {
  const char* bp_env = std::getenv("DNASERVE_TIMING_BP");
  const size_t bp = bp_env ? std::strtoul(bp_env, nullptr, 10) : 10000;
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  for (Task task : kAllTasks) {
    ManifestScan scan = ScanModelsDir(*dir, task);
    CATCH_REQUIRE(scan.models.size() == 1);
    auto t0 = Clock::now();
    auto model = LoadTorchScriptModel(scan.models[0].WeightsPath());
    auto t1 = Clock::now();
    CATCH_REQUIRE(model.ok());
    v1::PredictRequest request = RequestFor(task, bp, 42);
    auto first = RunPrediction(**model, scan.models[0], request, RunHooks{});
    auto t2 = Clock::now();
    double best = 1e9;
    for (int i = 0; i < (bp > 100000 ? 1 : 5); ++i) {
      auto a = Clock::now();
      auto again = RunPrediction(**model, scan.models[0], request, RunHooks{});
      best = std::min(best, ms(a, Clock::now()));
      CATCH_REQUIRE(again.ok());
    }
    CATCH_REQUIRE(first.ok());
    size_t features = 0;
    for (const auto& w : first->chromatin().windows()) features += w.features_size();
    std::fprintf(stderr,
                 "  windows %d, promoter regions %d, splice sites %d, features %zu, "
                 "transcripts %d\n",
                 first->windows_processed(), first->promoter().regions_size(),
                 first->splice().sites_size(), features, first->annotation().transcripts_size());
    std::fprintf(stderr,
                 "%-24s threads=%d load %7.1f ms  first %zu bp %7.1f ms  warm best %7.1f ms\n",
                 scan.models[0].id.c_str(), TorchThreads(), ms(t0, t1), bp, ms(t1, t2), best);
  }
}

}  // namespace
}  // namespace dnaserve::worker
