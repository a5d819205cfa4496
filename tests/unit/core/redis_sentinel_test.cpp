// The Redis connection in Sentinel mode against real processes (tests/support/
// redis_sentinel_group.h): the primary found through the sentinels and checked with ROLE, a
// sentinel that names a replica caught by that check, a lost sentinel, the primary SIGKILLed and
// the connection following the sentinels' promotion (scripts reloaded on the new primary, the
// blocking connection too), and the WAIT that refuses a job too few replicas confirmed.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/config/shared_settings.h"
#include "core/jobs/job_queue.h"
#include "core/redis/redis_connection.h"
#include "core/redis/redis_sentinel.h"
#include "tests/support/redis_sentinel_group.h"

namespace dnaserve::core {
namespace {

using testing::RedisSentinelGroup;
using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// The port of the server a connection reaches (CONFIG GET port), 0 when it fails.
int ServerPort(RedisConnection& redis) {
  auto reply = redis.Command({"CONFIG", "GET", "port"});
  if (!reply.ok() || reply->elements.size() != 2) return 0;
  return std::stoi(reply->elements[1].str);
}

TEST_CASE("sentinel lists parse into host and port, and bad ones are refused",
          "[redis][sentinel]") {
  auto list = ParseRedisEndpoints("10.0.0.1:26379, sentinel-b:26380,[::1]:26381");
  REQUIRE(list.ok());
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].Describe() == "10.0.0.1:26379");
  CHECK((*list)[1].host == "sentinel-b");
  CHECK((*list)[1].port == 26380);
  CHECK((*list)[2].host == "::1");
  CHECK((*list)[2].Describe() == "[::1]:26381");
  for (const std::string bad : {"", "host", "host:", ":26379", "a:1,,b:2", "a:0", "a:70000",
                                "[::1]", "[::1]26379", "a:12x"}) {
    INFO(bad);
    auto parsed = ParseRedisEndpoints(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == ErrorCode::kBadRequest);
  }
  RedisOptions no_name;
  no_name.sentinels = *list;
  CHECK(RedisConnection::Create("redis://x", no_name).status().code() == ErrorCode::kBadRequest);
}

TEST_CASE("shared settings choose one address or a Sentinel group, and the WAIT",
          "[redis][sentinel]") {
  SharedSettings s;  // the default: one address
  auto single = ConnectRedis(s);
  REQUIRE(single.ok());
  CHECK((*single)->Describe() == "127.0.0.1:6379/0");
  CHECK((*single)->wait_replicas() == 0);

  s.redis_url = "redis://:secret@ignored:1/2";
  s.redis_sentinels = "127.0.0.1:26379, 127.0.0.1:26380";
  CHECK(ConnectRedis(s).status().code() == ErrorCode::kBadRequest);  // no group name
  s.redis_primary_name = "dnaserve";
  s.redis_wait_replicas = 1;
  auto group = ConnectRedis(s);
  REQUIRE(group.ok());
  CHECK((*group)->Describe() ==
        "primary 'dnaserve' via sentinels 127.0.0.1:26379,127.0.0.1:26380 db 2");
  CHECK((*group)->wait_replicas() == 1);

  s.redis_sentinels = "127.0.0.1";
  CHECK(ConnectRedis(s).status().code() == ErrorCode::kBadRequest);
  s.redis_sentinels.clear();  // a group name without sentinels is a mistake, not ignored
  CHECK(ConnectRedis(s).status().code() == ErrorCode::kBadRequest);
}

