// Public routes, authentication and the envelope headers, over real HTTP.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {
const std::regex kUuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
}

TEST_CASE("public routes answer without a key", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);

  SECTION("health reports healthy and a dated version, with a request id") {
    auto r = svc->Get("/health");
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["status"].GetString()) == "healthy");
    std::string version = (*doc)["version"].GetString();
    CHECK(std::regex_match(version, std::regex(R"(^\d{4}\.\d{2}\.\d{2}\.\d+ \(.+\)$)")));
    REQUIRE(r.Header("x-request-id"));
    CHECK(std::regex_match(*r.Header("x-request-id"), kUuid));
  }

  SECTION("the OpenAPI document carries the health version and the root extensions") {
    auto health = ParseJson(svc->Get("/health").body);
    auto r = svc->Get("/v1/openapi.json");
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["info"]["version"].GetString()) ==
          std::string((*health)["version"].GetString()));
    CHECK((*doc)["x-contract-revision"].IsInt());
    CHECK((*doc)["x-rate-limit-burst-divisor"].GetInt() == 6);
    // x-models comes from the live roster the workers reported.
    const auto& op = (*doc)["paths"]["/v1/tasks/splice/predict"]["post"];
    REQUIRE(op.HasMember("x-models"));
    CHECK(op["x-models"]["models"].Size() >= 1);
  }

  SECTION("docs and redoc render from local assets") {
    for (std::string page : {"/docs", "/redoc"}) {
      auto r = svc->Get(page);
      REQUIRE(r.status == 200);
      CHECK(r.Header("content-type")->find("text/html") != std::string::npos);
      CHECK(r.body.find("/v1/openapi.json") != std::string::npos);
      CHECK(r.body.find("https://") == std::string::npos);
    }
    auto asset = svc->Get("/docs/assets/swagger-ui-bundle.js");
    CHECK(asset.status == 200);
    CHECK(asset.body.size() > 10000);
  }

  SECTION("models list works with and without a key, but not with a bad one") {
    auto anonymous = svc->Get("/v1/tasks/promoter/models");
    REQUIRE(anonymous.status == 200);
    auto doc = ParseJson(anonymous.body);
    CHECK(std::string((*doc)["task"].GetString()) == "promoter");
    REQUIRE((*doc)["models"].Size() >= 1);
    const auto& first = (*doc)["models"][0];
    CHECK(first["bio_spec"]["request_max_bp"].GetInt() == 500000);
    CHECK(first.HasMember("is_default"));
    CHECK(svc->Get("/v1/tasks/promoter/models", svc->keys().alice).status == 200);
    CHECK(svc->Get("/v1/tasks/promoter/models", "dns_not-a-real-key").status == 401);
    CHECK(svc->Get("/v1/tasks/nosuchtask/models").status == 404);
  }

  SECTION("expression advertises its fixed trained window") {
    auto doc = ParseJson(svc->Get("/v1/tasks/expression/models").body);
    CHECK((*doc)["models"][0]["bio_spec"]["trained_window_bp"].GetInt() == 9198);
    auto promoter = ParseJson(svc->Get("/v1/tasks/promoter/models").body);
    CHECK((*promoter)["models"][0]["bio_spec"]["trained_window_bp"].IsNull());
  }
}

TEST_CASE("authentication failures use the error envelope and RFC 6750 hints", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string body = MinimalBody("promoter");

  auto check_envelope = [](const HttpResult& r, long status, const std::string& code) {
    REQUIRE(r.status == status);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == code);
    REQUIRE(r.Header("x-request-id"));
    CHECK(std::string((*doc)["error"]["request_id"].GetString()) == *r.Header("x-request-id"));
  };

  SECTION("missing header") {
    auto r = svc->Post("/v1/tasks/promoter/predict", body);
    check_envelope(r, 401, "unauthorized");
    REQUIRE(r.Header("www-authenticate"));
    CHECK(*r.Header("www-authenticate") == "Bearer error=\"invalid_request\"");
  }
  SECTION("malformed header") {
    auto r = svc->Post("/v1/tasks/promoter/predict", body, "",
                       {"Authorization: Basic dXNlcjpwYXNz"});
    check_envelope(r, 401, "unauthorized");
    CHECK(*r.Header("www-authenticate") == "Bearer error=\"invalid_request\"");
  }
  SECTION("unknown key") {
    auto r = svc->Post("/v1/tasks/promoter/predict", body, "dns_unknownunknownunknown");
    check_envelope(r, 401, "unauthorized");
    CHECK(*r.Header("www-authenticate") == "Bearer error=\"invalid_token\"");
  }
  SECTION("disabled key") {
    auto r = svc->Post("/v1/tasks/promoter/predict", body, svc->keys().disabled);
    check_envelope(r, 403, "forbidden");
  }
  SECTION("jobs routes need a key") {
    check_envelope(svc->Get("/v1/tasks/jobs"), 401, "unauthorized");
  }
  SECTION("unknown route") {
    check_envelope(svc->Get("/v2/whatever", svc->keys().alice), 404, "not_found");
  }
}

