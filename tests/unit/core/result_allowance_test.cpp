// Stored results are compressed and bounded per client: the in-process store and the Redis store
// (a real redis-server) keep each owner's results under its allowance by evicting the owner's
// oldest first, refuse a result larger than the whole allowance with 413, forget results that
// expired on their own, keep the accounting exact across two gateways, and never let one tenant
// push out another's results.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "tests/support/in_memory_job_store.h"
#include "core/jobs/redis_job_store.h"
#include "core/jobs/result_codec.h"
#include "core/quota/clock.h"
#include "core/redis/redis_connection.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

std::shared_ptr<core::RedisConnection> Connect() {
  return testing::ConnectRedis(testing::SharedRedis().url());
}

std::string Owner(const std::string& name) { return name + "-" + NewUuidV4().substr(0, 8); }

// Bytes that gzip cannot shrink, so they are stored as they are: sizes in these tests are exact.
std::string Incompressible(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

std::unique_ptr<core::JobStore> MakeStore(const std::string& kind, const core::Clock* clock,
                                    int64_t allowance, int64_t retention_ms = 0) {
  if (kind == "memory") {
    core::InMemoryJobStoreOptions options;
    options.client_result_bytes = allowance;
    if (retention_ms > 0) options.retention_ms = retention_ms;
    return std::make_unique<core::InMemoryJobStore>(clock, options);
  }
  core::RedisJobStoreOptions options;
  options.client_result_bytes = allowance;
  if (retention_ms > 0) options.retention_ms = retention_ms;
  return std::make_unique<core::RedisJobStore>(Connect(), clock, options);
}

// A finished job of `owner` with `body` as its 200 result; returns its id.
std::string Store(core::JobStore& store, const std::string& owner, const std::string& body) {
  core::JobRecord r;
  r.job_id = NewUuidV4();
  r.request_id = NewUuidV4();
  r.owner = owner;
  r.task = "chromatin";
  r.mode = "async";
  REQUIRE(store.Create(r).ok());
  REQUIRE(store.Finish(r.job_id, ErrorCode::kOk, "application/json", body).ok());
  return r.job_id;
}

int64_t RedisInt(const std::vector<std::string>& command) {
  auto reply = Connect()->Command(command);
  REQUIRE(reply.ok());
  if (reply->type == core::RedisReply::Type::kInteger) return reply->integer;
  return reply->IsNil() ? 0 : std::stoll(reply->str);
}

TEST_CASE("large results are stored as gzip: Get returns them as rendered, GetStored as stored",
          "[jobs][gzip]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock, 0);
  const std::string owner = Owner("acme");
  std::string body = "{\"data\":[";
  for (int i = 0; i < 5000; ++i) body += "{\"name\":\"GM12878|CTCF|None\",\"i\":" + std::to_string(i) + "},";
  body += "{}]}";
  const std::string id = Store(*store, owner, body);

  auto rendered = store->Get(id, owner);
  REQUIRE(rendered.ok());
  CHECK(rendered->body == body);
  CHECK(rendered->body_encoding.empty());
  auto stored = store->GetStored(id, owner);
  REQUIRE(stored.ok());
  CHECK(stored->body_encoding == "gzip");
  CHECK(stored->body.size() * 5 < body.size());
  auto inflated = core::GzipDecompress(stored->body);
  REQUIRE(inflated.ok());
  CHECK(*inflated == body);
  // Listings carry no body either way.
  auto listed = store->List(owner, 10);
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  CHECK(listed->at(0).body.empty());
  CHECK(listed->at(0).body_encoding.empty());

  // A small error envelope stays as it is.
  const std::string envelope = R"({"error":{"code":"model_loading","message":"m","request_id":"r"}})";
  core::JobRecord failed;
  failed.job_id = NewUuidV4();
  failed.owner = owner;
  REQUIRE(store->Create(failed).ok());
  REQUIRE(store->Finish(failed.job_id, ErrorCode::kServiceUnavailable, "application/json", envelope).ok());
  auto small = store->GetStored(failed.job_id, owner);
  REQUIRE(small.ok());
  CHECK(small->body_encoding.empty());
  CHECK(small->body == envelope);
}

TEST_CASE("an owner's oldest results are evicted to stay under its allowance", "[jobs][quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock, 35'000);  // room for three 10,000-byte results
  const std::string owner = Owner("acme");
  std::vector<std::string> ids;
  for (unsigned i = 0; i < 5; ++i) {
    clock.AdvanceMs(10);
    ids.push_back(Store(*store, owner, Incompressible(10'000, i)));
  }
  for (int i = 0; i < 2; ++i) {
    auto gone = store->Get(ids[i], owner);
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.status().code() == ErrorCode::kJobExpired);
    CHECK(gone.status().message().find("make room for newer results") != std::string::npos);
    // Still nobody else's business: another client gets the same 404 as for an unknown id.
    CHECK(store->Get(ids[i], Owner("other")).status().code() == ErrorCode::kNotFound);
  }
  for (int i = 2; i < 5; ++i) {
    auto kept = store->Get(ids[i], owner);
    REQUIRE(kept.ok());
    CHECK(kept->body == Incompressible(10'000, static_cast<unsigned>(i)));
  }
  if (kind == "redis") {
    CHECK(RedisInt({"GET", "dnaserve:resultbytes:" + owner}) == 30'000);
    CHECK(RedisInt({"HLEN", "dnaserve:resultsizes:" + owner}) == 3);
  }
}

TEST_CASE("a result larger than the whole allowance is stored as 413 payload_too_large",
          "[jobs][quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock, 5'000);
  const std::string owner = Owner("acme");
  const std::string small = Store(*store, owner, Incompressible(2'000, 1));
  core::JobRecord big;
  big.job_id = NewUuidV4();
  big.request_id = NewUuidV4();
  big.owner = owner;
  REQUIRE(store->Create(big).ok());
  REQUIRE(store->Finish(big.job_id, ErrorCode::kOk, "application/json", Incompressible(6'000, 2)).ok());
  auto refused = store->Get(big.job_id, owner);
  REQUIRE(refused.ok());
  CHECK(refused->state == core::JobState::kFailed);
  CHECK(refused->code == ErrorCode::kPayloadTooLarge);
  CHECK(refused->body.find("\"payload_too_large\"") != std::string::npos);
  CHECK(refused->body.find("6000 bytes compressed") != std::string::npos);
  CHECK(refused->body.find(big.request_id) != std::string::npos);
  // The envelope is small: the earlier result did not have to make room for it.
  CHECK(store->Get(small, owner).ok());
}

TEST_CASE("Redis: a tenant flooding its results cannot push out another's, and the accounting is "
          "exact across two gateways",
          "[jobs][quota][redis]") {
  // Two gateways on one Redis, the hostile tenant writing through both.
  auto gateway_a = MakeStore("redis", nullptr, 50'000);
  auto gateway_b = MakeStore("redis", nullptr, 50'000);
  const std::string victim = Owner("victim");
  const std::string hostile = Owner("hostile");
  std::vector<std::string> victim_ids;
  for (unsigned i = 0; i < 3; ++i) {
    victim_ids.push_back(Store(*gateway_a, victim, Incompressible(10'000, 100 + i)));
  }
  std::vector<std::string> hostile_ids;
  std::vector<std::thread> writers;
  std::mutex mu;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      core::JobStore& via = w == 0 ? *gateway_a : *gateway_b;
      for (unsigned i = 0; i < 20; ++i) {
        std::string id = Store(via, hostile, Incompressible(10'000, 1000 + w * 100 + i));
        std::lock_guard<std::mutex> lock(mu);
        hostile_ids.push_back(id);
      }
    });
  }
  for (auto& t : writers) t.join();

  for (size_t i = 0; i < victim_ids.size(); ++i) {
    auto kept = gateway_b->Get(victim_ids[i], victim);
    REQUIRE(kept.ok());
    CHECK(kept->body == Incompressible(10'000, 100 + static_cast<unsigned>(i)));
  }
  int live = 0;
  for (const auto& id : hostile_ids) live += gateway_a->Get(id, hostile).ok() ? 1 : 0;
  CHECK(live == 5);  // 50,000 bytes of 10,000-byte results
  CHECK(RedisInt({"GET", "dnaserve:resultbytes:" + hostile}) == 50'000);
  CHECK(RedisInt({"HLEN", "dnaserve:resultsizes:" + hostile}) == 5);
  CHECK(RedisInt({"ZCARD", "dnaserve:resultorder:" + hostile}) == 5);
  CHECK(RedisInt({"GET", "dnaserve:resultbytes:" + victim}) == 30'000);
}

TEST_CASE("Redis: results that expired on their own stop counting against the allowance",
          "[jobs][quota][redis]") {
  // Redis's own TTLs, so this test waits in real time. x is polled (activity keeps it), y is
  // not and expires; y is the newer, so plain oldest-first eviction would wrongly remove x.
  auto store = MakeStore("redis", nullptr, 25'000, 2'000);
  const std::string owner = Owner("acme");
  const std::string x = Store(*store, owner, Incompressible(10'000, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string y = Store(*store, owner, Incompressible(10'000, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(1'100));
  REQUIRE(store->Get(x, owner).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1'100));
  CHECK(store->Get(y, owner).status().code() == ErrorCode::kJobExpired);
  const std::string z = Store(*store, owner, Incompressible(10'000, 3));
  CHECK(store->Get(x, owner).ok());
  CHECK(store->Get(z, owner).ok());
  CHECK(RedisInt({"GET", "dnaserve:resultbytes:" + owner}) == 20'000);
  CHECK(RedisInt({"HLEN", "dnaserve:resultsizes:" + owner}) == 2);
}

}  // namespace
}  // namespace dnaserve::core
