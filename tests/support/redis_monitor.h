// What a redis-server executes, seen through MONITOR on a connection of its own: one line per
// command, as the server prints them ("<unix time with microseconds> [<db> <client>] "<command>"
// "<arg>" ..."; commands run by a Lua script show "lua" as their client). Tests count an idle
// process's commands with it; benchmarks read the server's timestamps.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dnaserve::testing {

class RedisMonitor {
 public:
  RedisMonitor() = default;
  RedisMonitor(const RedisMonitor&) = delete;
  RedisMonitor& operator=(const RedisMonitor&) = delete;
  ~RedisMonitor() { Stop(); }

  // Connects to 127.0.0.1:port and sends MONITOR; true once the server has confirmed it: every
  // command executed from then on is seen.
  bool Start(int port);
  // Ends the connection (the lines seen so far stay readable).
  void Stop();
  // The commands seen so far, in order.
  std::vector<std::string> Lines();
  size_t Count();

  // The server time (microseconds since the epoch) at the start of a MONITOR line; -1 when
  // the line does not start with one.
  static int64_t Micros(const std::string& line);

 private:
  void Read();

  int fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::string pending_;  // bytes of a line not complete yet (reader thread only)
};

}  // namespace dnaserve::testing
