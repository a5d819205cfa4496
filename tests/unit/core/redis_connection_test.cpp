// The Redis client wrapper: URL parsing (credentials, IPv6, db), typed replies, pipelines,
// EVALSHA with its NOSCRIPT fallback, database selection and authentication against a real
// redis-server, and concurrent use from several threads.
#include "core/redis/redis_connection.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

using testing::SharedRedis;

TEST_CASE("Redis URLs parse into host, port, db and credentials", "[redis]") {
  auto plain = core::RedisUrl::Parse("redis://127.0.0.1:6390");
  REQUIRE(plain.ok());
  CHECK(plain->host == "127.0.0.1");
  CHECK(plain->port == 6390);
  CHECK(plain->db == 0);
  CHECK(plain->password.empty());

  auto defaults = core::RedisUrl::Parse("redis://cache.internal");
  REQUIRE(defaults.ok());
  CHECK(defaults->host == "cache.internal");
  CHECK(defaults->port == 6379);

  auto full = core::RedisUrl::Parse("redis://:s3cr%40t@redis:7000/3");
  REQUIRE(full.ok());
  CHECK(full->host == "redis");
  CHECK(full->port == 7000);
  CHECK(full->db == 3);
  CHECK(full->username.empty());
  CHECK(full->password == "s3cr@t");
  CHECK(full->Describe() == "redis:7000/3");
  CHECK(full->Describe().find("s3cr") == std::string::npos);

  auto acl = core::RedisUrl::Parse("redis://gateway:pw@10.0.0.5/1");
  REQUIRE(acl.ok());
  CHECK(acl->username == "gateway");
  CHECK(acl->password == "pw");
  CHECK(acl->db == 1);

  auto v6 = core::RedisUrl::Parse("redis://[::1]:6381/2");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 6381);
  CHECK(v6->db == 2);
  CHECK(v6->Describe() == "[::1]:6381/2");

  for (const std::string bad :
       {"", "127.0.0.1:6379", "http://x:1", "rediss://x:1", "redis://", "redis://:6379",
        "redis://x:0", "redis://x:65536", "redis://x:port", "redis://x:", "redis://x:1/db",
        "redis://x:1/-1", "redis://[::1", "redis://:p%zz@x", "redis://:p%4@x"}) {
    INFO(bad);
    auto parsed = core::RedisUrl::Parse(bad);
    CHECK_FALSE(parsed.ok());
  }
}

TEST_CASE("commands return typed replies, errors are replies, not failures", "[redis]") {
  auto conn = core::RedisConnection::Create(SharedRedis().url());
  REQUIRE(conn.ok());
  core::RedisConnection& redis = **conn;
  CHECK(redis.Ping().ok());

  const std::string key = "test:conn:" + std::to_string(testing::FreePort());
  std::string binary("a\0b\r\nc", 6);
  auto set = redis.Command({"SET", key, binary});
  REQUIRE(set.ok());
  CHECK(set->type == core::RedisReply::Type::kStatus);
  CHECK(set->str == "OK");
  auto get = redis.Command({"GET", key});
  REQUIRE(get.ok());
  CHECK(get->type == core::RedisReply::Type::kString);
  CHECK(get->str == binary);
  auto missing = redis.Command({"GET", key + ":none"});
  REQUIRE(missing.ok());
  CHECK(missing->IsNil());
  auto incr = redis.Command({"INCRBY", key + ":n", "41"});
  REQUIRE(incr.ok());
  CHECK(incr->type == core::RedisReply::Type::kInteger);
  CHECK(incr->integer == 41);
  auto wrong = redis.Command({"INCR", key});
  REQUIRE(wrong.ok());
  CHECK(wrong->IsError());
  CHECK_FALSE(wrong->str.empty());

  auto replies =
      redis.Pipeline({{"RPUSH", key + ":l", "x", "y"}, {"LRANGE", key + ":l", "0", "-1"}});
  REQUIRE(replies.ok());
  REQUIRE(replies->size() == 2);
  CHECK((*replies)[0].integer == 2);
  REQUIRE((*replies)[1].type == core::RedisReply::Type::kArray);
  REQUIRE((*replies)[1].elements.size() == 2);
  CHECK((*replies)[1].elements[1].str == "y");
}