TEST_CASE("sentinel mode: a sentinel that names a replica is caught by the ROLE check",
          "[redis][sentinel]") {
  RedisSentinelGroup group;
  const int primary = group.StartServer();
  const int replica = group.StartServer(primary);
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15)));
  // The liar watches the replica's address under the group's name; it answers that address
  // for the primary (a stale or misconfigured sentinel). Quorum 1: it needs nobody's vote.
  const int liar = group.StartSentinel(replica, 1);
  const int honest = group.StartSentinel(primary, 1);
  auto liar_answer = RedisSentinelGroup::Direct(liar)->Command(
      {"SENTINEL", "get-master-addr-by-name", RedisSentinelGroup::kName});
  REQUIRE(liar_answer.ok());
  REQUIRE(liar_answer->elements.size() == 2);
  REQUIRE(liar_answer->elements[1].str == std::to_string(replica));  // it does lie

  SECTION("the next sentinel is asked and the primary is used") {
    auto redis = RedisSentinelGroup::ViaSentinels(RedisSentinelGroup::Endpoints({liar, honest}));
    CHECK(ServerPort(*redis) == primary);
    auto set = redis->Command({"SET", "k", "v"});
    REQUIRE(set.ok());
    CHECK(set->str == "OK");
    // Every pooled connection goes to the primary, not only the first.
    for (int i = 0; i < 8; ++i) CHECK(ServerPort(*redis) == primary);
  }
  SECTION("with only the liar, commands fail fast as unavailable: never the replica") {
    auto redis = RedisSentinelGroup::ViaSentinels(RedisSentinelGroup::Endpoints({liar}));
    const auto start = Clock::now();
    auto reply = redis->Command({"SET", "k", "v"});
    REQUIRE_FALSE(reply.ok());
    CHECK(reply.status().code() == ErrorCode::kServiceUnavailable);
    CHECK(reply.status().message().find("ROLE slave") != std::string::npos);
    CHECK(MsSince(start) < 3000);
  }
}

TEST_CASE("sentinel mode: no sentinel answering is unavailable at once, not a hang",
          "[redis][sentinel]") {
  // Two ports nobody listens on.
  auto redis = RedisSentinelGroup::ViaSentinels(
      RedisSentinelGroup::Endpoints({testing::FreePort(), testing::FreePort()}));
  const auto start = Clock::now();
  Status ping = redis->Ping();
  CHECK(ping.code() == ErrorCode::kServiceUnavailable);
  CHECK(ping.message().find("no sentinel named") != std::string::npos);
  CHECK(MsSince(start) < 2000);
}

