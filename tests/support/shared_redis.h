// For Catch2 test cases (unprefixed macros) of the Redis-backed stores: one redis-server per test
// process, or one per test case (StartRedis), and connections that fail the test when they
// cannot be made.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>

#include "core/redis/redis_connection.h"
#include "tests/support/test_env.h"

namespace dnaserve::testing {

// Started by the first call, stopped when the test process exits.
inline RedisServer& SharedRedis() {
  static std::optional<RedisServer> server = RedisServer::Start();
  REQUIRE(server.has_value());
  return *server;
}

inline std::shared_ptr<core::RedisConnection> ConnectRedis(const std::string& url) {
  auto conn = core::RedisConnection::Create(url);
  REQUIRE(conn.ok());
  return *conn;
}

// A redis-server of the test case's own (it starts empty, whatever other cases stored) and a
// connection to it; the server stops when this goes out of scope.
struct OwnRedis {
  std::optional<RedisServer> server;
  std::shared_ptr<core::RedisConnection> redis;
};

inline OwnRedis StartRedis() {
  OwnRedis r;
  r.server = RedisServer::Start();
  REQUIRE(r.server.has_value());
  r.redis = ConnectRedis(r.server->url());
  return r;
}

}  // namespace dnaserve::testing
