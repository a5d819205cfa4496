// A promoter worker with flags of its own behind a real gateway, redis-server and HTTP over
// loopback (the shared service_fixture stack does not use these flags):
//  - backpressure: concurrent requests that find the worker's seats taken get the gateway's 503
//    service_unavailable envelope with Retry-After: 1, the others complete normally; the
//    worker's /metrics counts each refusal and shows its queue and seats empty afterwards;
//  - a sync request whose client closes its connection has its worker call cancelled at once
//    (the worker drops the request's waiting work), while an async job whose submitting
//    connection closes runs to completion.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "gateway/auth/key_store.h"
#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {


// redis-server, one promoter worker started with `worker_flags` (and an admin listener), a
// runner and a gateway, all on free loopback ports; stopped by the destructor.
class PromoterStack {
 public:
  ~PromoterStack() {
    gateway_.process().Stop();
    runner_.Stop();
    worker_.process().Stop();
    if (redis_) redis_->Stop();
    if (!dir_.empty() && !std::getenv("DNASERVE_KEEP_TEST_FILES")) {
      std::system(("rm -rf " + dir_).c_str());
    }
  }

  // False with `skip` set when the models cannot be made; REQUIREs everything else.
  bool Start(const std::vector<std::string>& worker_flags, std::string* skip) {
    dir_ = MakeTempDir("dnaserve-worker-calls");
    const std::optional<std::string> models = GeneratedModelsDir(skip);
    if (!models) return false;
    redis_ = RedisServer::Start();
    REQUIRE(redis_.has_value());
    WorkerLaunch worker;
    worker.task = "promoter";
    worker.models_dir = *models;
    worker.admin = true;
    worker.extra_args = worker_flags;
    worker.log_path = dir_ + "/worker.log";
    REQUIRE(worker_.Start(std::move(worker)));
    key_ = dnaserve::gateway::GenerateApiKey();
    std::ofstream(dir_ + "/keys.json")
        << "{\"keys\": [" << KeyEntry(key_, "loader", true, 60000, 64) << "]}";
    const std::string workers = "promoter=" + worker_.address();
    REQUIRE(StartRunner(&runner_, redis_->url(), workers, dir_ + "/runner.log"));
    GatewayLaunch gateway;
    gateway.redis_url = redis_->url();
    gateway.workers = workers;
    gateway.keys_file = dir_ + "/keys.json";
    gateway.env["DNASERVE_DOCS_DIR"] = SourceDir() + "/gateway/docs/node_modules";
    gateway.log_path = dir_ + "/gateway.log";
    REQUIRE(gateway_.Start(std::move(gateway)));
    INFO("logs in " << dir_);
    REQUIRE(gateway_.WaitUntilListening());
    REQUIRE(WaitFor([&] { return HttpRequest("GET", base() + "/v1/tasks/promoter/models").status == 200; },
                    std::chrono::seconds(60)));
    return true;
  }

  std::string base() const { return gateway_.base_url(); }
  int port() const { return gateway_.port(); }
  const std::string& key() const { return key_; }
  std::string worker_admin_url() const { return worker_.admin_url(); }
  const std::string& dir() const { return dir_; }

  HttpResult Predict(const std::string& body, std::vector<std::string> headers = {}) const {
    headers.push_back("Authorization: Bearer " + key_);
    headers.push_back("Content-Type: application/json");
    return GatewayRequest("POST", base(), "/v1/tasks/promoter/predict", headers, body, 300);
  }
  // The raw HTTP/1.1 request Predict would send (for clients that close their socket).
  std::string RawPredict(const std::string& body, const std::string& extra_header = "") const {
    return "POST /v1/tasks/promoter/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
           key_ + "\r\nContent-Type: application/json\r\n" + extra_header +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

 private:
  std::string dir_;
  std::string key_;
  std::optional<RedisServer> redis_;
  LaunchedWorker worker_;
  ChildProcess runner_;
  LaunchedGateway gateway_;
};

// A loopback connection to `port` that has sent `bytes`; the caller closes it.
int SendRaw(int port, const std::string& bytes) {
  const int fd = ConnectLoopback(port, std::chrono::seconds(10));
  REQUIRE(fd >= 0);
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    sent += static_cast<size_t>(n);
  }
  return fd;
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

std::string JsonBody(size_t length, unsigned seed) {
  return "{\"sequence\": \"" + RandomDna(length, seed) + "\"}";
}

}  // namespace

