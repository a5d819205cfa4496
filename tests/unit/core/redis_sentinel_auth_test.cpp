// Sentinels with a password of their own (requirepass in sentinel.conf) in front of data nodes
// with another password, as real processes on loopback (tests/support/redis_sentinel_group.h):
// the right pair connects and follows a failover; a wrong, missing or unexpected password of
// either kind is refused at once with a message naming the setting to fix, is reported as
// refused credentials (the binaries then refuse to start: CheckRedisCredentials), and never
// hangs. Unreachable sentinels are not refused credentials (readiness waits for them instead).
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/config/shared_settings.h"
#include "core/redis/redis_connection.h"
#include "core/redis/redis_sentinel.h"
#include "tests/support/redis_sentinel_group.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

using testing::RedisSentinelGroup;
using Clock = std::chrono::steady_clock;

constexpr const char* kDataPassword = "data-Pa55";
constexpr const char* kSentinelPassword = "sentinel-Pa55";

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::shared_ptr<RedisConnection> Via(const std::vector<int>& sentinels,
                                     const std::string& data_password,
                                     const std::string& sentinel_password) {
  RedisOptions options;
  options.sentinels = RedisSentinelGroup::Endpoints(sentinels);
  options.primary_name = RedisSentinelGroup::kName;
  options.connect_timeout = std::chrono::milliseconds(500);
  options.command_timeout = std::chrono::milliseconds(1500);
  options.sentinel_timeout = std::chrono::milliseconds(300);
  options.password = data_password;
  options.sentinel_password = sentinel_password;
  auto redis = RedisConnection::Create("redis://unused", options);
  REQUIRE(redis.ok());
  return *redis;
}

std::string WriteSecret(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text << "\n";  // a trailing newline, as `echo` writes it
  return path;
}

// A primary, a replica and one sentinel (quorum 1), all with passwords.
struct PasswordGroup {
  RedisSentinelGroup group;
  int primary = 0;
  int replica = 0;
  int sentinel = 0;
  PasswordGroup() {
    group.SetPasswords(kDataPassword, kSentinelPassword);
    primary = group.StartServer();
    replica = group.StartServer(primary);
    REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15),
                                                kDataPassword));
    sentinel = group.StartSentinel(primary, 1);
    REQUIRE(group.WaitForSentinels(1, std::chrono::seconds(20)));
  }
};

TEST_CASE("sentinel passwords: the sentinels' and the data nodes' passwords, each its own, "
          "connect",
          "[redis][sentinel][auth]") {
  PasswordGroup g;
  auto redis = Via({g.sentinel}, kDataPassword, kSentinelPassword);
  auto set = redis->Command({"SET", "k", "v"});
  REQUIRE(set.ok());
  CHECK(set->str == "OK");
  CHECK(redis->KnownPrimary() == "127.0.0.1:" + std::to_string(g.primary));
  CHECK_FALSE(redis->credentials_refused());
  CHECK(CheckRedisCredentials(*redis).ok());

  // The same through the settings: both passwords from files (mounted Secrets).
  SharedSettings s;
  s.redis_url = "redis://unused/0";
  s.redis_sentinels = "127.0.0.1:" + std::to_string(g.sentinel);
  s.redis_primary_name = RedisSentinelGroup::kName;
  s.redis_password_file = WriteSecret(g.group.dir(), "redis-password", kDataPassword);
  s.redis_sentinel_password_file = WriteSecret(g.group.dir(), "sentinel-password", kSentinelPassword);
  auto configured = ConnectRedis(s);
  REQUIRE(configured.ok());
  CHECK(CheckRedisCredentials(**configured).ok());
  auto get = (*configured)->Command({"GET", "k"});
  REQUIRE(get.ok());
  CHECK(get->str == "v");
}

TEST_CASE("sentinel passwords: a wrong or missing password is refused at once, saying which",
          "[redis][sentinel][auth]") {
  PasswordGroup g;
  struct Case {
    const char* name;
    std::string data;
    std::string sentinel;
    const char* expect;
  };
  for (const Case& c : {
           Case{"wrong sentinel password", kDataPassword, "not-it",
                "refused the sentinel password (DNASERVE_REDIS_SENTINEL_PASSWORD_FILE)"},
           Case{"no sentinel password", kDataPassword, "",
                "wants a password (DNASERVE_REDIS_SENTINEL_PASSWORD_FILE)"},
           // The data password given as the sentinels' (a mix-up of the two Secrets).
           Case{"the data password for the sentinels", kDataPassword, kDataPassword,
                "refused the sentinel password"},
           Case{"wrong data password", "not-it", kSentinelPassword, "authentication refused"},
           Case{"no data password", "", kSentinelPassword,
                "wants a password (DNASERVE_REDIS_PASSWORD_FILE"},
       }) {
    INFO(c.name);
    auto redis = Via({g.sentinel}, c.data, c.sentinel);
    const auto start = Clock::now();
    Status ping = redis->Ping();
    CHECK(MsSince(start) < 3000);  // an answer, not a timeout
    REQUIRE_FALSE(ping.ok());
    CHECK(ping.code() == ErrorCode::kServiceUnavailable);
    CHECK(ping.message().find(c.expect) != std::string::npos);
    CHECK(ping.message().find("not-it") == std::string::npos);  // never the password itself
    CHECK(redis->credentials_refused());
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past the reconnect backoff
    Status check = CheckRedisCredentials(*redis);
    CHECK(check.code() == ErrorCode::kBadRequest);
    CHECK(check.message().find("refused the credentials") != std::string::npos);
    // A refused data password must not make the sentinel look like a liar: the next call asks
    // again and is refused the same way.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK(redis->Ping().message().find(c.expect) != std::string::npos);
  }
}

