// PredictRequest.result_format through the real dnaserve-worker and the trained promoter-human
// package (worker/packages): the field travels over gRPC, and the reply carries only what the
// format asks for. Prints the size of each reply, the figures of BENCHMARKS.md section L.
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "common/task.h"
#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_process.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;
using testing::WorkerProcess;

std::string PackagesDir() { return dnaserve::testing::SourceDir() + "/worker/packages"; }

v1::PredictRequest PromoterRequest(int64_t length, v1::ResultFormat format) {
  v1::PredictRequest request;
  request.set_model("promoter-human");
  request.set_sequence(testing::RandomBases(length, 29));
  request.set_sequence_name("chr20");
  request.mutable_promoter()->set_threshold(0.5);
  request.set_result_format(format);
  return request;
}

// What differs between two calls of the same input: the timings.
v1::PredictResult WithoutTimings(v1::PredictResult result) {
  result.clear_cold_start();
  result.clear_model_load_time_ms();
  result.clear_inference_time_ms();
  return result;
}

// Bytes of the reply's result message on the wire (the gRPC frame adds 5 more).
size_t ReplyBytes(const v1::PredictResult& result) {
  v1::PredictEvent event;
  *event.mutable_result() = result;
  return event.ByteSizeLong();
}

CATCH_TEST_CASE("worker over gRPC: result_format trims the promoter reply, 2 kb and 100 kb",
                "[grpc][result_format]") {
  CATCH_REQUIRE(fs::is_directory(PackagesDir() + "/promoter-human"));
  CATCH_REQUIRE(fs::exists(testing::WorkerBinary()));
  WorkerProcess worker;
  CATCH_REQUIRE(worker.Start(Task::kPromoter, PackagesDir()));
  v1::PredictResult warm_up;
  CATCH_REQUIRE(worker.Predict(PromoterRequest(2000, v1::RESULT_FORMAT_JSON), &warm_up).ok());

  const std::map<v1::ResultFormat, std::string> names = {
      {v1::RESULT_FORMAT_UNSPECIFIED, "unset"},
      {v1::RESULT_FORMAT_JSON, "json"},
      {v1::RESULT_FORMAT_BEDGRAPH, "bedgraph"},
      {v1::RESULT_FORMAT_BED, "bed"}};
  for (int64_t length : {2000, 100000}) {
    CATCH_INFO(length << " bp");
    std::map<v1::ResultFormat, v1::PredictResult> replies;
    for (const auto& [format, name] : names) {
      CATCH_REQUIRE(worker.Predict(PromoterRequest(length, format), &replies[format]).ok());
    }
    const v1::PredictResult& unset = replies[v1::RESULT_FORMAT_UNSPECIFIED];
    const v1::PredictResult& json = replies[v1::RESULT_FORMAT_JSON];
    const v1::PredictResult& bedgraph = replies[v1::RESULT_FORMAT_BEDGRAPH];
    const v1::PredictResult& bed = replies[v1::RESULT_FORMAT_BED];

    // Unset: as before the field, the bedGraph twice beside the windows.
    CATCH_REQUIRE(unset.tracks().count("promoter") == 1);
    CATCH_CHECK(unset.tracks().at("promoter") == unset.formats().at("bedgraph"));
    CATCH_CHECK(unset.promoter().windows_size() == unset.windows_processed());

    // JSON: the same less the copy no caller reads.
    v1::PredictResult expected = WithoutTimings(unset);
    expected.mutable_tracks()->clear();
    CATCH_CHECK(google::protobuf::util::MessageDifferencer::Equals(WithoutTimings(json), expected));

    // A text format: that text alone, the same bytes as in the full reply.
    CATCH_CHECK(bedgraph.formats_size() == 1);
    CATCH_CHECK(bedgraph.formats().at("bedgraph") == unset.formats().at("bedgraph"));
    CATCH_CHECK(bed.formats_size() == 1);
    CATCH_CHECK(bed.formats().at("bed") == unset.formats().at("bed"));
    for (const v1::PredictResult* text : {&bedgraph, &bed}) {
      CATCH_CHECK(text->tracks().empty());
      CATCH_CHECK(text->result_case() == v1::PredictResult::RESULT_NOT_SET);
      CATCH_CHECK(text->windows_processed() == unset.windows_processed());
    }

    CATCH_CHECK(ReplyBytes(json) < ReplyBytes(unset));
    CATCH_CHECK(ReplyBytes(bedgraph) < ReplyBytes(json));
    std::cout << "reply bytes, promoter-human, " << length << " bp (" << unset.windows_processed()
              << " windows):";
    for (const auto& [format, name] : names) {
      std::cout << " " << name << " " << ReplyBytes(replies[format]);
    }
    std::cout << "\n";
  }
}

}  // namespace
}  // namespace dnaserve::worker
