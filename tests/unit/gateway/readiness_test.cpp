// Gateway readiness against a real redis-server: starting until Redis has answered and every
// configured family has reported its models, ready after that (also while Redis is down, which
// the body and dnaserve_redis_up report), draining after SIGTERM.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include "core/jobs/redis_job_store.h"
#include "core/ops/readiness.h"
#include "gateway/observability/gateway_metrics.h"
#include "core/redis/redis_connection.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;

namespace {

rapidjson::Document Body(const observability::AdminResponse& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  INFO(r.body);
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

worker::v1::ModelInfo Model(const std::string& id) {
  worker::v1::ModelInfo m;
  m.set_id(id);
  m.set_is_default(true);
  return m;
}

}  // namespace

TEST_CASE("readiness: starting, ready, Redis down after start, draining", "[gateway][readiness]") {
  // A port nothing listens on: Redis has never answered.
  auto never = core::RedisConnection::Create("redis://127.0.0.1:" + std::to_string(testing::FreePort()));
  REQUIRE(never.ok());
  core::RedisJobStore unreachable(*never);
  core::ModelCatalogue catalogue;
  metrics::Registry registry;
  GatewayMetrics metrics(&registry);
  {
    core::Readiness readiness(&unreachable, &catalogue, {Task::kPromoter},
                              [&metrics](bool up) { metrics.SetRedisUp(up); });
    catalogue.SetModels(Task::kPromoter, {Model("p")});
    auto r = readiness.Check();
    CHECK(r.status == 503);
    CHECK(std::string(Body(r)["status"].GetString()) == "starting");
    CHECK(std::string(Body(r)["redis"].GetString()) == "down");
    CHECK(registry.Render().find("dnaserve_redis_up 0\n") != std::string::npos);
  }

  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  auto conn = core::RedisConnection::Create(server->url());
  REQUIRE(conn.ok());
  core::RedisJobStore jobs(*conn);
  core::Readiness readiness(&jobs, &catalogue, {Task::kPromoter, Task::kSplice},
                            [&metrics](bool up) { metrics.SetRedisUp(up); });

  // Redis answers but the splice family has not reported its models yet.
  auto waiting = readiness.Check();
  CHECK(waiting.status == 503);
  auto body = Body(waiting);
  CHECK(std::string(body["status"].GetString()) == "starting");
  REQUIRE(body["tasks_waiting"].Size() == 1);
  CHECK(std::string(body["tasks_waiting"][0].GetString()) == "splice");

  catalogue.SetModels(Task::kSplice, {Model("s")});
  auto ready = readiness.Check();
  CHECK(ready.status == 200);
  CHECK(std::string(Body(ready)["status"].GetString()) == "ready");
  CHECK(registry.Render().find("dnaserve_redis_up 1\n") != std::string::npos);

  // Once ready, a Redis outage is reported but does not take the replica out.
  server->Stop();
  auto outage = readiness.Check();
  CHECK(outage.status == 200);
  CHECK(std::string(Body(outage)["redis"].GetString()) == "down");
  CHECK(registry.Render().find("dnaserve_redis_up 0\n") != std::string::npos);

  readiness.BeginDrain();
  auto draining = readiness.Check();
  CHECK(draining.status == 503);
  CHECK(std::string(Body(draining)["status"].GetString()) == "draining");
}
