// Dynamic batching in the real dnaserve-worker binary, over a real gRPC channel: concurrent
// requests share forward passes and get the results they get alone, a tiny queue sheds whole
// requests with service_unavailable + a retry hint, and a cancelled request's queued pass never
// runs. The
// worker's batching_stats log line (written at shutdown) shows what the batcher did.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.grpc.pb.h"
#include "proto/status_codec.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RequestFor;

using testing::WorkerBinary;

// One promoter worker with extra flags, on a free loopback port.
class BatchingWorker {
 public:
  bool Start(const std::string& models_dir, const std::vector<std::string>& flags) {
    return worker_.Start(Task::kPromoter, models_dir, flags);
  }
  v1::Worker::Stub& stub() { return worker_.stub(); }
  // SIGTERM, then the value of `field` in the batching_stats line the worker logs on its way out.
  int64_t StopAndReadStat(const std::string& field) {
    worker_.process().Stop();
    const std::string log = worker_.Log();
    std::smatch m;
    const std::regex line("\"event\":\"batching_stats\"[^\n]*");
    if (!std::regex_search(log, m, line)) return -1;
    const std::string stats = m.str();
    std::smatch value;
    if (!std::regex_search(stats, value, std::regex("\"" + field + "\":([0-9]+)"))) return -1;
    return std::stoll(value[1].str());
  }

 private:
  testing::WorkerProcess worker_;
};

struct Outcome {
  grpc::Status status;
  std::optional<v1::PredictResult> result;
  std::vector<int> progress_done;
};

Outcome Predict(v1::Worker::Stub& stub, const v1::PredictRequest& request) {
  Outcome out;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  auto reader = stub.Predict(&context, request);
  v1::PredictEvent event;
  while (reader->Read(&event)) {
    if (event.has_progress()) out.progress_done.push_back(event.progress().windows_done());
    if (event.has_result()) out.result = event.result();
  }
  out.status = reader->Finish();
  return out;
}

std::vector<Outcome> PredictConcurrently(v1::Worker::Stub& stub,
                                         const std::vector<v1::PredictRequest>& requests) {
  std::vector<std::future<Outcome>> futures;
  for (const auto& r : requests) {
    futures.push_back(std::async(std::launch::async, [&stub, &r] { return Predict(stub, r); }));
  }
  std::vector<Outcome> outcomes;
  for (auto& f : futures) outcomes.push_back(f.get());
  return outcomes;
}

// The same prediction, to the bit, except for timings: every forward pass has the same number
// of rows (--batch-rows-per-pass), so a row's floats do not depend on what shares its pass.
void CheckSameResult(v1::PredictResult a, v1::PredictResult b) {
  for (auto* r : {&a, &b}) {
    r->clear_inference_time_ms();
    r->clear_cold_start();
    r->clear_model_load_time_ms();
  }
  CATCH_CHECK(a.windows_processed() == b.windows_processed());
  CATCH_CHECK(a.promoter().windows_size() == b.promoter().windows_size());
  google::protobuf::util::MessageDifferencer differencer;
  std::string report;
  differencer.ReportDifferencesToString(&report);
  CATCH_CHECK(differencer.Compare(a, b));
  CATCH_CHECK(report == "");
}

CATCH_TEST_CASE("batching over gRPC: concurrent requests share passes and get their own results",
                "[grpc][batching]") {
  REQUIRE_MODELS_OR_SKIP(models);
  BatchingWorker worker;
  // A 20 ms meeting window makes stacking certain without slowing the test much; passes of 8
  // rows, the promoter runner's calls, so that every call is one piece.
  CATCH_REQUIRE(
      worker.Start(*models, {"--batch-max-wait-us", "20000", "--batch-rows-per-pass", "8"}));

  // Eight distinct 10 kb sequences (9 windows: passes of 8 + 1) and two shorter ones.
  std::vector<v1::PredictRequest> requests;
  for (unsigned seed = 1; seed <= 8; ++seed)
    requests.push_back(RequestFor(Task::kPromoter, 10000, seed));
  requests.push_back(RequestFor(Task::kPromoter, 3000, 21));  // 2 windows
  requests.push_back(RequestFor(Task::kPromoter, 700, 22));   // 1 padded window

  std::vector<v1::PredictResult> alone;
  for (const auto& r : requests) {
    Outcome out = Predict(worker.stub(), r);
    CATCH_REQUIRE(out.status.ok());
    CATCH_REQUIRE(out.result.has_value());
    alone.push_back(*out.result);
  }
  const std::vector<Outcome> together = PredictConcurrently(worker.stub(), requests);
  int64_t forward_calls = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    CATCH_INFO("request " << i);
    CATCH_REQUIRE(together[i].status.ok());
    CATCH_REQUIRE(together[i].result.has_value());
    CheckSameResult(alone[i], *together[i].result);
    // Progress counts windows actually scored, batch by batch, up to all of them.
    const int windows = static_cast<int>(alone[i].windows_processed());
    CATCH_REQUIRE_FALSE(together[i].progress_done.empty());
    CATCH_CHECK(together[i].progress_done.back() == windows);
    forward_calls += (windows + 7) / 8;
  }
  forward_calls *= 2;  // alone, then together
  CATCH_CHECK(worker.StopAndReadStat("calls_run") == forward_calls);
}

