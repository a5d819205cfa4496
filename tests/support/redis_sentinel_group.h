// For Catch2 test cases (unprefixed macros): a real Redis Sentinel group on free loopback ports,
// a primary, replicas and sentinels, each a redis-server process (Debian's redis-server runs as
// a sentinel with --sentinel, as the redis-sentinel package's binary is the same program).
// Sentinel timings are short (down after 1 s) so that a failover takes seconds.
#pragma once

#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/redis/redis_connection.h"
#include "tests/support/test_env.h"

namespace dnaserve::testing {

class RedisSentinelGroup {
 public:
  static constexpr const char* kName = "dnaserve-test";

  RedisSentinelGroup() : dir_(MakeTempDir("sentinel-group")) {}

  // Passwords for the processes started after this call: `data` is every server's requirepass
  // (and a replica's masterauth; the sentinels' auth-pass), `sentinel` every sentinel's own
  // requirepass (and sentinel-pass, with which sentinels talk to each other). Empty = none.
  void SetPasswords(std::string data, std::string sentinel) {
    data_password_ = std::move(data);
    sentinel_password_ = std::move(sentinel);
  }

  // One redis-server; a replica of the server on `primary_port` when it is not 0.
  int StartServer(int primary_port = 0) {
    const int port = FreePort();
    std::vector<std::string> argv = {"/usr/bin/redis-server", "--port", std::to_string(port),
                                     "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                     "--dir", dir_,
                                     // A replica's first sync at once, not after 5 s.
                                     "--repl-diskless-sync", "yes",
                                     "--repl-diskless-sync-delay", "0"};
    if (primary_port != 0) {
      argv.insert(argv.end(), {"--replicaof", "127.0.0.1", std::to_string(primary_port)});
    }
    if (!data_password_.empty()) {
      argv.insert(argv.end(), {"--requirepass", data_password_, "--masterauth", data_password_});
    }
    servers_.emplace_back(std::make_unique<ChildProcess>());
    REQUIRE(servers_.back()->Start(argv, {}, dir_ + "/redis-" + std::to_string(port) + ".log"));
    REQUIRE(WaitForPort(port, std::chrono::seconds(10)));
    server_ports_.push_back(port);
    return port;
  }

  // A sentinel watching the group kName at `watched_port` (quorum 2 of 3 by default).
  int StartSentinel(int watched_port, int quorum = 2) {
    const int port = FreePort();
    const std::string conf = dir_ + "/sentinel-" + std::to_string(port) + ".conf";
    std::ofstream out(conf);
    out << "port " << port << "\nbind 127.0.0.1\ndir " << dir_ << "\n"
        << "sentinel monitor " << kName << " 127.0.0.1 " << watched_port << " " << quorum << "\n"
        << "sentinel down-after-milliseconds " << kName << " 1000\n"
        << "sentinel failover-timeout " << kName << " 3000\n"
        << "sentinel parallel-syncs " << kName << " 1\n";
    if (!data_password_.empty()) out << "sentinel auth-pass " << kName << " " << data_password_ << "\n";
    if (!sentinel_password_.empty()) {
      out << "requirepass " << sentinel_password_ << "\nsentinel sentinel-pass "
          << sentinel_password_ << "\n";
    }
    out.close();
    sentinels_.emplace_back(std::make_unique<ChildProcess>());
    REQUIRE(sentinels_.back()->Start({"/usr/bin/redis-server", conf, "--sentinel"}, {},
                                     dir_ + "/sentinel-" + std::to_string(port) + ".log"));
    REQUIRE(WaitForPort(port, std::chrono::seconds(10)));
    sentinel_ports_.push_back(port);
    return port;
  }

  ChildProcess& Server(int port) { return *servers_[IndexOf(server_ports_, port)]; }
  ChildProcess& Sentinel(int port) { return *sentinels_[IndexOf(sentinel_ports_, port)]; }