TEST_CASE("Eval runs scripts through EVALSHA and falls back after SCRIPT FLUSH", "[redis]") {
  auto conn = core::RedisConnection::Create(SharedRedis().url());
  REQUIRE(conn.ok());
  core::RedisConnection& redis = **conn;
  core::RedisScript script("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) * 2}");
  CHECK(script.sha1().size() == 40);
  for (int round = 0; round < 2; ++round) {
    auto reply = redis.Eval(script, {"k"}, {"v", "21"});
    REQUIRE(reply.ok());
    REQUIRE(reply->elements.size() == 3);
    CHECK(reply->elements[0].str == "k");
    CHECK(reply->elements[1].str == "v");
    CHECK(reply->elements[2].integer == 42);
    // The server now knows the script under the SHA-1 we computed.
    auto exists = redis.Command({"SCRIPT", "EXISTS", script.sha1()});
    REQUIRE(exists.ok());
    CHECK(exists->elements.at(0).integer == 1);
    REQUIRE(redis.Command({"SCRIPT", "FLUSH"}).ok());
  }
  auto broken = redis.Eval(core::RedisScript("return redis.call('NOSUCHCOMMAND')"), {}, {});
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().code() == ErrorCode::kServiceUnavailable);
}

TEST_CASE("the URL's database is selected on every connection", "[redis]") {
  auto db0 = core::RedisConnection::Create(SharedRedis().url());
  core::RedisOptions options;
  options.pool_size = 3;
  auto db5 = core::RedisConnection::Create(SharedRedis().url() + "/5", options);
  REQUIRE(db0.ok());
  REQUIRE(db5.ok());
  const std::string key = "test:db:" + std::to_string(testing::FreePort());
  for (int i = 0; i < 6; ++i) REQUIRE((*db5)->Command({"SET", key, "five"}).ok());
  auto in5 = (*db5)->Command({"GET", key});
  REQUIRE(in5.ok());
  CHECK(in5->str == "five");
  auto in0 = (*db0)->Command({"GET", key});
  REQUIRE(in0.ok());
  CHECK(in0->IsNil());
}

TEST_CASE("a password-protected Redis needs the URL's password", "[redis]") {
  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  auto admin = core::RedisConnection::Create(server->url());
  REQUIRE(admin.ok());
  REQUIRE((*admin)->Command({"CONFIG", "SET", "requirepass", "pa:ss@word"}).ok());

  auto anonymous = core::RedisConnection::Create(server->url());
  REQUIRE(anonymous.ok());
  auto refused = (*anonymous)->Command({"GET", "x"});
  // Without AUTH Redis answers NOAUTH as an error reply.
  REQUIRE(refused.ok());
  CHECK(refused->IsError());

  auto wrong = core::RedisConnection::Create("redis://:nope@127.0.0.1:" + std::to_string(server->port()));
  REQUIRE(wrong.ok());
  Status wrong_ping = (*wrong)->Ping();
  CHECK(wrong_ping.code() == ErrorCode::kServiceUnavailable);
  CHECK(wrong_ping.message().find("nope") == std::string::npos);

  auto right = core::RedisConnection::Create("redis://:pa%3Ass%40word@127.0.0.1:" +
                                       std::to_string(server->port()));
  REQUIRE(right.ok());
  CHECK((*right)->Ping().ok());
}

TEST_CASE("many threads share one connection object safely", "[redis]") {
  auto conn = core::RedisConnection::Create(SharedRedis().url());
  REQUIRE(conn.ok());
  const std::string key = "test:threads:" + std::to_string(testing::FreePort());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto r = (*conn)->Command({"INCR", key});
        if (!r.ok() || r->type != core::RedisReply::Type::kInteger) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  auto total = (*conn)->Command({"GET", key});
  REQUIRE(total.ok());
  CHECK(total->str == "1600");
}

