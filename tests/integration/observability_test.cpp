// Operations, end to end over real processes: /metrics of the gateway and the workers after real
// traffic, readiness and liveness, and graceful termination of a gateway and of a worker with
// requests in flight (deploy/README.md, "Graceful termination").
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"

using namespace dnaserve::testing;

namespace {

// The value of one series ("name{labels}") in a scrape; 0 when absent (a counter never moved).
double Sample(const std::string& scrape, const std::string& series) {
  size_t at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(scrape.substr(at + series.size() + 2));
}

std::string Scrape(const std::string& admin_url) {
  auto r = HttpRequest("GET", admin_url + "/metrics");
  INFO(r.error);
  REQUIRE(r.status == 200);
  CHECK(r.Header("content-type") == std::string("text/plain; version=0.0.4; charset=utf-8"));
  return "\n" + r.body;
}

std::string JobId(const HttpResult& r) {
  return (*ParseJson(r.body))["data"]["job_id"].GetString();
}

// Polls until the job is no longer running; returns the final poll.
HttpResult AwaitJob(Service* svc, const std::string& job_id, const std::string& key) {
  HttpResult poll;
  for (int i = 0; i < 1200; ++i) {
    poll = svc->Get("/v1/tasks/jobs/" + job_id, key);
    if (poll.status != 202) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return poll;
}

const std::string kPredictRoute = "route=\"/v1/tasks/{task}/predict\",method=\"POST\"";

// A synchronous 400 kb annotation as GFF3: long enough to be in flight when a signal lands.
std::future<HttpResult> StartLongRequest(const std::string& base, const std::string& key) {
  return std::async(std::launch::async, [base, key] {
    return GatewayRequest("POST", base, "/v1/tasks/annotation/predict?format=gff3",
                          {"Authorization: Bearer " + key, "Content-Type: application/json"},
                          MinimalBody("annotation", 400000), 300);
  });
}

// Waits until `series` in the scrape of `admin_url` has `value`.
bool WaitForSample(const std::string& admin_url, const std::string& series, double value) {
  return WaitFor(
      [&] {
        auto m = HttpRequest("GET", admin_url + "/metrics", {}, "", 2);
        return m.status == 200 && Sample("\n" + m.body, series) == value;
      },
      std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("gateway and worker /metrics move with real traffic and hold no per-key data",
          "[integration][observability]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const auto& keys = svc->keys();
  auto models = ParseJson(svc->Get("/v1/tasks/promoter/models").body);
  const std::string promoter_model = (*models)["default_model"].GetString();

  const std::string gw_before = Scrape(svc->gateway_admin_url());
  const std::string worker_before = Scrape(svc->worker_admin_url("promoter"));

  CHECK(svc->Post("/v1/tasks/promoter/predict", MinimalBody("promoter"), keys.alice).status == 200);
  CHECK(svc->Post("/v1/tasks/promoter/predict", "{not json", keys.alice).status == 400);
  CHECK(svc->Post("/v1/tasks/promoter/predict", MinimalBody("promoter")).status == 401);
  // The per-key rate: a bucket of capacity 1.
  CHECK(svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), keys.slow).status ==
        200);
  CHECK(svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), keys.slow).status ==
        429);
  // The per-key concurrency cap: one long async job holds the only slot.
  auto running = svc->Post("/v1/tasks/annotation/predict", MinimalBody("annotation", 400000),
                           keys.single, {"Prefer: respond-async"});
  REQUIRE(running.status == 202);
  CHECK(svc->Post("/v1/tasks/enhancer/predict", MinimalBody("enhancer", 300), keys.single)
            .status == 429);
  // The async job is the runners': queued or running until it ends.
  const std::string runner_before = Scrape(svc->runner_admin_url());
  CHECK(Sample(Scrape(svc->runner_admin_url()), "dnaserve_queue_depth") >= 1);
  CHECK(AwaitJob(svc, JobId(running), keys.single).status == 200);
  const std::string runner_after = Scrape(svc->runner_admin_url());
  CHECK(Sample(runner_after, "dnaserve_runner_jobs_finished_total{kind=\"predict\",code=\"ok\"}") -
            Sample(runner_before, "dnaserve_runner_jobs_finished_total{kind=\"predict\",code=\"ok\"}") ==
        1);

