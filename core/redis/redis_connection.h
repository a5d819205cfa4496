// A small thread-safe Redis client over hiredis 0.14 (the only file that includes hiredis is
// redis_connection.cc). A fixed pool of lazily opened connections, each guarded by a mutex;
// connect and command timeouts; after an I/O error the connection is dropped and the next
// command reconnects. Replies are copied into plain RedisReply values. Blocking commands
// (XREAD ... BLOCK) get a connection of their own, BlockingRedisConnection, at the end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::core {

// "redis://[[user]:password@]host[:port][/db]" (IPv6 hosts in brackets; port 6379, db 0 by
// default; the password may be %-encoded).
struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string username;
  std::string password;

  static StatusOr<RedisUrl> Parse(std::string_view url);
  // host:port/db, never the password (for logs).
  std::string Describe() const;
};

struct RedisReply {
  enum class Type { kNil, kString, kStatus, kInteger, kArray, kError };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus and kError
  int64_t integer = 0;
  std::vector<RedisReply> elements;

  bool IsError() const { return type == Type::kError; }
  bool IsNil() const { return type == Type::kNil; }
};

struct RedisOptions {
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{2000};
  // After a failed connect, commands fail fast for this long instead of each waiting for a
  // connect timeout.
  std::chrono::milliseconds reconnect_backoff{100};
  int pool_size = 4;
};

// A Lua script with its SHA-1, for EVALSHA.
class RedisScript {
 public:
  explicit RedisScript(std::string source);
  const std::string& source() const { return source_; }
  const std::string& sha1() const { return sha1_; }

 private:
  std::string source_;
  std::string sha1_;
};

class BlockingRedisConnection;

class RedisConnection {
 public:
  // Parses the URL; connections are opened on first use, so a Redis that is down at start-up
  // is not an error here (Ping tells).
  static StatusOr<std::shared_ptr<RedisConnection>> Create(std::string_view url,
                                                           RedisOptions options = {});
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // One command. A Redis error reply is a reply of type kError, not a failed Status; a failed
  // Status (service_unavailable) means Redis could not be reached or did not answer in time.
  StatusOr<RedisReply> Command(const std::vector<std::string>& args);
  // Several commands on one connection in one round trip; one reply per command.
  StatusOr<std::vector<RedisReply>> Pipeline(const std::vector<std::vector<std::string>>& commands);
  // EVALSHA, falling back to EVAL when the server does not have the script (NOSCRIPT, e.g.
  // after a restart). Here an error reply becomes a service_unavailable Status carrying the
  // Redis message, which callers log rather than show to clients.
  StatusOr<RedisReply> Eval(const RedisScript& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args);
  Status Ping();

  const RedisUrl& url() const { return url_; }

 private:
  friend class BlockingRedisConnection;  // opens its connection as the pool's are opened
  struct Slot;
  RedisConnection(RedisUrl url, RedisOptions options);
  Slot& Acquire(std::unique_lock<std::mutex>* lock);
  Status EnsureConnected(Slot& slot);

  RedisUrl url_;
  RedisOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<uint64_t> next_slot_{0};
};

// One connection of its own for blocking commands (XREAD / XREADGROUP ... BLOCK): a command
// that waits for seconds must neither hold one of the pool's connections nor delay the thread
// that wants it to stop. Opened like the pool's (same URL, credentials, db, connect timeout)
// when first used, and again after any failure. One caller at a time.
class BlockingRedisConnection {
 public:
  explicit BlockingRedisConnection(std::shared_ptr<RedisConnection> redis);
  ~BlockingRedisConnection();
  BlockingRedisConnection(const BlockingRedisConnection&) = delete;
  BlockingRedisConnection& operator=(const BlockingRedisConnection&) = delete;

  // Sends one command and waits up to `wait` for its reply (give the command's own BLOCK
  // timeout plus a margin: past `wait` the connection is taken for dead). A Redis error reply
  // is a reply, as for RedisConnection::Command. Fails with cancelled when Interrupt() was
  // called, before the command was sent (it is then not sent) or while waiting; with
  // service_unavailable when Redis is unreachable or did not answer in time. An interrupted
  // wait or a failure closes the connection (the server drops the blocked command with it); the
  // next command opens a new one.
  StatusOr<RedisReply> Command(const std::vector<std::string>& args,
                               std::chrono::milliseconds wait);
  // From any thread: ends the current wait at once, or the next one if none is under way (an
  // interrupt is never lost between two commands).
  void Interrupt();

 private:
  std::shared_ptr<RedisConnection> redis_;
  std::unique_ptr<RedisConnection::Slot> slot_;
  int interrupt_fd_ = -1;  // an eventfd: readable while an interrupt is pending
  std::mutex mu_;          // one command at a time
};

}  // namespace dnaserve::core
