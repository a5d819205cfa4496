// Results bounded and cheap to keep, over real HTTP against the real service: the chromatin
// response-size cap (422 with the record-cap details, sync and async), finished results served
// as stored gzip to clients that accept it (and decompressed to the others), and the per-client
// allowance on stored results through a second gateway with a small one: a tenant's newest
// results push out its own oldest (410, saying why), never another tenant's.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/jobs/result_codec.h"
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
  return GatewayRequest("GET", base, "/v1/tasks/jobs/" + job_id, headers);
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
  return GatewayRequest(
      "POST", base, "/v1/tasks/chromatin/predict",
      {"Authorization: Bearer " + key, "Content-Type: application/json", "Prefer: respond-async"},
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

TEST_CASE("a finished job is served as stored gzip to a client accepting it, decompressed to "
          "others",
          "[integration][results]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;
  auto submitted = Submit(svc->base_url(), ChromatinBody(5000, 0), key);
  REQUIRE(submitted.status == 202);
  const std::string job_id = JobIdOf(submitted);
  auto plain = WaitDone(svc->base_url(), job_id, key);
  REQUIRE(plain.status == 200);
  CHECK_FALSE(plain.Header("content-encoding"));
  CHECK(plain.Header("vary") == std::optional<std::string>("Accept-Encoding"));
  REQUIRE(ParseJson(plain.body)->IsObject());

  // libcurl is not asked to decode: the test sees the bytes on the wire.
  auto gz = Poll(svc->base_url(), job_id, key, {"Accept-Encoding: br;q=1, gzip;q=0.5"});
  REQUIRE(gz.status == 200);
  CHECK(gz.Header("content-encoding") == std::optional<std::string>("gzip"));
  CHECK(gz.Header("vary") == std::optional<std::string>("Accept-Encoding"));
  CHECK(gz.Header("content-type") == plain.Header("content-type"));
  CHECK(gz.Header("x-job-id") == std::optional<std::string>(job_id));
  REQUIRE(gz.body.size() > 2);
  CHECK(static_cast<unsigned char>(gz.body[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz.body[1]) == 0x8b);
  CHECK(gz.body.size() * 4 < plain.body.size());
  auto inflated = core::GzipDecompress(gz.body);
  REQUIRE(inflated.ok());
  CHECK(*inflated == plain.body);

  for (const char* refuses : {"Accept-Encoding: gzip;q=0", "Accept-Encoding: identity",
                              "Accept-Encoding: *;q=0", "Accept-Encoding: deflate"}) {
    INFO(refuses);
    auto r = Poll(svc->base_url(), job_id, key, {refuses});
    REQUIRE(r.status == 200);
    CHECK_FALSE(r.Header("content-encoding"));
    CHECK(r.body == plain.body);
  }
  // A small failed result (an error envelope) is stored as it is: no encoding either way.
  auto tiny = Submit(svc->base_url(), ChromatinBody(40000, 0), key);
  REQUIRE(tiny.status == 202);
  REQUIRE(WaitDone(svc->base_url(), JobIdOf(tiny), key).status == 422);
  auto envelope = Poll(svc->base_url(), JobIdOf(tiny), key, {"Accept-Encoding: gzip"});
  CHECK(envelope.status == 422);
  CHECK_FALSE(envelope.Header("content-encoding"));
  CHECK(ParseJson(envelope.body)->HasMember("error"));
}

TEST_CASE("the per-client result allowance evicts a tenant's own oldest results, never "
          "another's",
          "[integration][results]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string victim = svc->keys().bob;
  const std::string hostile = svc->keys().alice;
  // One result's stored (compressed) size, from a probe through the service's own gateway: the
  // same request gives the same result but for its ids, which have the same length.
  const std::string body = ChromatinBody(5000, 0, 11);
  auto probe = Submit(svc->base_url(), body, hostile);
  REQUIRE(probe.status == 202);
  REQUIRE(WaitDone(svc->base_url(), JobIdOf(probe), hostile).status == 200);
  const size_t stored =
      Poll(svc->base_url(), JobIdOf(probe), hostile, {"Accept-Encoding: gzip"}).body.size();
  REQUIRE(stored > 1000);

  // A gateway and a runner of their own (a Redis database of their own: the service's runner
  // must not store these results) whose clients may keep 2.5 such results. The runner stores
  // async results, so its allowance is the one that counts.
  const std::string redis_url = svc->redis_url() + "/2";
  const std::string allowance = std::to_string(stored * 5 / 2);
  ChildProcess runner;
  REQUIRE(StartRunner(&runner, redis_url, svc->workers_spec(),
                      svc->log_dir() + "/runner-small-allowance.log",
                      {{"DNASERVE_CLIENT_RESULT_BYTES", allowance}}));
  GatewayLaunch launch = svc->AnotherGateway(svc->log_dir() + "/gateway-small-allowance.log");
  launch.redis_url = redis_url;
  launch.env["DNASERVE_CLIENT_RESULT_BYTES"] = allowance;
  LaunchedGateway gateway;
  REQUIRE(gateway.Start(std::move(launch)));
  const std::string base = gateway.base_url();
  // Ready for chromatin jobs once its catalogue knows the chromatin models (not at /health).
  REQUIRE(WaitForModelLists(base, {"chromatin"}) == "");

  auto kept = Submit(base, body, victim);
  REQUIRE(kept.status == 202);
  REQUIRE(WaitDone(base, JobIdOf(kept), victim).status == 200);

  // The hostile tenant stores six results: its own oldest go.
  std::vector<std::string> hostile_jobs;
  for (int i = 0; i < 6; ++i) {
    auto submitted = Submit(base, body, hostile);
    REQUIRE(submitted.status == 202);
    hostile_jobs.push_back(JobIdOf(submitted));
    REQUIRE(WaitDone(base, hostile_jobs.back(), hostile).status == 200);
  }
  for (size_t i = 0; i + 2 < hostile_jobs.size(); ++i) {
    INFO("hostile job " << i);
    auto gone = Poll(base, hostile_jobs[i], hostile);
    CHECK(gone.status == 410);
    auto doc = ParseJson(gone.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "job_expired");
    CHECK(std::string((*doc)["error"]["message"].GetString()).find("make room") !=
          std::string::npos);
  }
  for (size_t i = hostile_jobs.size() - 2; i < hostile_jobs.size(); ++i) {
    CHECK(Poll(base, hostile_jobs[i], hostile).status == 200);
  }
  // The other tenant's result is untouched.
  CHECK(Poll(base, JobIdOf(kept), victim).status == 200);
  CHECK(gateway.process().Stop());
  CHECK(runner.Stop());
}

}  // namespace
}  // namespace dnaserve::testing
