// For Catch2 test cases (unprefixed macros) of the Redis-backed stores: one redis-server per test
// process, and connections to it that fail the test when they cannot be made.
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

}  // namespace dnaserve::testing
