// Per-key quotas: the same behaviour from the in-process store and from the Redis store (a real
// redis-server), plus what only Redis brings: several gateways sharing one bucket, fail-closed
// when Redis is down, reconnection after a restart, and keys that expire when idle.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/quota/clock.h"
#include "tests/support/in_memory_quota_store.h"
#include "core/quota/redis_quota_store.h"
#include "core/redis/redis_connection.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

using testing::SharedRedis;
std::shared_ptr<core::RedisConnection> Connect(const std::string& url) { return testing::ConnectRedis(url); }

Principal Client(const std::string& id, int64_t rate, int64_t concurrency) {
  static std::atomic<int> counter{0};
  Principal p;
  // Unique per test run so tests sharing the Redis server never share a bucket.
  p.client_id = id + "-" + std::to_string(counter++);
  p.rate_per_minute = rate;
  p.max_concurrency = concurrency;
  return p;
}

// The Redis store keeps time with Redis's TIME; `clock` only moves it forward (a test warp), so
// its tests also see the few milliseconds that really pass between calls.
std::unique_ptr<core::QuotaStore> MakeStore(const std::string& kind, const core::Clock* clock) {
  if (kind == "memory") return std::make_unique<core::InMemoryQuotaStore>(clock);
  return std::make_unique<core::RedisQuotaStore>(Connect(SharedRedis().url()), clock);
}

