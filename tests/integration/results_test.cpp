// Results bounded and cheap to keep, over real HTTP against the real service: the chromatin
// response-size cap (422 with the record-cap details, sync and async).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/service_fixture.h"

namespace dnaserve::testing {
namespace {

std::string ChromatinBody(size_t length, double threshold, unsigned seed = 7) {
  return "{\"sequence\": \"" + RandomDna(length, seed) +
         "\", \"options\": {\"threshold\": " + std::to_string(threshold) + "}}";
}

std::string JobIdOf(const HttpResult& submitted) {
  return (*ParseJson(submitted.body))["data"]["job_id"].GetString();
}

HttpResult Poll(const std::string& base, const std::string& job_id, const std::string& key,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> headers = {"Authorization: Bearer " + key};
  headers.insert(headers.end(), extra.begin(), extra.end());
  return HttpRequest("GET", base + "/v1/tasks/jobs/" + job_id, headers);
}

HttpResult WaitDone(const std::string& base, const std::string& job_id, const std::string& key) {
  HttpResult r;
  for (int i = 0; i < 600; ++i) {
    r = Poll(base, job_id, key);
    if (r.status != 202) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

HttpResult Submit(const std::string& base, const std::string& body, const std::string& key) {
  return HttpRequest("POST", base + "/v1/tasks/chromatin/predict",
                     {"Authorization: Bearer " + key, "Content-Type: application/json",
                      "Prefer: respond-async"},
                     body);
}

TEST_CASE("chromatin: more features above the threshold than the cap is a 422 with the "
          "record-cap details",
          "[integration][results]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;
  // 40,000 bp = 196 windows; at threshold 0 every one of the 919 features of the untrained
  // model scores above it: about 180,000 records, past the 100,000 cap.
  const std::string body = ChromatinBody(40000, 0);
  auto check = [](const HttpResult& r) {
    REQUIRE(r.status == 422);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "validation_failed");
    const auto& details = (*doc)["error"]["details"];
    CHECK(std::string(details["task"].GetString()) == "chromatin");
    CHECK(details["record_count"].GetInt64() > 100000);
    CHECK(details["maximum_records"].GetInt64() == 100000);
    CHECK(details["sequence_length"].GetInt64() == 40000);
    CHECK(details["threshold"].GetDouble() == 0.0);
    CHECK_FALSE(details.HasMember("errors"));
    CHECK(std::string((*doc)["error"]["message"].GetString()).find("raise options.threshold") !=
          std::string::npos);
  };
  SECTION("sync") { check(svc->Post("/v1/tasks/chromatin/predict", body, key)); }
  SECTION("async") {
    auto submitted = Submit(svc->base_url(), body, key);
    REQUIRE(submitted.status == 202);
    check(WaitDone(svc->base_url(), JobIdOf(submitted), key));
  }
  SECTION("under the cap the same threshold answers") {
    auto r = svc->Post("/v1/tasks/chromatin/predict", ChromatinBody(2000, 0), key);
    REQUIRE(r.status == 200);
    CHECK((*ParseJson(r.body))["data"]["summary"]["features_reported"].GetInt64() > 919);
  }
}

}  // namespace
}  // namespace dnaserve::testing
