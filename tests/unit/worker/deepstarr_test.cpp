// An operator-supplied DeepSTARR checkpoint (here: random weights and batch-norm statistics,
// saved as a state_dict), packaged by scripts/package_deepstarr.py and served by a real
// dnaserve-worker over gRPC, gives the same dev/hk scores as eager PyTorch
// (tests/unit/worker/deepstarr_check.py); checkpoints that are not DeepSTARR are refused with the
// reason. Skipped when /usr/bin/python3 has no torch.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/task.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using dnaserve::testing::SourceDir;
using testing::ReadFile;

std::string Packager() { return SourceDir() + "/scripts/package_deepstarr.py"; }
std::string Helper() { return SourceDir() + "/tests/unit/worker/deepstarr_check.py"; }

#define TORCH_OR_SKIP()                                                          \
  if (!testing::PythonHasTorch()) {                                              \
    CATCH_WARN("skipped: /usr/bin/python3 cannot import torch (python3-torch)"); \
    return;                                                                      \
  }                                                                              \
  CATCH_REQUIRE(fs::exists(testing::WorkerBinary()))

CATCH_TEST_CASE("DeepSTARR checkpoint: packaged, served over gRPC, equal to eager PyTorch",
                "[deepstarr][grpc]") {
  TORCH_OR_SKIP();
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-deepstarr");
  const std::string checkpoint = dir + "/deepstarr_state_dict.pt";
  const std::string package = dir + "/models/enhancer-deepstarr-operator";
  CATCH_REQUIRE(testing::RunPython({Helper(), "checkpoint", "--seed", "11", "--out", checkpoint},
                                   dir + "/checkpoint.log"));
  const bool packaged =
      testing::RunPython({Packager(), "--state-dict", checkpoint, "--out", package, "--description",
                          "DeepSTARR test checkpoint (random weights)", "--is-default"},
                         dir + "/package.log");
  CATCH_INFO(ReadFile(dir + "/package.log"));
  CATCH_REQUIRE(packaged);

  // 1,000 bases with an N run: four full 249 bp windows and a fifth padded with 245 N.
  std::string sequence = testing::RandomBases(1000, 23);
  sequence.replace(300, 20, std::string(20, 'N'));
  testing::WriteFile(dir + "/sequence.txt", sequence);
  CATCH_REQUIRE(
      testing::RunPython({Helper(), "reference", "--state-dict", checkpoint, "--sequence-file",
                          dir + "/sequence.txt", "--out", dir + "/reference.tsv"},
                         dir + "/reference.log"));
  std::vector<std::pair<double, double>> reference;
  std::istringstream in(ReadFile(dir + "/reference.tsv"));
  int index = 0;
  double dev = 0, hk = 0;
  while (in >> index >> dev >> hk) reference.push_back({dev, hk});
  CATCH_REQUIRE(reference.size() == 5);

  testing::WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kEnhancer, dir + "/models"));
  v1::ListModelsResponse list;
  CATCH_REQUIRE(worker.ListModels(&list).ok());
  CATCH_REQUIRE(list.models_size() == 1);
  CATCH_CHECK(list.models(0).id() == "enhancer-deepstarr-operator");
  CATCH_CHECK(list.models(0).trained());
  CATCH_CHECK(list.models(0).is_default());
  CATCH_CHECK(list.models(0).description() == "DeepSTARR test checkpoint (random weights)");

  v1::PredictRequest request;
  request.set_model("enhancer-deepstarr-operator");
  request.set_sequence(sequence);
  request.set_sequence_name("test");
  request.mutable_enhancer();
  const testing::PredictCall call = worker.Predict(request);
  CATCH_INFO(call.status.error_message() << "\n" << worker.Log());
  CATCH_REQUIRE(call.status.ok());
  const auto& windows = call.result->enhancer().windows();
  CATCH_REQUIRE(windows.size() == 5);
  CATCH_CHECK(windows[4].padded_bp() == 245);
  double max_diff = 0, spread = 0;
  for (int i = 0; i < windows.size(); ++i) {
    max_diff = std::max({max_diff, std::abs(windows[i].dev() - reference[i].first),
                         std::abs(windows[i].hk() - reference[i].second)});
    spread = std::max(spread, std::abs(reference[i].first - reference[0].first));
  }
  CATCH_WARN("DeepSTARR over gRPC vs eager PyTorch: max |diff| " << max_diff << " over 5 windows");
  CATCH_CHECK(max_diff < 1e-4);
  CATCH_CHECK(spread > 1e-3);  // the windows differ, so the comparison can tell them apart
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("package_deepstarr refuses checkpoints that are not DeepSTARR", "[deepstarr]") {
  TORCH_OR_SKIP();
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-deepstarr-bad");
  CATCH_REQUIRE(
      testing::RunPython({Helper(), "wrong-shape", "--out", dir + "/wrong.pt"}, dir + "/w.log"));
  testing::WriteFile(dir + "/garbage.pt", "this is not a checkpoint");
  const struct {
    const char* file;
    const char* reason;
  } cases[] = {{"wrong.pt", "dense1.weight: (1800, 256), expected (256, 1800)"},
               {"garbage.pt", "not a torch checkpoint"},
               {"missing.pt", "no such file"}};
  for (const auto& c : cases) {
    CATCH_INFO(c.file);
    const std::string log = dir + "/" + c.file + ".log";
    CATCH_CHECK_FALSE(testing::RunPython({Packager(), "--state-dict", dir + "/" + c.file, "--out",
                                          dir + "/models/enhancer-bad", "--description", "x"},
                                         log));
    CATCH_CHECK(ReadFile(log).find(c.reason) != std::string::npos);
    CATCH_CHECK_FALSE(fs::exists(dir + "/models/enhancer-bad"));
  }
  testing::RemoveScratch(dir);
}

}  // namespace
}  // namespace dnaserve::worker