TEST_CASE("a burst of capacity is admitted, then 429 with Retry-After", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal p = Client("burst", 60, 100);
  for (int i = 0; i < 10; ++i) {
    core::QuotaDecision d = store->Admit(p, "lease-" + std::to_string(i), 60'000);
    INFO("request " << i);
    REQUIRE(d.status.ok());
    CHECK(d.info.limit == 10);
    CHECK(d.info.remaining == 9 - i);
    CHECK(d.info.reset_seconds == i + 1);
  }
  core::QuotaDecision refused = store->Admit(p, "lease-10", 60'000);
  CHECK(refused.status.code() == ErrorCode::kTooManyRequests);
  REQUIRE(refused.status.retry_after_seconds().has_value());
  CHECK(*refused.status.retry_after_seconds() == 1);
  CHECK(refused.info.limit == 10);
  CHECK(refused.info.remaining == 0);
  CHECK(refused.info.reset_seconds == 10);
  CHECK_THAT(refused.status.message(), Catch::Contains("rate limit"));
}

TEST_CASE("tokens come back as time passes", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal p = Client("refill", 6, 100);  // capacity 1, one token every 10 s
  REQUIRE(store->Admit(p, "a", 60'000).status.ok());
  core::QuotaDecision refused = store->Admit(p, "b", 60'000);
  REQUIRE(refused.status.code() == ErrorCode::kTooManyRequests);
  CHECK(*refused.status.retry_after_seconds() == 10);

  clock.AdvanceMs(4'200);
  refused = store->Admit(p, "b", 60'000);
  REQUIRE(refused.status.code() == ErrorCode::kTooManyRequests);
  CHECK(*refused.status.retry_after_seconds() == 6);  // 5.8 s left, rounded up

  clock.AdvanceMs(5'800);
  core::QuotaDecision admitted = store->Admit(p, "b", 60'000);
  CHECK(admitted.status.ok());
  CHECK(admitted.info.remaining == 0);
  CHECK(admitted.info.reset_seconds == 10);
}

TEST_CASE("Peek reports the bucket without taking a token", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal p = Client("peek", 60, 100);
  core::RateLimitInfo fresh = store->Peek(p);
  CHECK(fresh.limit == 10);
  CHECK(fresh.remaining == 10);
  CHECK(fresh.reset_seconds == 0);
  REQUIRE(store->Admit(p, "a", 60'000).status.ok());
  REQUIRE(store->Admit(p, "b", 60'000).status.ok());
  for (int i = 0; i < 3; ++i) {
    core::RateLimitInfo info = store->Peek(p);
    CHECK(info.remaining == 8);
    CHECK(info.reset_seconds == 2);
  }
}

TEST_CASE("the concurrency cap refuses with Retry-After 1 and takes no token", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal p = Client("conc", 600, 2);  // capacity 100
  REQUIRE(store->Admit(p, "job-1", 60'000).status.ok());
  REQUIRE(store->Admit(p, "job-2", 60'000).status.ok());
  for (int i = 0; i < 5; ++i) {
    core::QuotaDecision refused = store->Admit(p, "job-3", 60'000);
    CHECK(refused.status.code() == ErrorCode::kTooManyRequests);
    CHECK(*refused.status.retry_after_seconds() == 1);
    CHECK_THAT(refused.status.message(), Catch::Contains("concurrent"));
    CHECK(refused.info.limit == 100);
    CHECK(refused.info.remaining == 98);
  }
  CHECK(store->Peek(p).remaining == 98);

  store->Release(p, "job-1");
  core::QuotaDecision admitted = store->Admit(p, "job-3", 60'000);
  CHECK(admitted.status.ok());
  CHECK(admitted.info.remaining == 97);
  CHECK(store->Admit(p, "job-4", 60'000).status.code() == ErrorCode::kTooManyRequests);

  // Releasing an unknown lease or twice is harmless.
  store->Release(p, "job-1");
  store->Release(p, "never-taken");
  CHECK(store->Admit(p, "job-4", 60'000).status.code() == ErrorCode::kTooManyRequests);
}

TEST_CASE("leases expire, and Renew keeps a live one", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal p = Client("lease", 600, 2);
  REQUIRE(store->Admit(p, "a", 1'000).status.ok());
  REQUIRE(store->Admit(p, "b", 1'000).status.ok());
  REQUIRE(store->Admit(p, "c", 1'000).status.code() == ErrorCode::kTooManyRequests);

  clock.AdvanceMs(900);
  store->Renew(p, "a", 1'000);  // a now lives until t=1900
  clock.AdvanceMs(200);         // t=1100: b has expired
  REQUIRE(store->Admit(p, "c", 1'000).status.ok());
  CHECK(store->Admit(p, "d", 1'000).status.code() == ErrorCode::kTooManyRequests);

  clock.AdvanceMs(900);          // t=2000: a expired; c lives until 2100
  store->Renew(p, "a", 60'000);  // expired: must not come back
  CHECK(store->Admit(p, "d", 1'000).status.ok());
  CHECK(store->Admit(p, "e", 1'000).status.code() == ErrorCode::kTooManyRequests);
}

TEST_CASE("clients have independent quotas", "[quota]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  auto store = MakeStore(kind, &clock);
  Principal a = Client("indep-a", 6, 1);
  Principal b = Client("indep-b", 6, 1);
  REQUIRE(store->Admit(a, "x", 60'000).status.ok());
  CHECK(store->Admit(a, "y", 60'000).status.code() == ErrorCode::kTooManyRequests);
  CHECK(store->Admit(b, "x", 60'000).status.ok());
}

TEST_CASE("the in-memory store forgets idle clients", "[quota]") {
  core::ManualClock clock;
  core::InMemoryQuotaStore store(&clock);
  Principal p = Client("idle", 60, 2);
  REQUIRE(store.Admit(p, "a", 5'000).status.ok());
  CHECK(store.tracked_clients() == 1);
  store.Release(p, "a");
  CHECK(store.tracked_clients() == 1);  // bucket not yet full
  clock.AdvanceMs(1'000);
  store.Release(p, "a");
  CHECK(store.tracked_clients() == 0);
  CHECK(store.Peek(p).remaining == 10);
}

TEST_CASE("two gateways sharing Redis never admit more than one bucket", "[quota][redis]") {
  core::ManualClock clock;
  core::RedisQuotaStore first(Connect(SharedRedis().url()), &clock);
  core::RedisQuotaStore second(Connect(SharedRedis().url()), &clock);
  Principal p = Client("shared", 120, 1'000);  // capacity 20, 2 tokens per second
  std::atomic<int> admitted{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  const auto started = std::chrono::steady_clock::now();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      core::QuotaStore& store = t % 2 == 0 ? static_cast<core::QuotaStore&>(first) : second;
      for (int i = 0; i < 10; ++i) {
        core::QuotaDecision d = store.Admit(p, "t" + std::to_string(t) + "-" + std::to_string(i), 60'000);
        if (d.status.ok()) {
          ++admitted;
        } else if (d.status.code() == ErrorCode::kTooManyRequests) {
          ++refused;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  // Redis's clock runs during the race: a slow race may earn a token or two more, never more
  // than the elapsed time pays for.
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(admitted.load() >= 20);
  CHECK(admitted.load() <= 20 + static_cast<int>(elapsed_s * 2) + 1);
  CHECK(admitted.load() + refused.load() == 80);

  clock.AdvanceMs(1'000);  // 2 tokens more, seen by both replicas
  CHECK(second.Admit(p, "late-1", 60'000).status.ok());
  CHECK(first.Admit(p, "late-2", 60'000).status.ok());
}

TEST_CASE("replicas whose clocks disagree by minutes agree on leases and buckets",
          "[quota][redis]") {
  // Each store is handed a clock; were its reading used, the store running ten minutes fast
  // would see the other's leases as long expired and its bucket as refilled.
  core::ManualClock fast;
  core::ManualClock slow(fast.NowMs() - 10 * 60'000);
  auto conn = Connect(SharedRedis().url());
  core::RedisQuotaStore ahead(conn, &fast);
  core::RedisQuotaStore behind(Connect(SharedRedis().url()), &slow);

  Principal p = Client("skew", 600, 1);
  REQUIRE(behind.Admit(p, "a", 60'000).status.ok());
  core::QuotaDecision d = ahead.Admit(p, "b", 60'000);
  CHECK(d.status.code() == ErrorCode::kTooManyRequests);
  CHECK_THAT(d.status.message(), Catch::Contains("concurrent"));

  // The lease's expiry is Redis's TIME plus the TTL, whichever replica took it.
  auto time = conn->Command({"TIME"});
  REQUIRE(time.ok());
  REQUIRE(time->elements.size() == 2);
  const int64_t redis_ms =
      std::stoll(time->elements[0].str) * 1000 + std::stoll(time->elements[1].str) / 1000;
  auto score = conn->Command({"ZSCORE", ahead.LeasesKey(p.client_id), "a"});
  REQUIRE(score.ok());
  REQUIRE(score->type == core::RedisReply::Type::kString);
  const int64_t expiry = std::stoll(score->str);
  CHECK(expiry > redis_ms + 55'000);
  CHECK(expiry <= redis_ms + 60'000);

  // Renewed by the fast replica, expired for both at the same moment.
  ahead.Renew(p, "a", 1'000);
  fast.AdvanceMs(800);
  slow.AdvanceMs(800);
  CHECK(ahead.Admit(p, "c", 1'000).status.code() == ErrorCode::kTooManyRequests);
  CHECK(behind.Admit(p, "c", 1'000).status.code() == ErrorCode::kTooManyRequests);
  fast.AdvanceMs(400);
  slow.AdvanceMs(400);
  CHECK(behind.Admit(p, "c", 60'000).status.ok());
  CHECK(ahead.Admit(p, "d", 60'000).status.code() == ErrorCode::kTooManyRequests);

  // One bucket, one clock: the fast replica refills nothing the slow one has not.
  Principal q = Client("skew-bucket", 6, 100);  // capacity 1, a token every 10 s
  REQUIRE(behind.Admit(q, "a", 60'000).status.ok());
  CHECK(ahead.Admit(q, "b", 60'000).status.code() == ErrorCode::kTooManyRequests);
  CHECK(behind.Admit(q, "b", 60'000).status.code() == ErrorCode::kTooManyRequests);
}

TEST_CASE("quota keys carry expiries so idle clients leave no state", "[quota][redis]") {
  core::ManualClock clock;
  auto conn = Connect(SharedRedis().url());
  core::RedisQuotaStore store(conn, &clock);
  Principal p = Client("ttl", 60, 5);
  REQUIRE(store.Admit(p, "a", 30'000).status.ok());
  REQUIRE(store.Admit(p, "b", 30'000).status.ok());

  auto bucket_ttl = conn->Command({"PTTL", store.BucketKey(p.client_id)});
  REQUIRE(bucket_ttl.ok());
  // 2 tokens missing at 1/s: full after 2 s (+1 s slack).
  CHECK(bucket_ttl->integer > 2'000);
  CHECK(bucket_ttl->integer <= 3'000);
  auto lease_ttl = conn->Command({"PTTL", store.LeasesKey(p.client_id)});
  REQUIRE(lease_ttl.ok());
  CHECK(lease_ttl->integer > 30'000);
  CHECK(lease_ttl->integer <= 31'000);

  store.Release(p, "a");
  store.Release(p, "b");
  auto exists = conn->Command({"EXISTS", store.LeasesKey(p.client_id)});
  REQUIRE(exists.ok());
  CHECK(exists->integer == 0);
}

TEST_CASE("the script is reloaded after SCRIPT FLUSH", "[quota][redis]") {
  core::ManualClock clock;
  auto conn = Connect(SharedRedis().url());
  core::RedisQuotaStore store(conn, &clock);
  Principal p = Client("flush", 60, 5);
  REQUIRE(store.Admit(p, "a", 30'000).status.ok());
  REQUIRE(conn->Command({"SCRIPT", "FLUSH"}).ok());
  core::QuotaDecision d = store.Admit(p, "b", 30'000);
  CHECK(d.status.ok());
  CHECK(d.info.remaining == 8);
}

TEST_CASE("Redis down: Admit fails closed with service_unavailable", "[quota][redis]") {
  core::ManualClock clock;
  const int port = testing::FreePort();  // nothing listens here
  core::RedisOptions options;
  options.connect_timeout = std::chrono::milliseconds(300);
  auto conn = core::RedisConnection::Create("redis://127.0.0.1:" + std::to_string(port), options);
  REQUIRE(conn.ok());
  core::RedisQuotaStore store(*conn, &clock);
  Principal p = Client("down", 60, 2);
  for (int i = 0; i < 3; ++i) {
    core::QuotaDecision d = store.Admit(p, "a", 30'000);
    CHECK(d.status.code() == ErrorCode::kServiceUnavailable);
    CHECK(d.info.limit == 10);
  }
  core::RateLimitInfo info = store.Peek(p);
  CHECK(info.limit == 10);
  CHECK(info.remaining == 0);
  store.Release(p, "a");        // must not crash or throw
  store.Renew(p, "a", 30'000);  // likewise
}

TEST_CASE("Redis restarted: the store reconnects on its own", "[quota][redis]") {
  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  core::ManualClock clock;
  core::RedisQuotaStore store(Connect(server->url()), &clock);
  Principal p = Client("restart", 60, 5);
  REQUIRE(store.Admit(p, "a", 30'000).status.ok());

  server->Stop();
  CHECK(store.Admit(p, "b", 30'000).status.code() == ErrorCode::kServiceUnavailable);
  REQUIRE(server->Restart());

  // The first command after the restart may still hit the dead connection; within a few tries
  // the store must be back (with a fresh bucket: persistence is off).
  std::optional<core::QuotaDecision> ok;
  for (int attempt = 0; attempt < 50 && !ok; ++attempt) {
    core::QuotaDecision d = store.Admit(p, "b", 30'000);
    if (d.status.ok()) {
      ok = d;
    } else {
      CHECK(d.status.code() == ErrorCode::kServiceUnavailable);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  REQUIRE(ok.has_value());
  CHECK(ok->info.remaining == 9);
}

}  // namespace
}  // namespace dnaserve::core