CATCH_TEST_CASE("batching over gRPC: stacked passes happen under concurrency", "[grpc][batching]") {
  REQUIRE_MODELS_OR_SKIP(models);
  BatchingWorker worker;
  // Passes of 16 rows: two of the promoter runner's 8-window calls fill one.
  CATCH_REQUIRE(
      worker.Start(*models, {"--batch-max-wait-us", "20000", "--batch-rows-per-pass", "16"}));
  std::vector<v1::PredictRequest> requests;
  for (unsigned seed = 1; seed <= 8; ++seed)
    requests.push_back(RequestFor(Task::kPromoter, 10000, seed));
  for (const Outcome& out : PredictConcurrently(worker.stub(), requests)) {
    CATCH_CHECK(out.status.ok());
  }
  CATCH_CHECK(worker.StopAndReadStat("merged_passes") >= 1);
}

CATCH_TEST_CASE(
    "batching over gRPC: a full worker sheds whole requests with service_unavailable and a "
    "retry hint",
    "[grpc][batching]") {
  REQUIRE_MODELS_OR_SKIP(models);
  BatchingWorker worker;
  // Seats for one request at a time: while one runs, the others are shed at their first pass.
  CATCH_REQUIRE(worker.Start(*models, {"--queue-max-bases", "1", "--batch-max-wait-us", "0"}));
  std::vector<v1::PredictRequest> requests;
  for (unsigned seed = 1; seed <= 12; ++seed)  // 29 windows each: 4 forward calls
    requests.push_back(RequestFor(Task::kPromoter, 30000, seed));

  int ok = 0;
  int refused = 0;
  for (int round = 0; round < 3 && refused == 0; ++round) {
    for (const Outcome& out : PredictConcurrently(worker.stub(), requests)) {
      if (out.status.ok()) {
        ++ok;
        continue;
      }
      ++refused;
      CATCH_INFO("message: " << out.status.error_message());
      // Refused as a whole, before any window ran: an admitted request is never cut off halfway.
      CATCH_CHECK(out.progress_done.empty());
      CATCH_CHECK(out.status.error_code() == grpc::StatusCode::UNAVAILABLE);
      v1::WorkerError details;
      CATCH_REQUIRE(details.ParseFromString(out.status.error_details()));
      CATCH_CHECK(details.code() == "service_unavailable");
      CATCH_CHECK(details.retry_after_seconds() == 1);
      CATCH_CHECK(out.status.error_message().find("at capacity") != std::string::npos);
      const Status mapped = FromGrpcStatus(out.status);
      CATCH_CHECK(mapped.code() == ErrorCode::kServiceUnavailable);
      CATCH_CHECK(mapped.retry_after_seconds() == std::optional<int64_t>(1));
    }
  }
  CATCH_CHECK(ok >= 1);
  CATCH_CHECK(refused >= 1);
  CATCH_CHECK(worker.StopAndReadStat("refused") == refused);
}

CATCH_TEST_CASE("batching over gRPC: a request cancelled while its pass waits never runs",
                "[grpc][batching]") {
  REQUIRE_MODELS_OR_SKIP(models);
  BatchingWorker worker;
  // A pass below budget (16 rows; the request's calls have 8 and 1) waits a full second for
  // company: the cancellation lands in that second.
  CATCH_REQUIRE(
      worker.Start(*models, {"--batch-max-wait-us", "1000000", "--batch-rows-per-pass", "16"}));
  Outcome warm = Predict(worker.stub(), RequestFor(Task::kPromoter, 500, 3));  // loads the model
  CATCH_REQUIRE(warm.status.ok());

  grpc::ClientContext context;
  auto reader = worker.stub().Predict(&context, RequestFor(Task::kPromoter, 10000, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  context.TryCancel();
  v1::PredictEvent event;
  bool got_result = false;
  while (reader->Read(&event)) got_result = got_result || event.has_result();
  CATCH_CHECK_FALSE(got_result);
  CATCH_CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  // Give the worker's handler time to notice (it polls every 10 ms) before stopping it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t calls_run = worker.StopAndReadStat("calls_run");
  CATCH_CHECK(calls_run == 1);  // the warm-up's one pass; none of the cancelled request's windows
}

CATCH_TEST_CASE("batching over gRPC: --no-batching serves the same results", "[grpc][batching]") {
  REQUIRE_MODELS_OR_SKIP(models);
  BatchingWorker batched;
  BatchingWorker plain;
  // Passes of 8 rows (the runner's calls): the batcher counts one call per forward call.
  CATCH_REQUIRE(batched.Start(*models, {"--batch-rows-per-pass", "8"}));
  CATCH_REQUIRE(plain.Start(*models, {"--no-batching", "--batch-rows-per-pass", "8"}));
  const v1::PredictRequest request = RequestFor(Task::kPromoter, 10000, 9);
  Outcome a = Predict(batched.stub(), request);
  Outcome b = Predict(plain.stub(), request);
  CATCH_REQUIRE(a.status.ok());
  CATCH_REQUIRE(b.status.ok());
  CheckSameResult(*a.result, *b.result);
  CATCH_CHECK(batched.StopAndReadStat("calls_run") == 2);
  CATCH_CHECK(plain.StopAndReadStat("calls_run") == -1);  // no batcher, no stats line
}

}  // namespace
}  // namespace dnaserve::worker