TEST_CASE("sentinel passwords: a password for sentinels that have none is refused, unreachable "
          "sentinels are not a credentials error",
          "[redis][sentinel][auth]") {
  RedisSentinelGroup group;  // no passwords
  const int primary = group.StartServer();
  const int sentinel = group.StartSentinel(primary, 1);

  auto unexpected = Via({sentinel}, "", kSentinelPassword);
  Status ping = unexpected->Ping();
  REQUIRE_FALSE(ping.ok());
  CHECK(ping.message().find("refused the sentinel password") != std::string::npos);
  CHECK(unexpected->credentials_refused());
  CHECK(CheckRedisCredentials(*unexpected).code() == ErrorCode::kBadRequest);

  // Nobody listening: unavailable, but a start-up goes on (readiness waits for Redis).
  auto nobody = Via({testing::FreePort()}, kDataPassword, kSentinelPassword);
  CHECK_FALSE(nobody->Ping().ok());
  CHECK_FALSE(nobody->credentials_refused());
  CHECK(CheckRedisCredentials(*nobody).ok());

  // And the right (empty) passwords work.
  auto plain = Via({sentinel}, "", "");
  CHECK(plain->Ping().ok());
  CHECK_FALSE(plain->credentials_refused());
}

TEST_CASE("sentinel passwords: settings refuse an unreadable password file and a sentinel "
          "password without sentinels",
          "[redis][sentinel][auth]") {
  const std::string dir = testing::MakeTempDir("sentinel-auth-settings");
  SharedSettings s;
  s.redis_sentinel_password_file = WriteSecret(dir, "sentinel-password", kSentinelPassword);
  auto without_sentinels = ConnectRedis(s);
  CHECK(without_sentinels.status().code() == ErrorCode::kBadRequest);
  CHECK(without_sentinels.status().message().find("without DNASERVE_REDIS_SENTINELS") !=
        std::string::npos);

  s.redis_sentinels = "127.0.0.1:26379";
  s.redis_primary_name = "dnaserve";
  s.redis_password_file = dir + "/missing";
  CHECK(ConnectRedis(s).status().code() == ErrorCode::kBadRequest);
  s.redis_password_file = WriteSecret(dir, "empty", "");
  auto empty = ConnectRedis(s);
  CHECK(empty.status().code() == ErrorCode::kBadRequest);
  CHECK(empty.status().message().find("is empty") != std::string::npos);
}

TEST_CASE("sentinel passwords: the primary SIGKILLed, the sentinels (talking to each other with "
          "their password) promote the replica and the connection follows",
          "[redis][sentinel][auth][failover]") {
  RedisSentinelGroup group;
  group.SetPasswords(kDataPassword, kSentinelPassword);
  const int primary = group.StartServer();
  const int replica = group.StartServer(primary);
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(15), kDataPassword));
  const int s1 = group.StartSentinel(primary);
  const int s2 = group.StartSentinel(primary);
  const int s3 = group.StartSentinel(primary);
  REQUIRE(group.WaitForSentinels(1, std::chrono::seconds(20)));  // they found each other

  auto redis = Via({s1, s2, s3}, kDataPassword, kSentinelPassword);
  REQUIRE(redis->Command({"SET", "before", "1"}).ok());
  REQUIRE(RedisSentinelGroup::WaitForReplicas(primary, 1, std::chrono::seconds(5), kDataPassword));

  group.Server(primary).Kill();
  const auto killed = Clock::now();
  bool written = false;
  while (!written && MsSince(killed) < 30000) {
    auto reply = redis->Command({"SET", "after", "1"});
    written = reply.ok() && !reply->IsError();
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(written);
  CHECK(redis->KnownPrimary() == "127.0.0.1:" + std::to_string(replica));
  CHECK(RedisSentinelGroup::Direct(replica, kDataPassword)->Command({"GET", "before"})->str == "1");
  CHECK_FALSE(redis->credentials_refused());
}

}  // namespace
}  // namespace dnaserve::core
