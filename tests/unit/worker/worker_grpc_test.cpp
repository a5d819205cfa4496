// The dnaserve-worker binary as a child process on generated model packages, driven over a real
// gRPC channel: models list, streamed predictions for every task, cold and warm starts, error
// statuses, health, cancellation and graceful shutdown.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "proto/status_codec.h"
#include "tests/support/test_env.h"
#include "tests/support/test_files.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

using testing::RandomBases;
using testing::RequestFor;

namespace fs = std::filesystem;
using dnaserve::testing::ChildProcess;
using testing::ReadFile;

using testing::WorkerBinary;
using testing::WorkerProcess;

struct Call {
  grpc::Status status;
  std::vector<v1::Progress> progress;
  std::optional<v1::PredictResult> result;
};

Call Predict(WorkerProcess& worker, const v1::PredictRequest& request,
             const std::string& request_id = "req-test") {
  Call call;
  grpc::ClientContext context;
  context.AddMetadata("x-request-id", request_id);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto reader = worker.stub().Predict(&context, request);
  v1::PredictEvent event;
  while (reader->Read(&event)) {
    if (event.has_progress()) call.progress.push_back(event.progress());
    if (event.has_result()) call.result = event.result();
  }
  call.status = reader->Finish();
  return call;
}

// Windows a 10,000 bp request runs (expression: its one 9,198 bp window).
int ExpectedWindows(Task task) {
  switch (task) {
    case Task::kPromoter:
      return 9;  // 2,000 bp every 1,000 bp
    case Task::kSplice:
      return 1;  // one padded 15,000 bp window
    case Task::kEnhancer:
      return 41;  // ceil(10,000 / 249)
    case Task::kChromatin:
      return 46;  // (10,000 - 1,000) / 200 + 1
    case Task::kAnnotation:
      return 10;  // 5 windows, forward + reverse complement
    case Task::kExpression:
      return 1;
  }
  return 0;
}

const char* ModelId(Task task) {
  switch (task) {
    case Task::kPromoter:
      return "promoter-human-tiny";
    case Task::kSplice:
      return "splice-human-tiny";
    case Task::kEnhancer:
      return "enhancer-tiny";
    case Task::kChromatin:
      return "chromatin-human-tiny";
    case Task::kAnnotation:
      return "annotation-human-tiny";
    case Task::kExpression:
      return "expression-human-tiny";
  }
  return "";
}

CATCH_TEST_CASE("worker over gRPC: every task lists its model and predicts, cold then warm",
                "[grpc]") {
  REQUIRE_MODELS_OR_SKIP(models);
  for (Task task : kAllTasks) {
    CATCH_INFO("task " << TaskName(task));
    WorkerProcess worker;
    CATCH_REQUIRE(worker.Start(task, *models));

    grpc::ClientContext list_context;
    v1::ListModelsResponse list;
    CATCH_REQUIRE(worker.stub().ListModels(&list_context, {}, &list).ok());
    CATCH_CHECK(list.task() == static_cast<v1::Task>(static_cast<int>(task) + 1));
    CATCH_REQUIRE(list.models_size() == 1);
    const v1::ModelInfo& info = list.models(0);
    CATCH_CHECK(info.id() == ModelId(task));
    CATCH_CHECK(info.is_default());
    CATCH_CHECK_FALSE(info.trained());
    CATCH_CHECK(info.description().find("Untrained weights (random initialisation, seed") !=
                std::string::npos);
    CATCH_CHECK(info.trained_window_bp() == (task == Task::kExpression ? 9198 : 0));
    CATCH_CHECK(info.context_window_bp() > 0);

    const v1::PredictRequest request = RequestFor(task, 10000);
    Call cold = Predict(worker, request, "req-cold-" + std::string(TaskName(task)));
    CATCH_REQUIRE(cold.status.ok());
    CATCH_REQUIRE(cold.result.has_value());
    CATCH_CHECK(cold.result->model() == ModelId(task));
    CATCH_CHECK(cold.result->cold_start());
    CATCH_CHECK(cold.result->model_load_time_ms() >= 1);
    CATCH_CHECK(cold.result->windows_processed() == ExpectedWindows(task));
    CATCH_REQUIRE_FALSE(cold.progress.empty());
    CATCH_CHECK(cold.progress.back().windows_done() == ExpectedWindows(task));
    CATCH_CHECK(cold.progress.back().windows_total() == ExpectedWindows(task));
    for (size_t i = 1; i < cold.progress.size(); ++i) {
      CATCH_CHECK(cold.progress[i].windows_done() > cold.progress[i - 1].windows_done());
    }
    std::set<std::string> formats;
    for (const auto& [name, text] : cold.result->formats()) {
      formats.insert(name);
      CATCH_CHECK_FALSE(text.empty());
    }
    std::set<std::string> expected;
    for (OutputFormat f : SupportedFormats(task)) {
      if (f != OutputFormat::kJson) expected.insert(std::string(FormatName(f)));
    }
    CATCH_CHECK(formats == expected);
    CATCH_CHECK(cold.result->result_case() ==
                static_cast<v1::PredictResult::ResultCase>(static_cast<int>(task) + 10));

    Call warm = Predict(worker, request, "req-warm");
    CATCH_REQUIRE(warm.status.ok());
    CATCH_CHECK_FALSE(warm.result->cold_start());
    CATCH_CHECK(warm.result->model_load_time_ms() == 0);
    // Same input, same untrained weights: the same answer.
    for (const auto& [name, text] : cold.result->formats()) {
      CATCH_CHECK(warm.result->formats().at(name) == text);
    }

    if (task == Task::kExpression) {
      v1::PredictRequest other = request;
      other.mutable_expression()->set_description("fetal brain, female");
      Call brain = Predict(worker, other);
      CATCH_REQUIRE(brain.status.ok());
      CATCH_CHECK(brain.result->expression().expression_log_tpm() !=
                  cold.result->expression().expression_log_tpm());
    }

    const std::string log = worker.Log();
    CATCH_CHECK(log.find("\"request_id\":\"req-cold-" + std::string(TaskName(task)) + "\"") !=
                std::string::npos);
    CATCH_CHECK(log.find(request.sequence().substr(5000, 40)) == std::string::npos);
    worker.process().Stop();
  }
}

