// Error paths over real HTTP: admission failures, size limits, models, quotas, failing workers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

std::string Code(const HttpResult& r) {
  auto doc = ParseJson(r.body);
  REQUIRE(doc->HasMember("error"));
  return (*doc)["error"]["code"].GetString();
}

// Sends `bytes` to the gateway on a fresh connection; what it answers until it closes the
// connection (or 10 s pass), and whether it closed it.
std::pair<std::string, bool> RawExchange(const std::string& base_url, const std::string& bytes) {
  const int port = std::stoi(base_url.substr(base_url.rfind(':') + 1));
  const int fd = ConnectLoopback(port, std::chrono::seconds(10));
  REQUIRE(fd >= 0);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string reply;
  bool closed = false;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      closed = n == 0;
      break;
    }
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return {reply, closed};
}

}  // namespace

TEST_CASE("framing errors and repeated JSON keys are 400 bad_request", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;

  SECTION("two different Content-Length values: refused, the connection closed") {
    // Read by its first length, this body would be 422 (not a valid predict body); a proxy in
    // front may have read 40 bytes as the body, so the gateway must not pick either.
    const auto [reply, closed] = RawExchange(
        svc->base_url(),
        "POST /v1/tasks/promoter/predict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
            "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Content-Length: 40\r\n\r\n{}");
    INFO(reply);
    CHECK(reply.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(reply.find("\"code\":\"bad_request\"") != std::string::npos);
    CHECK(reply.find("more than one Content-Length") != std::string::npos);
    CHECK(closed);
  }
  SECTION("a key twice in the body, named with its location") {
    auto r = svc->Post(
        "/v1/tasks/promoter/predict",
        "{\"sequence\": \"" + RandomDna(400) + "\", \"sequence\": \"" + RandomDna(400, 9) + "\"}",
        key);
    REQUIRE(r.status == 400);
    CHECK(Code(r) == "bad_request");
    auto doc = ParseJson(r.body);
    const auto& err = (*doc)["error"]["details"]["errors"][0];
    CHECK(std::string(err["type"].GetString()) == "duplicate_key");
    REQUIRE(err["loc"].Size() == 2);
    CHECK(std::string(err["loc"][1].GetString()) == "sequence");
  }
}

TEST_CASE("admission errors", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;

  SECTION("two Authorization headers are 401 invalid_request, even when both are valid") {
    const std::string second = "Authorization: Bearer " + svc->keys().alice;
    for (const std::string path : {"/v1/tasks/jobs/00000000-0000-4000-8000-000000000000",
                                   "/v1/tasks/promoter/models"}) {
      INFO(path);
      auto r = svc->Get(path, key, {second});
      REQUIRE(r.status == 401);
      CHECK(Code(r) == "unauthorized");
      REQUIRE(r.Header("www-authenticate"));
      CHECK(*r.Header("www-authenticate") == "Bearer error=\"invalid_request\"");
    }
    // One of them is fine.
    CHECK(svc->Get("/v1/tasks/promoter/models", key).status == 200);
  }
  SECTION("unknown task") {
    auto r = svc->Post("/v1/tasks/telepathy/predict", MinimalBody("promoter"), key);
    CHECK(r.status == 404);
    CHECK(Code(r) == "not_found");
  }
  SECTION("malformed JSON") {
    auto r = svc->Post("/v1/tasks/promoter/predict", "{\"sequence\": ", key);
    CHECK(r.status == 400);
    CHECK(Code(r) == "bad_request");
  }
  SECTION("unknown option key") {
    auto r = svc->Post("/v1/tasks/promoter/predict",
                       "{\"sequence\": \"" + RandomDna(400) + "\", \"options\": {\"model\": \"x\"}}",
                       key);
    REQUIRE(r.status == 422);
    auto doc = ParseJson(r.body);
    const auto& err = (*doc)["error"]["details"]["errors"][0];
    CHECK(std::string(err["type"].GetString()) == "extra_forbidden");
    CHECK(std::string(err["loc"][2].GetString()) == "model");
  }
  SECTION("too short is 422 naming the bound and the length") {
    auto r = svc->Post("/v1/tasks/promoter/predict", "{\"sequence\": \"ACGT ACGT\"}", key);
    REQUIRE(r.status == 422);
    auto doc = ParseJson(r.body);
    std::string msg = (*doc)["error"]["details"]["errors"][0]["msg"].GetString();
    CHECK(msg.find("300") != std::string::npos);
    CHECK(msg.find("8") != std::string::npos);
  }
  SECTION("too long is 422, never 413") {
    auto r = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 500001), key);
    CHECK(r.status == 422);
  }
  SECTION("unknown model is 404 model_not_found listing the task's models") {
    auto r = svc->Post("/v1/tasks/promoter/predict",
                       "{\"sequence\": \"" + RandomDna(400) + "\", \"model\": \"nope\"}", key);
    REQUIRE(r.status == 404);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "model_not_found");
    CHECK((*doc)["error"]["details"]["available_models"].Size() >= 1);
  }
  SECTION("a model of another task is 422 task_not_supported_by_model") {
    auto models = ParseJson(svc->Get("/v1/tasks/splice/models").body);
    std::string splice_model = (*models)["default_model"].GetString();
    auto r = svc->Post("/v1/tasks/promoter/predict",
                       "{\"sequence\": \"" + RandomDna(400) + "\", \"model\": \"" + splice_model +
                           "\"}",
                       key);
    REQUIRE(r.status == 422);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "task_not_supported_by_model");
    CHECK(std::string((*doc)["error"]["details"]["task"].GetString()) == "promoter");
    CHECK(std::string((*doc)["error"]["details"]["supported_tasks"][0].GetString()) == "splice");
  }
  SECTION("annotation JSON above 200,000 bp must go async; gff3 stays sync") {
    std::string body = MinimalBody("annotation", 200001);
    auto r = svc->Post("/v1/tasks/annotation/predict", body, key);
    REQUIRE(r.status == 413);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "sync_too_large");
    CHECK((*doc)["error"]["details"]["sequence_length"].GetInt() == 200001);
    CHECK((*doc)["error"]["details"]["threshold"].GetInt() == 200000);
    auto async = svc->Post("/v1/tasks/annotation/predict", body, key, {"Prefer: respond-async"});
    CHECK(async.status == 202);
  }
  SECTION("a body over 16 MiB is 413 payload_too_large with the envelope") {
    std::string huge = "{\"sequence\": \"" + std::string(17 * 1024 * 1024, 'A') + "\"}";
    auto r = svc->Post("/v1/tasks/promoter/predict", huge, key);
    REQUIRE(r.status == 413);
    CHECK(Code(r) == "payload_too_large");
    REQUIRE(r.Header("x-request-id"));
    // The gateway still serves others afterwards.
    CHECK(svc->Get("/health").status == 200);
  }
  SECTION("a model that cannot load is 503 model_loading") {
    auto r = svc->Post("/v1/tasks/promoter/predict",
                       "{\"sequence\": \"" + RandomDna(400) + "\", \"model\": \"promoter-broken\"}",
                       key);
    REQUIRE(r.status == 503);
    CHECK(Code(r) == "model_loading");
  }
}