TEST_CASE("sentinel mode: a lost sentinel, then the primary SIGKILLed: the connection follows "
          "the promotion",
          "[redis][sentinel][failover]") {
  RedisSentinelGroup group;
  const int primary = group.StartServer();
  const int replica_a = group.StartServer(primary);
  const int replica_b = group.StartServer(primary);
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 2, std::chrono::seconds(15)));
  const int s1 = group.StartSentinel(primary);
  const int s2 = group.StartSentinel(primary);
  const int s3 = group.StartSentinel(primary);
  REQUIRE(group.WaitForSentinels(2, std::chrono::seconds(20)));

  // The first sentinel of the list is lost before the service starts: the others answer.
  group.Sentinel(s1).Kill();
  REQUIRE_FALSE(group.Sentinel(s1).Running());
  auto redis = RedisSentinelGroup::ViaSentinels(RedisSentinelGroup::Endpoints({s1, s2, s3}),
                                                /*wait_replicas=*/1);
  REQUIRE(ServerPort(*redis) == primary);

  // Written and confirmed by a replica before the primary goes.
  const RedisScript incr("return redis.call('INCRBY', KEYS[1], ARGV[1])");
  auto confirmed = redis->EvalReplicated(incr, {"counter"}, {"5"});
  REQUIRE(confirmed.ok());
  CHECK(confirmed->confirmed);
  CHECK(confirmed->replicas >= 1);
  BlockingRedisConnection blocking(redis);
  REQUIRE(blocking.Command({"XADD", "s", "*", "f", "1"}, std::chrono::seconds(2)).ok());

  group.Server(primary).Kill();
  const auto killed = Clock::now();
  int failures = 0;
  int64_t slowest_ms = 0;
  int new_primary = 0;
  while (MsSince(killed) < 30000) {
    const auto call = Clock::now();
    auto reply = redis->Command({"INCRBY", "counter", "1"});
    slowest_ms = std::max(slowest_ms, MsSince(call));
    if (reply.ok() && !reply->IsError()) {
      new_primary = ServerPort(*redis);
      break;
    }
    ++failures;
    if (!reply.ok()) {
      // Each call during the switch is refused as unavailable (the gateway's 503).
      CHECK(reply.status().code() == ErrorCode::kServiceUnavailable);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int64_t window_ms = MsSince(killed);
  std::fprintf(stderr, "sentinel failover: first success %lld ms after SIGKILL, %d refused calls, "
               "slowest call %lld ms\n",
               static_cast<long long>(window_ms), failures, static_cast<long long>(slowest_ms));
  REQUIRE((new_primary == replica_a || new_primary == replica_b));
  CHECK(failures > 0);  // the kill was seen: the success is on the new primary, not the old
  // No call hung: each was bounded by the connect, command and sentinel timeouts.
  CHECK(slowest_ms < 4000);
  CHECK(RedisSentinelGroup::Role(new_primary) == "master");

  // The confirmed write survived: 5, plus the one increment that just succeeded.
  auto counter = redis->Command({"GET", "counter"});
  REQUIRE(counter.ok());
  CHECK(counter->str == "6");

  // The new primary's script cache is its own: EVALSHA answers NOSCRIPT and the script is sent.
  auto exists = RedisSentinelGroup::Direct(new_primary)->Command({"SCRIPT", "EXISTS", incr.sha1()});
  REQUIRE(exists.ok());
  CHECK(exists->elements.at(0).integer == 0);
  auto after = redis->Eval(incr, {"counter"}, {"10"});
  REQUIRE(after.ok());
  CHECK(after->integer == 16);

  // Every pooled connection and the blocking one follow (one each may need a retry first).
  for (int i = 0; i < 8; ++i) CHECK(ServerPort(*redis) == new_primary);
  StatusOr<RedisReply> xadd = Unavailable("not sent");
  for (int i = 0; i < 3 && !(xadd.ok() && !xadd->IsError()); ++i) {
    xadd = blocking.Command({"XADD", "s", "*", "f", "2"}, std::chrono::seconds(2));
  }
  REQUIRE(xadd.ok());
  CHECK_FALSE(xadd->IsError());
}

TEST_CASE("sentinel mode: a switch the sentinel orders (SENTINEL FAILOVER, as for an upgrade): "
          "the connection moves to the new primary",
          "[redis][sentinel][failover]") {
  RedisSentinelGroup group;
  const int primary = group.StartServer();
  const int replica = group.StartServer(primary);
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15)));
  const int s1 = group.StartSentinel(primary, 1);
  REQUIRE(group.WaitForSentinels(1, std::chrono::seconds(20)));
  auto redis = RedisSentinelGroup::ViaSentinels(RedisSentinelGroup::Endpoints({s1}));
  REQUIRE(ServerPort(*redis) == primary);

  // The old primary becomes a replica and stays up (the sentinel closes its clients' connections
  // as it demotes it): the next connection must not go back to it although it is still there.
  // The sentinel refuses (NOGOODSLAVE) until it has heard from the replica itself.
  StatusOr<RedisReply> failover = Unavailable("not sent");
  for (const auto asked = Clock::now(); MsSince(asked) < 20000;) {
    failover = RedisSentinelGroup::Direct(s1)->Command(
        {"SENTINEL", "FAILOVER", RedisSentinelGroup::kName});
    if (failover.ok() && !failover->IsError()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(failover.ok());
  INFO(failover->str);
  REQUIRE_FALSE(failover->IsError());
  const auto start = Clock::now();
  while (RedisSentinelGroup::Role(primary) != "slave" && MsSince(start) < 20000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(RedisSentinelGroup::Role(primary) == "slave");
  while (MsSince(start) < 20000) {
    auto reply = redis->Command({"SET", "after", "1"});
    if (reply.ok() && !reply->IsError()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(ServerPort(*redis) == replica);
  CHECK(RedisSentinelGroup::Direct(replica)->Command({"GET", "after"})->str == "1");
}

TEST_CASE("a server demoted under open connections: its READONLY is a refusal as unavailable, "
          "and writes go through once it is primary again",
          "[redis][sentinel]") {
  // As a managed Redis's failover looks from one address: the server behind it stops being the
  // primary while connections to it stay open (REPLICAOF by hand does not close them).
  RedisSentinelGroup group;
  const int a = group.StartServer();
  const int b = group.StartServer();
  RedisOptions options;
  options.pool_size = 2;
  auto redis = RedisConnection::Create("redis://127.0.0.1:" + std::to_string(a), options);
  REQUIRE(redis.ok());
  REQUIRE((*redis)->Command({"SET", "k", "1"})->str == "OK");
  REQUIRE((*redis)->Command({"SET", "k", "2"})->str == "OK");  // both pooled connections open

  auto demote = RedisSentinelGroup::Direct(a)->Command({"REPLICAOF", "127.0.0.1", std::to_string(b)});
  REQUIRE(demote->str == "OK");
  const RedisScript write("return redis.call('SET', KEYS[1], ARGV[1])");
  auto set = (*redis)->Command({"SET", "k", "3"});
  REQUIRE_FALSE(set.ok());
  CHECK(set.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(set.status().message().find("READONLY") != std::string::npos);
  auto script = (*redis)->Eval(write, {"k"}, {"4"});
  REQUIRE_FALSE(script.ok());
  CHECK(script.status().code() == ErrorCode::kServiceUnavailable);
  // Reads are still answered by the replica.
  CHECK((*redis)->Command({"GET", "k"}).ok());

  // The server is the primary again: the same connection object writes again.
  REQUIRE(RedisSentinelGroup::Direct(a)->Command({"REPLICAOF", "NO", "ONE"})->str == "OK");
  auto again = (*redis)->Eval(write, {"k"}, {"5"});
  REQUIRE(again.ok());
  CHECK(RedisSentinelGroup::Direct(a)->Command({"GET", "k"})->str == "5");
}

TEST_CASE("WAIT: a job too few replicas confirm in time is refused and withdrawn",
          "[redis][sentinel][wait]") {
  RedisSentinelGroup group;
  const int primary = group.StartServer();
  RedisOptions options;
  options.wait_replicas = 1;
  options.wait_timeout = std::chrono::milliseconds(200);
  auto redis = RedisConnection::Create("redis://127.0.0.1:" + std::to_string(primary), options);
  REQUIRE(redis.ok());
  RedisJobQueue queue(*redis);
  // Enqueues that must succeed wait longer: a replica of a loaded test machine may take more
  // than the refusals' 200 ms to acknowledge, which is not what these cases test.
  RedisOptions patient_options = options;
  patient_options.wait_timeout = std::chrono::milliseconds(10000);
  auto patient_redis =
      RedisConnection::Create("redis://127.0.0.1:" + std::to_string(primary), patient_options);
  REQUIRE(patient_redis.ok());
  RedisJobQueue patient_queue(*patient_redis);
  auto direct = RedisSentinelGroup::Direct(primary);
  QueuedJob job;
  job.client_id = "alice";
  job.kind = "predict";
  job.mode = "async";
  job.command = "cmd";

  // `already_queued`: entries of the client's stream before this job.
  auto refused_and_withdrawn = [&](const std::string& job_id, int64_t already_queued) {
    job.job_id = job_id;
    const auto start = Clock::now();
    Status queued = queue.Enqueue(job);
    CHECK(queued.code() == ErrorCode::kServiceUnavailable);
    CHECK(queued.retry_after_seconds() == std::optional<int64_t>(kRedisRetryAfterSeconds));
    CHECK(MsSince(start) >= 150);  // it did wait for the replica
    CHECK(MsSince(start) < 2000);
    // Not half-accepted: nothing left in the queue for a runner, and a runner that took the
    // entry meanwhile finds the job cancelled.
    CHECK(direct->Command({"XLEN", queue.ClientStream("alice")})->integer == already_queued);
    CHECK(direct->Command({"SISMEMBER", "dnaserve:queue:clients", "alice"})->integer ==
          (already_queued > 0 ? 1 : 0));
    CHECK(*queue.CancelRequested(job_id));
  };

  SECTION("no replica at all") { refused_and_withdrawn("job-no-replica", 0); }

  SECTION("a replica that has stopped answering, then answers again") {
    const int replica = group.StartServer(primary);
    REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15)));
    job.job_id = "job-ok";
    REQUIRE(patient_queue.Enqueue(job).ok());
    CHECK(direct->Command({"XLEN", queue.ClientStream("alice")})->integer == 1);

    REQUIRE(kill(group.Server(replica).pid(), SIGSTOP) == 0);
    refused_and_withdrawn("job-paused-replica", 1);
    REQUIRE(kill(group.Server(replica).pid(), SIGCONT) == 0);
    REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15)));
    job.job_id = "job-ok-again";
    CHECK(patient_queue.Enqueue(job).ok());
    CHECK(direct->Command({"XLEN", queue.ClientStream("alice")})->integer == 2);
  }
}

}  // namespace
}  // namespace dnaserve::core