CATCH_TEST_CASE("worker: a second worker given a taken address fails to listen, never shares it",
                "[grpc]") {
  REQUIRE_MODELS_OR_SKIP(models);
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-taken-port");
  dnaserve::testing::WorkerLaunch launch;
  launch.task = "splice";
  launch.models_dir = *models;
  launch.log_path = dir + "/first.log";
  dnaserve::testing::LaunchedWorker first;
  CATCH_REQUIRE(first.Start(std::move(launch)));
  CATCH_REQUIRE(first.WaitUntilListening(std::chrono::seconds(60)));

  // With gRPC's default SO_REUSEPORT both would listen and split the connections between them.
  dnaserve::testing::ChildProcess second;
  CATCH_REQUIRE(second.Start({WorkerBinary(), "--task", "promoter", "--listen", first.address(),
                              "--models-dir", *models},
                             {}, dir + "/second.log"));
  const std::optional<int> exit_code = second.WaitExit(std::chrono::seconds(60));
  CATCH_REQUIRE(exit_code.has_value());
  CATCH_CHECK(*exit_code != 0);
  CATCH_CHECK(dnaserve::testing::ReadFile(dir + "/second.log").find("listen_failed") !=
              std::string::npos);
  CATCH_CHECK(first.process().Running());
}

CATCH_TEST_CASE("worker over gRPC: health, unknown model, invalid input, record cap", "[grpc]") {
  REQUIRE_MODELS_OR_SKIP(models);
  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kSplice, *models));

  // grpc.health.v1.Health/Check with an empty request; SERVING is field 1 = 1.
  grpc::GenericStub generic(worker.channel());
  grpc::ClientContext health_context;
  grpc::Slice empty_message;  // HealthCheckRequest{service: ""} encodes to zero bytes
  grpc::ByteBuffer health_request(&empty_message, 1);
  grpc::ByteBuffer health_response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&health_context, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                    &health_request, &health_response, [&](grpc::Status s) { done.set_value(s); });
  CATCH_REQUIRE(done.get_future().get().ok());
  std::vector<grpc::Slice> slices;
  CATCH_REQUIRE(health_response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  CATCH_CHECK(bytes == std::string("\x08\x01", 2));

  v1::PredictRequest request = RequestFor(Task::kSplice, 20000);
  request.set_model("splice-nope");
  Call unknown = Predict(worker, request);
  CATCH_CHECK(unknown.status.error_code() == grpc::StatusCode::NOT_FOUND);
  CATCH_CHECK(FromGrpcStatus(unknown.status).code() == ErrorCode::kModelNotFound);

  request.set_model("");  // the default model
  request.set_sequence("ACGTNNX");
  Call invalid = Predict(worker, request);
  CATCH_CHECK(invalid.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CATCH_CHECK(FromGrpcStatus(invalid.status).code() == ErrorCode::kValidationFailed);

  v1::PredictRequest wrong_task = RequestFor(Task::kPromoter, 1000);
  Call wrong = Predict(worker, wrong_task);
  CATCH_CHECK(FromGrpcStatus(wrong.status).code() == ErrorCode::kTaskNotSupportedByModel);

  v1::PredictRequest capped = RequestFor(Task::kSplice, 40000);
  capped.mutable_splice()->set_threshold(0.0001);
  capped.mutable_splice()->set_max_sites(100);
  Call cap = Predict(worker, capped);
  CATCH_CHECK_FALSE(cap.result.has_value());
  const Status status = FromGrpcStatus(cap.status);
  CATCH_CHECK(status.code() == ErrorCode::kValidationFailed);
  const auto* details = std::get_if<RecordCapDetails>(&status.details());
  CATCH_REQUIRE(details != nullptr);
  CATCH_CHECK(details->record_count > 100);
  CATCH_CHECK(details->maximum_records == 100);
  CATCH_CHECK(details->threshold == 0.0001);
  CATCH_CHECK(cap.progress.empty());  // the cap trips inside the first window

  // The same request under the real cap succeeds and counts its sites.
  capped.mutable_splice()->set_threshold(0.5);
  capped.mutable_splice()->set_max_sites(20000);
  Call fine = Predict(worker, capped);
  CATCH_REQUIRE(fine.status.ok());
  CATCH_CHECK(fine.result->windows_processed() == 3);
  for (const auto& site : fine.result->splice().sites()) {
    CATCH_CHECK(site.end() - site.start() == 6);
    CATCH_CHECK(site.score() >= 0.5);
  }
}

CATCH_TEST_CASE(
    "worker over gRPC: a package that cannot load answers model_loading, then "
    "recovers",
    "[grpc]") {
  REQUIRE_MODELS_OR_SKIP(models);
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-broken-models");
  fs::copy(*models + "/promoter-human-tiny", dir + "/promoter-human-tiny",
           fs::copy_options::recursive);
  testing::WriteFile(dir + "/promoter-human-tiny/model.pt", "not a TorchScript archive");
  fs::create_directory(dir + "/promoter-bad-manifest");
  testing::WriteFile(dir + "/promoter-bad-manifest/manifest.json", "{\"task\": \"promoter\"");

  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kPromoter, dir));
  CATCH_CHECK(worker.WaitForLog("model_package_rejected", std::chrono::seconds(5)));
  CATCH_CHECK(worker.Log().find("promoter-bad-manifest: manifest.json: not valid JSON") !=
              std::string::npos);
  grpc::ClientContext list_context;
  v1::ListModelsResponse list;
  CATCH_REQUIRE(worker.stub().ListModels(&list_context, {}, &list).ok());
  CATCH_REQUIRE(list.models_size() == 1);  // the broken manifest is skipped

  const v1::PredictRequest request = RequestFor(Task::kPromoter, 5000);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Call call = Predict(worker, request);
    CATCH_CHECK(call.status.error_code() == grpc::StatusCode::UNAVAILABLE);
    const Status status = FromGrpcStatus(call.status);
    CATCH_CHECK(status.code() == ErrorCode::kModelLoading);
    CATCH_CHECK(status.message().find("model 'promoter-human-tiny' could not be loaded") !=
                std::string::npos);
    CATCH_CHECK(status.retry_after_seconds() == 30);
  }
  // Each request retried the load.
  const std::string log = worker.Log();
  size_t failures = 0;
  for (size_t at = log.find("model_load_failed"); at != std::string::npos;
       at = log.find("model_load_failed", at + 1)) {
    ++failures;
  }
  CATCH_CHECK(failures == 2);

  fs::copy_file(*models + "/promoter-human-tiny/model.pt", dir + "/promoter-human-tiny/model.pt",
                fs::copy_options::overwrite_existing);
  Call repaired = Predict(worker, request);
  CATCH_REQUIRE(repaired.status.ok());
  CATCH_CHECK(repaired.result->cold_start());
  CATCH_CHECK(repaired.result->windows_processed() == 4);
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("worker over gRPC: cancellation stops the run and SIGTERM shuts down cleanly",
                "[grpc]") {
  REQUIRE_MODELS_OR_SKIP(models);
  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kChromatin, *models));

  // 500 kb = 2,496 windows in batches of 16: cancel after the first progress event.
  v1::PredictRequest big = RequestFor(Task::kChromatin, 500000);
  grpc::ClientContext context;
  context.AddMetadata("x-request-id", "req-cancel");
  auto reader = worker.stub().Predict(&context, big);
  v1::PredictEvent event;
  CATCH_REQUIRE(reader->Read(&event));
  CATCH_CHECK(event.has_progress());
  CATCH_CHECK(event.progress().windows_total() == 2496);
  context.TryCancel();
  while (reader->Read(&event)) {
  }
  CATCH_CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  CATCH_CHECK(worker.WaitForLog("\"event\":\"predict_cancelled\",\"request_id\":\"req-cancel\"",
                                std::chrono::seconds(10)));

  Call after = Predict(worker, RequestFor(Task::kChromatin, 2000));
  CATCH_REQUIRE(after.status.ok());
  CATCH_CHECK_FALSE(after.result->cold_start());

  // Nothing is in flight, so the worker must exit by itself (status 0) well inside its 10 s
  // shutdown grace; the bound is generous because this box may be loaded, not because
  // shutdown is slow (it takes well under a second when idle).
  CATCH_CHECK(worker.process().Stop(std::chrono::seconds(30)));
  CATCH_CHECK_FALSE(worker.process().Running());
  CATCH_CHECK(worker.Log().find("\"event\":\"shutdown_complete\"") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::worker