TEST_CASE("quotas are enforced with RateLimit headers", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);

  SECTION("rate: a bucket of capacity 1 admits one and refuses the next") {
    const std::string key = svc->keys().slow;  // 6 per minute -> capacity 1
    auto first = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), key);
    REQUIRE(first.status == 200);
    CHECK(*first.Header("ratelimit-limit") == "1");
    CHECK(*first.Header("ratelimit-policy") == "1;w=60");
    auto second = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), key);
    REQUIRE(second.status == 429);
    CHECK(Code(second) == "too_many_requests");
    REQUIRE(second.Header("retry-after"));
    int retry = std::stoi(*second.Header("retry-after"));
    CHECK(retry >= 1);
    CHECK(retry <= 10);
    CHECK(*second.Header("ratelimit-remaining") == "0");
  }
  SECTION("concurrency: a second request while one runs gets Retry-After: 1") {
    const std::string key = svc->keys().single;
    auto running = svc->Post("/v1/tasks/annotation/predict", MinimalBody("annotation", 400000),
                             key, {"Prefer: respond-async"});
    REQUIRE(running.status == 202);
    auto refused = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), key);
    CHECK(refused.status == 429);
    CHECK(*refused.Header("retry-after") == "1");
    // Once the job ends the slot is free again.
    std::string job_id = (*ParseJson(running.body))["data"]["job_id"].GetString();
    for (int i = 0; i < 1200; ++i) {
      if (svc->Get("/v1/tasks/jobs/" + job_id, key).status != 202) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), key).status == 200);
  }
}

TEST_CASE("a dead worker yields 503 service_unavailable, never a hang", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  svc->KillWorker("enhancer");
  auto started = std::chrono::steady_clock::now();
  auto r = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300),
                     svc->keys().alice);
  auto elapsed = std::chrono::steady_clock::now() - started;
  REQUIRE(r.status == 503);
  CHECK(Code(r) == "service_unavailable");
  CHECK(elapsed < std::chrono::seconds(30));
  // Other families are unaffected.
  CHECK(svc->Post("/v1/tasks/promoter/predict", MinimalBody("promoter"), svc->keys().alice)
            .status == 200);

  // A restarted worker is back in rotation within seconds, without restarting the gateway.
  svc->RestartWorker("enhancer");
  long status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    status = svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300),
                       svc->keys().alice)
                 .status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(status == 200);
}
