// A small thread-safe Redis client over hiredis 0.14 (only this folder's .cc files include
// hiredis). A fixed pool of lazily opened connections, each guarded by a mutex; connect and
// command timeouts; after an I/O error the connection is dropped and the next command
// reconnects. Replies are copied into plain RedisReply values. Blocking commands
// (XREAD ... BLOCK) get a connection of their own, BlockingRedisConnection, at the end.
//
// The server is one address (the URL's host and port), or the primary of a Sentinel group
// (RedisOptions::sentinels): then every connection is opened to the primary the sentinels name
// and checked with ROLE, and a connection that breaks or cannot be opened, or a reply that says
// READONLY (the server was demoted), sends the next connection back to the sentinels
// (redis_sentinel.h); so does a `+switch-master` message from the sentinels, to which it stays
// subscribed (sentinel_switch_watch.h). The pool follows a switch as a whole: a connection
// opened for a former primary is closed before use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/redis/redis_sentinel.h"
#include "core/redis/sentinel_switch_watch.h"

namespace dnaserve::core {

// The Retry-After (seconds) of a refusal because Redis could not be reached or is changing
// primary: a Sentinel failover takes seconds, a retry each second finds the new primary soon.
inline constexpr int64_t kRedisRetryAfterSeconds = 1;

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

  // Sentinel mode when not empty: the primary of the group `primary_name` as these sentinels
  // name it; the URL then gives only the credentials and the database. Each sentinel is given
  // `sentinel_timeout` to connect and answer.
  std::vector<RedisEndpoint> sentinels;
  std::string primary_name;
  std::chrono::milliseconds sentinel_timeout{500};
  // The sentinels' own password (sentinel.conf `requirepass`), separate from the data nodes'.
  std::string sentinel_password;
  // The data nodes' password, instead of the URL's when not empty (read from a mounted Secret
  // rather than written into a URL held in a ConfigMap).
  std::string password;

  // Writes that must survive the loss of the primary (EvalReplicated) wait until this many
  // replicas have them (WAIT), at most `wait_timeout`. 0 = do not wait.
  int wait_replicas = 0;
  std::chrono::milliseconds wait_timeout{500};
};

// A script's reply and how many replicas acknowledged the write (EvalReplicated).
struct ReplicatedReply {
  RedisReply reply;
  int64_t replicas = 0;    // acknowledged within the timeout (0 when nobody was asked)
  bool confirmed = false;  // replicas >= RedisOptions::wait_replicas
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
  // Eval, then (when RedisOptions::wait_replicas > 0) WAIT on the same connection, in the same
  // round trip, until that many replicas have the write or wait_timeout passes. The replicas
  // then also have every write acknowledged before this call began (replication is one ordered
  // stream). Not confirmed is not an error here: the caller decides what to undo.
  StatusOr<ReplicatedReply> EvalReplicated(const RedisScript& script,
                                           const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args);
  Status Ping();
  // The last connection attempt failed because a server or every reachable sentinel refused
  // the credentials (IsAuthenticationError): a misconfiguration, not an outage.
  bool credentials_refused() const;

  const RedisUrl& url() const { return url_; }
  int wait_replicas() const { return options_.wait_replicas; }
  // For logs: the URL's host:port/db, or the group name and its sentinels; never a password.
  std::string Describe() const;
  // Sentinel mode: the primary's host:port as last found or announced ("" while the sentinels
  // must be asked); otherwise the URL's host:port/db.
  std::string KnownPrimary() const;

 private:
  friend class BlockingRedisConnection;  // opens its connection as the pool's are opened
  struct Slot;
  RedisConnection(RedisUrl url, RedisOptions options);
  Slot& Acquire(std::unique_lock<std::mutex>* lock);
  // A pooled connection is closed before use when its server closed it, or when it was opened
  // for a primary the sentinels have since replaced.
  void DropIfStale(Slot& slot);
  // The connection broke (closed by the server, an I/O error, a timeout): closes it and, in
  // Sentinel mode, sends the next one back to the sentinels.
  void AbandonBroken(Slot& slot);
  Status EnsureConnected(Slot& slot);
  // Connects `slot` to `endpoint`, authenticates, selects the db; with `verify_primary`, asks
  // ROLE and sets *not_primary when the server is not a primary.
  Status Open(Slot& slot, const RedisEndpoint& endpoint, bool verify_primary, bool* not_primary);
  Status OpenSentinelPrimary(Slot& slot);
  // The server answered READONLY: it is a replica now. Closes the connection and, in Sentinel
  // mode, sends the next one back to the sentinels.
  void AbandonDemoted(Slot& slot);
  // Runs `use` on a pooled, open connection. A READONLY reply means the command did nothing
  // (a replica refuses every write): the connection is abandoned and `use` runs once more on a
  // fresh one; READONLY again is service_unavailable.
  StatusOr<std::vector<RedisReply>> WithConnection(
      const std::function<StatusOr<std::vector<RedisReply>>(Slot&)>& use);
  StatusOr<std::vector<RedisReply>> Exchange(Slot& slot,
                                             const std::vector<std::vector<std::string>>& commands);
  StatusOr<std::vector<RedisReply>> RunScript(Slot& slot, const RedisScript& script,
                                              const std::vector<std::string>& keys,
                                              const std::vector<std::string>& args, bool wait);

  RedisUrl url_;
  RedisOptions options_;
  std::unique_ptr<SentinelPrimaryLocator> sentinels_;  // Sentinel mode only
  std::unique_ptr<SentinelSwitchWatch> switch_watch_;  // Sentinel mode only; after sentinels_
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<uint64_t> next_slot_{0};
  std::atomic<bool> server_refused_credentials_{false};  // set and cleared by Open
};

// One connection of its own for blocking commands (XREAD / XREADGROUP ... BLOCK): a command
// that waits for seconds must neither hold one of the pool's connections nor delay the thread
// that wants it to stop. Opened like the pool's (same server, or in Sentinel mode the current
// primary; credentials, db, connect timeout) when first used, and again after any failure or a
// READONLY reply. One caller at a time.
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