  // A plain connection to one process (admin commands of the test).
  static std::shared_ptr<core::RedisConnection> Direct(int port, const std::string& password = "") {
    core::RedisOptions options;
    options.pool_size = 1;
    options.connect_timeout = std::chrono::milliseconds(500);
    options.password = password;
    auto conn = core::RedisConnection::Create("redis://127.0.0.1:" + std::to_string(port), options);
    REQUIRE(conn.ok());
    return *conn;
  }

  // "master" / "slave" / "" (unreachable).
  static std::string Role(int port) {
    auto reply = Direct(port)->Command({"ROLE"});
    if (!reply.ok() || reply->elements.empty()) return "";
    return reply->elements[0].str;
  }

  // Polls until the primary on `primary_port` has `replicas` replicas online.
  static bool WaitForReplicas(int primary_port, int replicas, std::chrono::seconds timeout,
                              const std::string& password = "") {
    auto conn = Direct(primary_port, password);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      // WAIT with no write pending answers the replicas that are connected and in step.
      auto reply = conn->Command({"WAIT", std::to_string(replicas), "100"});
      if (reply.ok() && reply->type == core::RedisReply::Type::kInteger &&
          reply->integer >= replicas) {
        auto info = conn->Command({"INFO", "replication"});
        const std::string online = "state=online";
        size_t count = 0;
        for (size_t at = info.ok() ? info->str.find(online) : std::string::npos;
             at != std::string::npos; at = info->str.find(online, at + 1)) {
          ++count;
        }
        if (count >= static_cast<size_t>(replicas)) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Polls until every sentinel knows the other sentinels and `replicas` replicas (it can then
  // take part in a failover).
  bool WaitForSentinels(size_t replicas, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      bool ready = true;
      for (int port : sentinel_ports_) {
        if (!Sentinel(port).Running()) continue;
        auto conn = Direct(port, sentinel_password_);
        auto others = conn->Command({"SENTINEL", "sentinels", kName});
        auto known = conn->Command({"SENTINEL", "replicas", kName});
        ready = ready && others.ok() && known.ok() &&
                others->elements.size() + 1 >= sentinel_ports_.size() &&
                known->elements.size() >= replicas;
      }
      if (ready) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  const std::vector<int>& sentinel_ports() const { return sentinel_ports_; }
  const std::string& dir() const { return dir_; }

  // A connection in Sentinel mode through `sentinels`, with short timeouts.
  static std::shared_ptr<core::RedisConnection> ViaSentinels(
      const std::vector<core::RedisEndpoint>& sentinels, int wait_replicas = 0) {
    core::RedisOptions options;
    options.sentinels = sentinels;
    options.primary_name = kName;
    options.connect_timeout = std::chrono::milliseconds(500);
    options.command_timeout = std::chrono::milliseconds(1500);
    options.sentinel_timeout = std::chrono::milliseconds(300);
    options.wait_replicas = wait_replicas;
    options.wait_timeout = std::chrono::milliseconds(300);
    auto conn = core::RedisConnection::Create("redis://unused", options);
    REQUIRE(conn.ok());
    return *conn;
  }
  static std::vector<core::RedisEndpoint> Endpoints(const std::vector<int>& ports) {
    std::vector<core::RedisEndpoint> out;
    for (int p : ports) out.push_back({"127.0.0.1", p});
    return out;
  }

 private:
  static size_t IndexOf(const std::vector<int>& ports, int port) {
    for (size_t i = 0; i < ports.size(); ++i) {
      if (ports[i] == port) return i;
    }
    FAIL("no process on port " << port);
    return 0;
  }

  std::string dir_;
  std::string data_password_;
  std::string sentinel_password_;
  std::vector<int> server_ports_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
  std::vector<int> sentinel_ports_;
  std::vector<std::unique_ptr<ChildProcess>> sentinels_;
};

}  // namespace dnaserve::testing