TEST_CASE("logs have one structured line per request and never the sequence", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  // Sequences no other test sends, so any trace of them in a log is this test's.
  const std::string marker = RandomDna(600, 424242);
  auto r = svc->Post("/v1/tasks/promoter/predict",
                     "{\"sequence\": \"" + marker + "\", \"sequence_name\": \"log-probe\"}",
                     svc->keys().alice);
  REQUIRE(r.status == 200);
  std::string request_id = *r.Header("x-request-id");

  // A full run's worth of other traffic, each carrying data that must never reach a log: an
  // async job, a text track, a body refused for its alphabet, an expression description, a key
  // that is not registered, and malformed JSON.
  const std::string async_marker = RandomDna(400, 515151);
  const std::string track_marker = RandomDna(500, 616161);
  const std::string refused_marker = RandomDna(500, 717171);
  const std::string description = "log-probe description 9f3a7c, adult liver tissue";
  const std::string wrong_key = "dns_never-issued-key-7d41b2";
  auto submitted = svc->Post("/v1/tasks/enhancer/predict",
                             "{\"sequence\": \"" + async_marker + "\"}", svc->keys().alice,
                             {"Prefer: respond-async"});
  REQUIRE(submitted.status == 202);
  CHECK(svc->Post("/v1/tasks/promoter/predict?format=bed",
                  "{\"sequence\": \"" + track_marker + "\"}", svc->keys().alice)
            .status == 200);
  CHECK(svc->Post("/v1/tasks/promoter/predict",
                  "{\"sequence\": \"" + refused_marker + "XYZ\"}", svc->keys().alice)
            .status == 422);
  const std::string window = RandomDna(9198, 818181);
  CHECK(svc->Post("/v1/tasks/expression/predict",
                  "{\"sequence\": \"" + window + "\", \"options\": {\"description\": \"" +
                      description + "\"}}",
                  svc->keys().alice)
            .status == 200);
  CHECK(svc->Post("/v1/tasks/promoter/predict", "{\"sequence\": \"" + marker + "\"}", wrong_key)
            .status == 401);
  CHECK(svc->Post("/v1/tasks/promoter/predict", "{\"sequence\": \"" + marker, svc->keys().alice)
            .status == 400);
  std::string job_id = (*ParseJson(submitted.body))["data"]["job_id"].GetString();
  for (int i = 0; i < 600 && svc->Get("/v1/tasks/jobs/" + job_id, svc->keys().alice).status == 202;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::string gateway_log;
  for (int i = 0; i < 50 && gateway_log.find(request_id) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gateway_log = read(svc->log_dir() + "/gateway.log");
  }
  // The gateway's request line: request id, client, method, path, status, duration.
  size_t at = gateway_log.find("\"request_id\":\"" + request_id + "\"");
  REQUIRE(at != std::string::npos);
  std::string line = gateway_log.substr(gateway_log.rfind('\n', at) + 1);
  line = line.substr(0, line.find('\n'));
  CHECK(line.find("\"event\":\"request\"") != std::string::npos);
  CHECK(line.find("\"client_id\":\"alice\"") != std::string::npos);
  CHECK(line.find("\"method\":\"POST\"") != std::string::npos);
  CHECK(line.find("\"status\":200") != std::string::npos);
  CHECK(line.find("\"duration_ms\":") != std::string::npos);
  // The worker logged the same request id, passed as gRPC metadata.
  std::string promoter_log = read(svc->log_dir() + "/worker-promoter.log");
  CHECK(promoter_log.find(request_id) != std::string::npos);

  // Every log of the run: no sequence (not even a 30-base stretch), no description, no key.
  std::vector<std::pair<std::string, std::string>> logs = {{"gateway", gateway_log}};
  for (const char* task :
       {"promoter", "splice", "enhancer", "chromatin", "annotation", "expression"}) {
    logs.emplace_back(task, read(svc->log_dir() + "/worker-" + std::string(task) + ".log"));
  }
  for (const auto& [name, log] : logs) {
    INFO("log of " << name);
    CHECK_FALSE(log.empty());
    for (const std::string* sequence :
         {&marker, &async_marker, &track_marker, &refused_marker, &window}) {
      for (size_t offset : {size_t{0}, size_t{200}, sequence->size() - 30}) {
        CHECK(log.find(sequence->substr(offset, 30)) == std::string::npos);
      }
    }
    CHECK(log.find("9f3a7c") == std::string::npos);
    CHECK(log.find(svc->keys().alice) == std::string::npos);
    CHECK(log.find(wrong_key) == std::string::npos);
    CHECK(log.find("never-issued") == std::string::npos);
    CHECK(log.find("Bearer") == std::string::npos);
    CHECK(log.find("\"sequence\"") == std::string::npos);  // no request body fragment
  }
}
