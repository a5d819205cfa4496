// A whole dnaserve on loopback for integration tests: a real redis-server, one real
// dnaserve-worker process per task family, a real dnaserve-runner and a real dnaserve-gateway,
// on free ports. One
// instance per test process (Catch2 sections share it); stopped at process exit.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/key_entries.h"
#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"

namespace dnaserve::testing {

struct TestKeys {
  std::string alice;      // client "alice", generous limits
  std::string bob;        // client "bob", generous limits
  std::string disabled;   // client "mallory", enabled: false
  std::string slow;       // client "slowpoke", rate 6/min -> bucket capacity 1
  std::string single;     // client "single", max_concurrency 1
};

class Service {
 public:
  // Starts everything once per process. Returns nullptr and explains why in *failure (a
  // missing prerequisite such as redis-server counts: scripts/test installs them all).
  static Service* Get(std::string* failure);

  std::string base_url() const { return gateway_.base_url(); }
  // The operations listeners (/metrics, /ready, /live) of the gateway and of each worker.
  std::string gateway_admin_url() const { return gateway_.admin_url(); }
  std::string worker_admin_url(const std::string& task) const {
    return workers_.at(task).admin_url();
  }
  // What another gateway needs to join this service (redis URL, DNASERVE_WORKERS, keys file).
  std::string redis_url() const { return redis_->url(); }
  const std::string& workers_spec() const { return workers_spec_; }
  std::string keys_file() const { return dir_ + "/keys.json"; }
  const TestKeys& keys() const { return keys_; }
  // How to start one more gateway of this service (same Redis, workers and keys), its output in
  // `log_path`: tests that stop or reconfigure a gateway of their own start it with this.
  GatewayLaunch AnotherGateway(const std::string& log_path) const;
  std::string log_dir() const { return dir_; }
  // Kills the worker of one task family (SIGKILL), for failure-path tests.
  void KillWorker(const std::string& task);
  // Starts it again on the same address.
  void RestartWorker(const std::string& task);
  std::string runner_log() const { return dir_ + "/runner.log"; }
  // The runner's operations listener (/metrics: dnaserve_queue_depth, ...).
  std::string runner_admin_url() const { return LoopbackUrl(runner_admin_port_); }

  HttpResult Get(const std::string& path, const std::string& key = "",
                 std::vector<std::string> headers = {}) const;
  HttpResult Post(const std::string& path, const std::string& body, const std::string& key = "",
                  std::vector<std::string> headers = {}) const;

  ~Service();

 private:
  Service() = default;
  bool Start(std::string* failure);

  std::string dir_;
  int runner_admin_port_ = 0;
  std::string workers_spec_;
  TestKeys keys_;
  std::optional<RedisServer> redis_;
  std::map<std::string, LaunchedWorker> workers_;
  ChildProcess runner_;
  LaunchedGateway gateway_;
};

// The bundled packages (scripts/test exports their directory in DNASERVE_TEST_MODELS_DIR, else
// they are generated), copied to dir/models with one deliberately broken promoter package whose
// weights cannot load. nullopt, with the reason, when they cannot be made.
std::optional<std::string> PrepareModels(const std::string& dir, std::string* skip_reason);
#define DNASERVE_REQUIRE_SERVICE(var)                 \
  std::string var##_failure;                           \
  auto* var = ::dnaserve::testing::Service::Get(&var##_failure); \
  INFO(var##_failure);                                 \
  REQUIRE(var != nullptr)

// HttpRequest to the gateway at `base_url` (no trailing slash) for `path`, checked against the
// /v1/openapi.json that gateway serves (fetched once per address), as Service::Get/Post check
// theirs: for tests that run gateways of their own. An undocumented answer fails the test; one
// received on another thread fails it at the next documented request on the test's thread
// (Catch2 assertions belong to that thread). No answer at all (status 0) is not checked.
HttpResult GatewayRequest(const std::string& method, const std::string& base_url,
                          const std::string& path, const std::vector<std::string>& headers = {},
                          const std::string& body = "", long timeout_seconds = 60);
// Fetches (again) the /v1/openapi.json the gateway at `base_url` serves and checks every later
// GatewayRequest to it against that; false, with the reason, when it is not a usable document.
// Fixtures call it once their gateway is ready, so a broken document stops them at once rather
// than leaving their requests unchecked.
bool LoadGatewayDocument(const std::string& base_url, std::string* error);
// A runner that holds `reference` (GRCh37 chr20 and its catalogue) and a gateway of its own,
// both on database `db` of `svc`'s Redis (the service's own runner holds no reference), calling
// `workers` ("" = the service's). Ready once the gateway lists `roster_task`'s models and its
// OpenAPI document is loaded; logs and scratch in `dir`. False with the reason. Callers own both
// processes: stop them at exit (a fixture left running leaves two processes behind every test
// process).
bool StartReferenceStack(const Service& svc, int db, const std::string& workers,
                         const BuiltCatalogue& reference, const std::string& roster_task,
                         const std::string& dir, ChildProcess* runner, LaunchedGateway* gateway,
                         std::string* reason);
// Starts the bundled splice-human package (the service's splice default: per-base, char tokens,
// a 1,000 bp flank; not the integration service's generated tiny one) in a worker of its own,
// its package copied under `dir`/models, its log `dir`/worker-splice.log. False with the reason.
bool StartBundledSpliceWorker(const std::string& dir, LaunchedWorker* worker, std::string* reason);
// `svc`'s workers spec with its splice entry pointed at `splice_address`.
std::string WorkersWithSplice(const Service& svc, const std::string& splice_address);

// Fails the current test for every answer found undocumented on another thread since the last
// request on the test's thread. Tests whose requests run on threads of their own end with it
// (UndocumentedElsewhereGuard does that when their scope ends).
void FailUndocumentedElsewhere();
struct UndocumentedElsewhereGuard {
  ~UndocumentedElsewhereGuard() { FailUndocumentedElsewhere(); }
};

// Parses a JSON body; fails the current test when it is not JSON.
std::shared_ptr<rapidjson::Document> ParseJson(const std::string& body);
std::string RandomDna(size_t length, unsigned seed = 7);
// Body of a minimal valid request for `task` with a sequence of `length` bp.
std::string MinimalBody(const std::string& task, size_t length = 0);

// Polls `condition` until it holds or `timeout` passes; its last answer.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout);
// The value of one series ("name{labels}") in the /metrics scrape of `admin_url`: 0 when absent
// (a counter never moved), -1 when the scrape fails.
double MetricSample(const std::string& admin_url, const std::string& series);

}  // namespace dnaserve::testing
