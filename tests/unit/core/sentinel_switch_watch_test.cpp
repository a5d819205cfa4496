// The `+switch-master` subscription (core/redis/sentinel_switch_watch.h): the message parsed,
// and, against real redis-server and sentinel processes (tests/support/redis_sentinel_group.h),
// a pool whose every connection is open to a primary that hangs (SIGSTOP: no error, no closed
// socket, nothing a command could trip over) moves to the promoted replica as soon as the
// sentinels announce it, without a command first failing on the former primary, and still does
// when the sentinel it was subscribed through is lost before the failover.
#include "core/redis/sentinel_switch_watch.h"

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/redis/redis_connection.h"
#include "tests/support/redis_sentinel_group.h"

namespace dnaserve::core {
namespace {

using testing::RedisSentinelGroup;
using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TEST_CASE("+switch-master messages name the new primary of the watched group only",
          "[redis][sentinel]") {
  auto moved = ParseSwitchMaster("orders 10.0.0.1 6379 10.0.0.2 6380", "orders");
  REQUIRE(moved.has_value());
  CHECK(moved->Describe() == "10.0.0.2:6380");
  auto v6 = ParseSwitchMaster("orders ::1 6379 ::2 6381", "orders");
  REQUIRE(v6.has_value());
  CHECK(v6->host == "::2");
  CHECK(v6->port == 6381);
  for (const std::string bad : {"other 10.0.0.1 6379 10.0.0.2 6380", "orders 10.0.0.1 6379",
                                "orders 10.0.0.1 6379 10.0.0.2 port", "orders a 1 b 0",
                                "orders 10.0.0.1 6379 10.0.0.2 6380 extra", ""}) {
    INFO(bad);
    CHECK_FALSE(ParseSwitchMaster(bad, "orders").has_value());
  }
}

// The port of the server a connection reaches (CONFIG GET port), 0 when it fails.
int ServerPort(RedisConnection& redis) {
  auto reply = redis.Command({"CONFIG", "GET", "port"});
  if (!reply.ok() || reply->elements.size() != 2) return 0;
  return std::stoi(reply->elements[1].str);
}

std::string NamedPrimary(int sentinel) {
  auto reply = RedisSentinelGroup::Direct(sentinel)->Command(
      {"SENTINEL", "get-master-addr-by-name", RedisSentinelGroup::kName});
  if (!reply.ok() || reply->elements.size() != 2) return "";
  return reply->elements[0].str + ":" + reply->elements[1].str;
}

TEST_CASE(
    "sentinel mode: +switch-master moves the whole pool off a hung primary at once, "
    "through another sentinel when the one listened to is lost",
    "[redis][sentinel][failover]") {
  RedisSentinelGroup group;
  const int primary = group.StartServer();
  const int replica = group.StartServer(primary);
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15)));
  const int s1 = group.StartSentinel(primary);
  const int s2 = group.StartSentinel(primary);
  const int s3 = group.StartSentinel(primary);
  REQUIRE(group.WaitForSentinels(1, std::chrono::seconds(20)));
  auto redis = RedisSentinelGroup::ViaSentinels(RedisSentinelGroup::Endpoints({s1, s2, s3}));
  // Every pooled connection open to the primary (the pool hands its slots out in turn).
  for (int i = 0; i < 8; ++i) REQUIRE(ServerPort(*redis) == primary);
  CHECK(redis->KnownPrimary() == "127.0.0.1:" + std::to_string(primary));

  // The sentinel the watch listens to (the first of the list) is lost first: the watch must
  // subscribe through another one.
  REQUIRE(redis->KnownPrimary() != "");
  group.Sentinel(s1).Kill();

  // The primary hangs: its connections stay open and silent. Nothing is sent through the pool
  // until the sentinels have promoted the replica.
  REQUIRE(kill(group.Server(primary).pid(), SIGSTOP) == 0);
  const auto stopped = Clock::now();
  const std::string promoted = "127.0.0.1:" + std::to_string(replica);
  while (NamedPrimary(s2) != promoted && MsSince(stopped) < 30000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(NamedPrimary(s2) == promoted);
  const auto announced = Clock::now();
  // The connection learns it from the message, not from a failed command.
  while (redis->KnownPrimary() != promoted && MsSince(announced) < 3000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr,
               "+switch-master: the pool knew the new primary %lld ms after a sentinel "
               "named it\n",
               static_cast<long long>(MsSince(announced)));
  CHECK(redis->KnownPrimary() == promoted);

  // The first command and every one after it go to the new primary: none is sent down a
  // connection to the hung one (that would wait out the command timeout and fail).
  int64_t slowest_ms = 0;
  for (int i = 0; i < 8; ++i) {
    const auto call = Clock::now();
    CHECK(ServerPort(*redis) == replica);
    slowest_ms = std::max(slowest_ms, MsSince(call));
  }
  std::fprintf(stderr, "+switch-master: slowest of 8 commands after the switch %lld ms\n",
               static_cast<long long>(slowest_ms));
  auto write = redis->Command({"SET", "after-switch", "1"});
  REQUIRE(write.ok());
  CHECK_FALSE(write->IsError());
  group.Server(primary).Kill();  // SIGKILL ends a stopped process too
}

}  // namespace
}  // namespace dnaserve::core