TEST_CASE("a worker at capacity becomes 503 service_unavailable with Retry-After",
          "[integration][batching]") {
  PromoterStack stack;
  std::string skip;
  // Seats for one request at a time: concurrent requests overflow them at once.
  if (!stack.Start({"--queue-max-bases", "1", "--batch-max-wait-us", "0"}, &skip)) {
    WARN("skipped: " << skip);
    return;
  }
  auto post = [&](unsigned seed) { return stack.Predict(JsonBody(10000, seed)); };
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

  // Refusals and queue depth, as an operator sees them: every 503 was a refusal by the worker,
  // and queue and seats are empty once the calls are answered.
  auto scrape = HttpRequest("GET", stack.worker_admin_url() + "/metrics");
  REQUIRE(scrape.status == 200);
  CHECK(FamilyTotal(scrape.body, "dnaserve_worker_batch_refused_total").first == unavailable);
  const auto queued = FamilyTotal(scrape.body, "dnaserve_worker_batch_queue_calls");
  CHECK(queued.second >= 1);  // published per model
  CHECK(queued.first == 0);
  CHECK(FamilyTotal(scrape.body, "dnaserve_worker_batch_admitted_requests").first == 0);
  CHECK(FamilyTotal(scrape.body, "dnaserve_worker_batch_calls_count").first >= 1);
}

TEST_CASE("a sync client that disconnects cancels its worker call, an async one does not",
          "[integration][cancel]") {
  PromoterStack stack;
  std::string skip;
  // Every forward pass of a lone request waits 1 s for company, so a 30 kb request (4 calls of
  // at most 8 windows) is still at the worker seconds after it arrived, whatever the machine's
  // speed. Passes of 16 rows: a call of 8 never fills one, so each waits (with the default 4 it
  // would be cut into full pieces that run at once).
  if (!stack.Start({"--batch-max-wait-us", "1000000", "--batch-rows-per-pass", "16"}, &skip)) {
    WARN("skipped: " << skip);
    return;
  }
  INFO("logs in " << stack.dir());
  const std::string worker = stack.worker_admin_url();
  auto outcome = [&](const std::string& code) {
    return MetricSample(worker, "dnaserve_worker_predict_requests_total{model=\"promoter-human-tiny\",code=\"" +
                                    code + "\"}");
  };
  REQUIRE(stack.Predict(JsonBody(500, 1)).status == 200);  // loads the model
  REQUIRE(outcome("ok") == 1);

  // A sync request whose client goes away while the worker holds it.
  int fd = SendRaw(stack.port(), stack.RawPredict(JsonBody(30000, 2)));
  REQUIRE(WaitFor([&] { return MetricSample(worker, "dnaserve_worker_predict_in_flight") == 1; },
                  std::chrono::seconds(30)));
  close(fd);
  const auto closed_at = std::chrono::steady_clock::now();
  CHECK(WaitFor([&] { return outcome("cancelled") == 1; }, std::chrono::seconds(3)));
  const auto seen_after = std::chrono::steady_clock::now() - closed_at;
  WARN("the worker saw the cancellation "
       << std::chrono::duration_cast<std::chrono::milliseconds>(seen_after).count()
       << " ms after the client closed its socket");
  CHECK(MetricSample(worker, "dnaserve_worker_predict_in_flight") == 0);
  CHECK(MetricSample(worker, "dnaserve_worker_batch_withdrawn_total{model=\"promoter-human-tiny\"}") >= 1);
  CHECK(outcome("ok") == 1);  // it never ran to the end

  // The gateway stays healthy and serves the next request.
  const HttpResult next = stack.Predict(JsonBody(1500, 3));
  CHECK(next.status == 200);
  CHECK(outcome("ok") == 2);

  // An async job is not tied to its submitting connection: it completes after that closes.
  fd = SendRaw(stack.port(), stack.RawPredict(JsonBody(5000, 4), "Prefer: respond-async\r\n"));
  std::string reply;
  char buf[4096];
  while (reply.find("\r\n\r\n") == std::string::npos) {  // the 202's headers name the job
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  REQUIRE(reply.rfind("HTTP/1.1 202", 0) == 0);
  const size_t id_at = reply.find("X-Job-Id: ");
  REQUIRE(id_at != std::string::npos);
  const std::string job_id = reply.substr(id_at + 10, 36);
  HttpResult job;
  REQUIRE(WaitFor(
      [&] {
        job = GatewayRequest("GET", stack.base(), "/v1/tasks/jobs/" + job_id,
                             {"Authorization: Bearer " + stack.key()});
        return job.status != 202;
      },
      std::chrono::seconds(60)));
  INFO(job.body.substr(0, 500));
  CHECK(job.status == 200);
  CHECK(outcome("ok") == 3);
  CHECK(outcome("cancelled") == 1);
}
