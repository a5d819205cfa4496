// Worker backpressure end to end: a promoter worker with a one-pass batching queue behind a real
// gateway. Concurrent requests that find the worker's queue full get the gateway's 503
// service_unavailable envelope with Retry-After: 1; the others complete normally; the worker's
// /metrics counts each refusal and shows its queue empty again afterwards. This stack is
// started here (not by service_fixture) because it needs a worker flag the shared service does
// not use.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <future>
#include <thread>

#include "gateway/auth/key_store.h"
#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

// The bundled packages: the shared ones when scripts/test generated them, else generated here.
std::string ModelsDir(const std::string& scratch, std::string* skip) {
  if (const char* env = std::getenv("DNASERVE_TEST_MODELS_DIR"); env && *env) return env;
  if (access("/usr/bin/python3", X_OK) != 0 ||
      std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    *skip = "Debian's python3-torch is missing, so the test models cannot be generated";
    return "";
  }
  const std::string out = scratch + "/models";
  const std::string command = "/usr/bin/python3 " + SourceDir() + "/scripts/make_models.py --out " +
                              out + " >" + scratch + "/make_models.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    *skip = "scripts/make_models.py failed; see " + scratch + "/make_models.log";
    return "";
  }
  return out;
}

// The sum of every series of one metric family in a Prometheus scrape, and how many there are.
std::pair<double, int> FamilyTotal(const std::string& scrape, const std::string& name) {
  double total = 0;
  int series = 0;
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    total += std::stod(line.substr(line.rfind(' ') + 1));
    ++series;
  }
  return {total, series};
}

}  // namespace

TEST_CASE("a worker at capacity becomes 503 service_unavailable with Retry-After",
          "[integration][batching]") {
  const std::string dir = MakeTempDir("dnaserve-overload");
  std::string skip;
  const std::string models = ModelsDir(dir, &skip);
  if (models.empty()) {
    WARN("skipped: " << skip);
    return;
  }
  auto redis = RedisServer::Start();
  REQUIRE(redis.has_value());

  const int worker_port = FreePort();
  const int worker_admin_port = FreePort();
  ChildProcess worker;
  // At most one pass may wait while another runs: concurrent requests overflow it at once.
  REQUIRE(
      worker.Start({BinaryDir() + "/worker/dnaserve-worker", "--task", "promoter", "--models-dir",
                    models, "--listen", "127.0.0.1:" + std::to_string(worker_port),
                    "--admin-listen", "127.0.0.1:" + std::to_string(worker_admin_port),
                    "--queue-max-bases", "1", "--batch-max-wait-us", "0"},
                   {}, dir + "/worker.log"));
  const std::string key = dnaserve::gateway::GenerateApiKey();
  std::ofstream(dir + "/keys.json")
      << "{\"keys\": [{\"key_sha256\": \"" << dnaserve::gateway::Sha256Hex(key)
      << "\", \"client_id\": \"loader\", \"enabled\": true, \"rate_per_minute\": 60000, "
         "\"max_concurrency\": 64}]}";
  const int gateway_port = FreePort();
  ChildProcess gateway;
  REQUIRE(gateway.Start({BinaryDir() + "/gateway/dnaserve-gateway"},
                        {{"DNASERVE_PORT", std::to_string(gateway_port)},
                         {"DNASERVE_KEYS_FILE", dir + "/keys.json"},
                         {"DNASERVE_REDIS_URL", redis->url()},
                         {"DNASERVE_WORKERS", "promoter=127.0.0.1:" + std::to_string(worker_port)},
                         {"DNASERVE_IP_RATE", "10000"},
                         {"DNASERVE_IP_BURST", "10000"},
                         {"DNASERVE_DOCS_DIR", SourceDir() + "/gateway/docs/node_modules"}},
                        dir + "/gateway.log"));
  INFO("logs in " << dir);
  REQUIRE(WaitForPort(gateway_port, std::chrono::seconds(20)));
  const std::string base = "http://127.0.0.1:" + std::to_string(gateway_port);
  const auto ready_by = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (HttpRequest("GET", base + "/v1/tasks/promoter/models").status != 200) {
    REQUIRE(std::chrono::steady_clock::now() < ready_by);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  auto post = [&](unsigned seed) {
    return HttpRequest("POST", base + "/v1/tasks/promoter/predict",
                       {"Authorization: Bearer " + key, "Content-Type: application/json"},
                       "{\"sequence\": \"" + RandomDna(10000, seed) + "\"}", 300);
  };
  REQUIRE(post(99).status == 200);  // loads the model, so that every later call finds it warm

  int ok = 0;
  int unavailable = 0;
  for (int round = 0; round < 3 && unavailable == 0; ++round) {
    std::vector<std::future<HttpResult>> calls;
    for (unsigned i = 0; i < 12; ++i) {
      calls.push_back(std::async(std::launch::async, post, 100 * round + i));
    }
    for (auto& call : calls) {
      const HttpResult r = call.get();
      INFO(r.body.substr(0, 500));
      if (r.status == 200) {
        ++ok;
        continue;
      }
      REQUIRE(r.status == 503);
      ++unavailable;
      auto doc = ParseJson(r.body);
      const auto& error = (*doc)["error"];
      CHECK(std::string(error["code"].GetString()) == "service_unavailable");
      CHECK(std::string(error["message"].GetString()).find("at capacity") != std::string::npos);
      CHECK(r.Header("retry-after") == std::optional<std::string>("1"));
      CHECK(r.Header("x-request-id") ==
            std::optional<std::string>(error["request_id"].GetString()));
    }
  }
  CHECK(ok >= 1);
  CHECK(unavailable >= 1);

  // Queue depth and refusals, as an operator sees them: every 503 was a refusal by the full
  // queue, and the queue is empty once the calls are answered.
  auto scrape = HttpRequest("GET", "http://127.0.0.1:" + std::to_string(worker_admin_port) + "/metrics");
  REQUIRE(scrape.status == 200);
  CHECK(FamilyTotal(scrape.body, "dnaserve_worker_batch_refused_total").first == unavailable);
  const auto queued = FamilyTotal(scrape.body, "dnaserve_worker_batch_queue_calls");
  CHECK(queued.second >= 1);  // published per model
  CHECK(queued.first == 0);
  CHECK(FamilyTotal(scrape.body, "dnaserve_worker_batch_calls_count").first >= 1);

  gateway.Stop();
  worker.Stop();
  redis->Stop();
  if (!std::getenv("DNASERVE_KEEP_TEST_FILES")) std::system(("rm -rf " + dir).c_str());
}