  const std::string gw = Scrape(svc->gateway_admin_url());
  auto delta = [&](const std::string& series) {
    return Sample(gw, series) - Sample(gw_before, series);
  };
  CHECK(delta("dnaserve_http_requests_total{" + kPredictRoute + ",status=\"200\"}") == 2);
  CHECK(delta("dnaserve_http_requests_total{" + kPredictRoute + ",status=\"202\"}") == 1);
  CHECK(delta("dnaserve_http_requests_total{" + kPredictRoute + ",status=\"400\"}") == 1);
  CHECK(delta("dnaserve_http_requests_total{" + kPredictRoute + ",status=\"401\"}") == 1);
  CHECK(delta("dnaserve_http_requests_total{" + kPredictRoute + ",status=\"429\"}") == 2);
  CHECK(delta("dnaserve_http_request_duration_seconds_count{" + kPredictRoute + "}") == 7);
  CHECK(delta("dnaserve_rate_limited_total{cause=\"key_rate\"}") == 1);
  CHECK(delta("dnaserve_rate_limited_total{cause=\"key_concurrency\"}") == 1);
  CHECK(delta("dnaserve_rate_limited_total{cause=\"edge_ip\"}") == 0);
  CHECK(delta("dnaserve_jobs_finished_total{task=\"promoter\",mode=\"sync\",state=\"completed\"}") ==
        1);
  // The gateway made the sync worker call; the async one was the runner's.
  CHECK(delta("dnaserve_jobs_finished_total{task=\"annotation\",mode=\"async\","
              "state=\"completed\"}") == 0);
  CHECK(delta("dnaserve_worker_calls_total{task=\"promoter\",code=\"ok\"}") == 1);
  CHECK(delta("dnaserve_worker_call_duration_seconds_count{task=\"annotation\"}") == 0);
  CHECK(gw.find("\ndnaserve_build_info{version=\"") != std::string::npos);
  // Nothing about who called: no client ids, no keys.
  for (const std::string& secret : {std::string("alice"), std::string("slowpoke"),
                                    std::string("\"single\""), keys.alice, keys.slow}) {
    CHECK(gw.find(secret) == std::string::npos);
  }

  const std::string worker = Scrape(svc->worker_admin_url("promoter"));
  auto worker_delta = [&](const std::string& series) {
    return Sample(worker, series) - Sample(worker_before, series);
  };
  const std::string model = "model=\"" + promoter_model + "\"";
  CHECK(worker_delta("dnaserve_worker_predict_requests_total{" + model + ",code=\"ok\"}") == 1);
  CHECK(worker_delta("dnaserve_worker_predict_duration_seconds_count{" + model + "}") == 1);
  CHECK(worker_delta("dnaserve_worker_batch_rows_count{" + model + "}") >= 1);
  CHECK(Sample(worker, "dnaserve_worker_model_load_seconds{" + model + "}") > 0);
  CHECK(Sample(worker, "dnaserve_worker_model_loads_total{" + model + ",result=\"ok\"}") == 1);
  CHECK(Sample(worker, "dnaserve_worker_models_loaded") >= 1);
  CHECK(Sample(worker, "dnaserve_worker_predict_in_flight") == 0);
  CHECK(Sample(worker, "dnaserve_worker_batch_queue_calls{" + model + "}") == 0);
  CHECK(worker.find("\ndnaserve_worker_info{task=\"promoter\"} 1\n") != std::string::npos);
}

TEST_CASE("readiness and liveness live on the admin listeners, not the public port",
          "[integration][observability]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  auto ready = HttpRequest("GET", svc->gateway_admin_url() + "/ready");
  CHECK(ready.status == 200);
  CHECK(std::string((*ParseJson(ready.body))["status"].GetString()) == "ready");
  CHECK(std::string((*ParseJson(ready.body))["redis"].GetString()) == "up");
  CHECK(Sample(Scrape(svc->gateway_admin_url()), "dnaserve_redis_up") == 1);
  CHECK(HttpRequest("GET", svc->gateway_admin_url() + "/live").status == 200);
  CHECK(HttpRequest("GET", svc->worker_admin_url("splice") + "/live").status == 200);
  // The public port serves the contract's routes only.
  for (const char* path : {"/metrics", "/ready", "/live"}) {
    auto r = svc->Get(path);
    INFO(path);
    CHECK(r.status == 404);
    CHECK(std::string((*ParseJson(r.body))["error"]["code"].GetString()) == "not_found");
  }
}

