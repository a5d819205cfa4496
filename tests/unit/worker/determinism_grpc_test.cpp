// Same answer every time (issue 25): a real dnaserve-worker, every task, every package of the
// bundled packages (worker/packages) and of the generated test packages. Each request's result
// alone is the reference; the same requests then run concurrently in different mixes (2, 4 and 8
// at once, with different companions, lengths and so different batch fills), with a meeting
// window that makes the batcher stack them. Every result must equal its reference to the bit:
// scores, tracks and text formats alike (only the timing fields are cleared).
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using testing::RequestFor;
using testing::WorkerProcess;

// Lengths of the requests of one model's mixes: one window or a few, several calls of a full
// batch and a padded tail, so that passes of every fill occur.
const std::vector<int64_t> kLengths = {7000, 1500, 12000, 3000, 900, 5200, 2500, 9000};

v1::PredictRequest MixRequest(Task task, const std::string& model, size_t i) {
  v1::PredictRequest request = RequestFor(task, kLengths[i % kLengths.size()],
                                          static_cast<unsigned>(100 + i));
  request.set_model(model);
  return request;
}

grpc::Status Predict(v1::Worker::Stub& stub, const v1::PredictRequest& request,
                     v1::PredictResult* result) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  auto reader = stub.Predict(&context, request);
  v1::PredictEvent event;
  while (reader->Read(&event)) {
    if (event.has_result()) *result = event.result();
  }
  result->clear_inference_time_ms();
  result->clear_cold_start();
  result->clear_model_load_time_ms();
  return reader->Finish();
}

// Empty when equal to the bit (floats compared exactly), else what differs.
std::string Difference(const v1::PredictResult& a, const v1::PredictResult& b) {
  google::protobuf::util::MessageDifferencer differencer;
  std::string report;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(a, b)) return "";
  return report.empty() ? "differ" : report.substr(0, 2000);
}

// Every package of `task` in `models_dir`: each mix of requests run concurrently gives every
// request exactly its result alone.
void CheckMixes(Task task, const std::string& models_dir) {
  const ManifestScan scan = ScanModelsDir(models_dir, task);
  if (scan.models.empty()) return;
  WorkerProcess worker;
  // A 20 ms meeting window: concurrent calls stack whenever the batcher may stack them.
  CATCH_REQUIRE(worker.Start(task, models_dir, {"--batch-max-wait-us", "20000"}));
  for (const ModelManifest& manifest : scan.models) {
    CATCH_INFO("task " << TaskName(task) << ", package " << manifest.package_dir);
    std::vector<v1::PredictResult> alone(kLengths.size());
    for (size_t i = 0; i < kLengths.size(); ++i) {
      grpc::Status status = Predict(worker.stub(), MixRequest(task, manifest.id, i), &alone[i]);
      CATCH_INFO(status.error_message() << "\n" << worker.Log());
      CATCH_REQUIRE(status.ok());
    }
    // Mixes: the first request with 1, 3 and 7 companions; then the others, shifted, so that
    // each request meets different companions at a different place in the passes.
    const std::vector<std::vector<size_t>> mixes = {
        {0, 1}, {0, 2, 3, 4}, {0, 1, 2, 3, 4, 5, 6, 7}, {5, 6, 7, 1}, {3, 7}, {2, 4, 6}};
    for (const auto& mix : mixes) {
      std::vector<std::future<std::pair<grpc::Status, v1::PredictResult>>> running;
      for (size_t i : mix) {
        running.push_back(std::async(std::launch::async, [&, i] {
          v1::PredictResult result;
          grpc::Status status = Predict(worker.stub(), MixRequest(task, manifest.id, i), &result);
          return std::make_pair(status, result);
        }));
      }
      for (size_t k = 0; k < mix.size(); ++k) {
        auto [status, result] = running[k].get();
        CATCH_INFO("request " << mix[k] << " (" << kLengths[mix[k]] << " bp) among " << mix.size());
        CATCH_REQUIRE(status.ok());
        CATCH_CHECK(Difference(alone[mix[k]], result) == "");
      }
    }
  }
}

CATCH_TEST_CASE("determinism over gRPC: a result is the same to the bit alone and in any batch",
                "[grpc][batching][determinism]") {
  REQUIRE_MODELS_OR_SKIP(generated);
  const std::string bundled = dnaserve::testing::SourceDir() + "/worker/packages";
  CATCH_REQUIRE(fs::is_directory(bundled));
  for (Task task : kAllTasks) {
    CATCH_DYNAMIC_SECTION(TaskName(task)) {
      CheckMixes(task, bundled);
      CheckMixes(task, *generated);
    }
  }
}

}  // namespace
}  // namespace dnaserve::worker