TEST_CASE("an unreachable Redis fails fast with service_unavailable", "[redis]") {
  core::RedisOptions options;
  options.connect_timeout = std::chrono::milliseconds(300);
  auto conn =
      core::RedisConnection::Create("redis://127.0.0.1:" + std::to_string(testing::FreePort()), options);
  REQUIRE(conn.ok());  // lazy: not an error until used
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    auto r = (*conn)->Command({"PING"});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kServiceUnavailable);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("after a Redis restart the next command succeeds on a fresh connection", "[redis]") {
  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  core::RedisOptions options;
  options.pool_size = 1;  // the one connection is the one the restart killed
  auto conn = core::RedisConnection::Create(server->url(), options);
  REQUIRE(conn.ok());
  REQUIRE((*conn)->Command({"SET", "k", "before"}).ok());
  REQUIRE(server->Restart());
  auto reply = (*conn)->Command({"GET", "k"});
  REQUIRE(reply.ok());
  CHECK(reply->IsNil());  // a new, empty server
  CHECK((*conn)->Ping().ok());
}

TEST_CASE("a blocking command waits on a connection of its own and is interrupted at once",
          "[redis]") {
  auto conn = testing::ConnectRedis(SharedRedis().url());
  BlockingRedisConnection blocking(conn);
  const std::string stream = "blocking-test:" + std::to_string(std::rand());
  auto read = [&](int block_ms) {
    return blocking.Command({"XREAD", "BLOCK", std::to_string(block_ms), "STREAMS", stream, "$"},
                            std::chrono::milliseconds(block_ms + 2000));
  };
  // Its BLOCK timeout passes: a nil reply.
  auto timed_out = read(50);
  REQUIRE(timed_out.ok());
  CHECK(timed_out->IsNil());
  // An entry added meanwhile (through the pool) ends the wait with it.
  bool written = false;  // Catch2's assertions belong to the test's thread
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    written = conn->Command({"XADD", stream, "*", "f", "v"}).ok();
  });
  auto woken = read(10000);
  writer.join();
  REQUIRE(written);
  REQUIRE(woken.ok());
  CHECK(woken->type == RedisReply::Type::kArray);
  // An interrupt from another thread ends a wait of 10 s at once...
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    blocking.Interrupt();
  });
  const auto started = std::chrono::steady_clock::now();
  auto interrupted = read(10000);
  interrupter.join();
  REQUIRE_FALSE(interrupted.ok());
  CHECK(interrupted.status().code() == ErrorCode::kCancelled);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  // ...one given before the command stops it from being sent, and none is left over after.
  blocking.Interrupt();
  auto not_sent = read(10000);
  REQUIRE_FALSE(not_sent.ok());
  CHECK(not_sent.status().code() == ErrorCode::kCancelled);
  auto again = read(50);
  REQUIRE(again.ok());
  CHECK(again->IsNil());
}

TEST_CASE("a blocking command fails with service_unavailable when Redis goes away", "[redis]") {
  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  auto conn = RedisConnection::Create(server->url());
  REQUIRE(conn.ok());
  BlockingRedisConnection blocking(*conn);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server->Stop();
  });
  auto cut = blocking.Command({"BLPOP", "nothing", "10"}, std::chrono::seconds(12));
  stopper.join();
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().code() == ErrorCode::kServiceUnavailable);
  // Back on the same port: the next command opens a new connection.
  REQUIRE(server->Restart());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the reconnect back-off
  auto after = blocking.Command({"BLPOP", "nothing", "0.05"}, std::chrono::seconds(2));
  REQUIRE(after.ok());
  CHECK(after->IsNil());
}

}  // namespace
}  // namespace dnaserve::core