TEST_CASE("a gateway given SIGTERM leaves readiness, finishes what it accepted, then exits",
          "[integration][observability]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  // A second gateway of the same service (same Redis, same workers), to be terminated.
  const std::string log = svc->log_dir() + "/gateway-drained.log";
  GatewayLaunch launch = svc->AnotherGateway(log);
  launch.admin = true;
  launch.env["DNASERVE_DRAIN_TIMEOUT"] = "120";
  LaunchedGateway launched;
  REQUIRE(launched.Start(std::move(launch)));
  ChildProcess& gateway = launched.process();
  const std::string base = launched.base_url();
  const std::string admin = launched.admin_url();
  REQUIRE(WaitFor([&] { return HttpRequest("GET", admin + "/ready", {}, "", 2).status == 200; },
                  std::chrono::seconds(60)));

  // An async job and a sync request, both long (400 kb annotation), in flight at SIGTERM: the
  // sync one runs on this gateway, the async one on the service's runner.
  auto submitted = GatewayRequest("POST", base, "/v1/tasks/annotation/predict",
                                  {"Authorization: Bearer " + svc->keys().alice,
                                   "Content-Type: application/json", "Prefer: respond-async"},
                                  MinimalBody("annotation", 400000));
  REQUIRE(submitted.status == 202);
  auto sync = StartLongRequest(base, svc->keys().alice);
  REQUIRE(WaitForSample(admin, "dnaserve_jobs_in_progress{state=\"running\"}", 1));

  gateway.Terminate();
  // Out of the Service at once, while still answering: keep-alive clients are told to leave.
  REQUIRE(WaitFor([&] { return HttpRequest("GET", admin + "/ready", {}, "", 2).status == 503; },
                  std::chrono::seconds(5)));
  auto draining = HttpRequest("GET", admin + "/ready");
  CHECK(std::string((*ParseJson(draining.body))["status"].GetString()) == "draining");
  auto health = GatewayRequest("GET", base, "/health");
  CHECK(health.status == 200);
  REQUIRE(health.Header("connection"));
  std::string connection = *health.Header("connection");
  std::transform(connection.begin(), connection.end(), connection.begin(), ::tolower);
  CHECK(connection == "close");

  // The sync request completes before the process exits; the async job, on the runner, does
  // not depend on this gateway at all.
  auto result = sync.get();
  CHECK(result.status == 200);
  CHECK(result.body.rfind("##gff-version 3", 0) == 0);
  auto exit_code = gateway.WaitExit(std::chrono::seconds(120));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK(AwaitJob(svc, JobId(submitted), svc->keys().alice).status == 200);
  const std::string gateway_log = ReadFile(log);
  CHECK(gateway_log.find("\"event\":\"gateway_stopped\",\"drained\":true") != std::string::npos);
}

TEST_CASE("a worker given SIGTERM finishes its in-flight call and stays live while it drains",
          "[integration][observability]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  // Its own annotation worker (the models of the shared service) behind a second gateway.
  const std::string models = svc->log_dir() + "/models";
  WorkerLaunch worker_launch;
  worker_launch.task = "annotation";
  worker_launch.models_dir = models;
  worker_launch.admin = true;
  worker_launch.env = {{"DNASERVE_WORKER_SHUTDOWN_GRACE_SECONDS", "120"}};
  worker_launch.log_path = svc->log_dir() + "/worker-drained.log";
  LaunchedWorker launched_worker;
  REQUIRE(launched_worker.Start(std::move(worker_launch)));
  ChildProcess& worker = launched_worker.process();
  const std::string worker_url = launched_worker.admin_url();
  GatewayLaunch gateway_launch =
      svc->AnotherGateway(svc->log_dir() + "/gateway-for-drained-worker.log");
  gateway_launch.workers = "annotation=" + launched_worker.address();
  LaunchedGateway launched_gateway;
  REQUIRE(launched_gateway.Start(std::move(gateway_launch)));
  const std::string base = launched_gateway.base_url();
  REQUIRE(WaitFor([&] { return HttpRequest("GET", base + "/v1/tasks/annotation/models", {}, "", 2)
                                   .status == 200; },
                  std::chrono::seconds(60)));

  auto sync = StartLongRequest(base, svc->keys().alice);
  REQUIRE(WaitForSample(worker_url, "dnaserve_worker_predict_in_flight", 1));
  worker.Terminate();
  // Draining: liveness stays 200 so that Kubernetes does not restart it mid-call.
  CHECK(HttpRequest("GET", worker_url + "/live").status == 200);
  auto result = sync.get();
  CHECK(result.status == 200);
  auto exit_code = worker.WaitExit(std::chrono::seconds(60));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  // With its only worker gone the family answers 503 with the envelope, never a hang.
  auto after = GatewayRequest(
      "POST", base, "/v1/tasks/annotation/predict",
      {"Authorization: Bearer " + svc->keys().alice, "Content-Type: application/json"},
      MinimalBody("annotation", 3000), 60);
  CHECK(after.status == 503);
}
