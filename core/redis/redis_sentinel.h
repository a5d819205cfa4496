// Finding the Redis primary through Sentinel, as the Redis documentation's "Sentinel client
// spec" asks of clients: ask the sentinels in turn (short timeouts; the one that answered is
// asked first next time) for the primary of a named group, and let the caller verify with ROLE
// that the server named is a primary. A sentinel whose answer fails that check is asked last
// from then on, so one sentinel with a stale or wrong view cannot keep the service on a replica.
// RedisConnection (redis_connection.h) uses it when DNASERVE_REDIS_SENTINELS is set.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct redisContext;  // hiredis, included by this folder's .cc files only

namespace dnaserve::core {

struct RedisEndpoint {
  std::string host;
  int port = 0;

  // host:port ([v6]:port).
  std::string Describe() const;
  bool operator==(const RedisEndpoint& other) const {
    return host == other.host && port == other.port;
  }
};

// "host:port,host:port,..." ("[::1]:26379" for IPv6; spaces around entries are ignored). Every
// entry needs its port: a sentinel's default port (26379) is not Redis's, and a list that
// silently mixes them is a misconfiguration.
StatusOr<std::vector<RedisEndpoint>> ParseRedisEndpoints(std::string_view list);

// An error reply that means the server wants other credentials than those sent: NOAUTH (none
// sent), WRONGPASS (wrong ones), or a server with no password told AUTH. A misconfiguration,
// not an outage: retrying does not help, so the binaries refuse to start on it.
bool IsAuthenticationError(std::string_view error_reply);

// AUTH `password` on a new connection to a sentinel (its `requirepass`, not the data nodes'
// password); nothing when `password` is empty. *refused (when given) is set when the sentinel
// answered with an authentication error; the Status then says so without the password.
Status AuthenticateSentinel(redisContext* context, const std::string& password,
                            bool* refused = nullptr);

class SentinelPrimaryLocator {
 public:
  // `ask_timeout` bounds the connection to one sentinel and its answer; `password` is the
  // sentinels' own (sentinel.conf `requirepass`), empty when they have none.
  SentinelPrimaryLocator(std::vector<RedisEndpoint> sentinels, std::string primary_name,
                         std::chrono::milliseconds ask_timeout, std::string password = "");

  // The primary's address and the generation it belongs to: the generation changes each time
  // the address does, so a connection opened under an older one is to a former primary.
  struct Primary {
    RedisEndpoint address;
    uint64_t generation = 0;
  };

  // The address found last, or, when there is none, the sentinels' answer (asked in turn; the
  // first that answers wins). service_unavailable when none answers or none knows the name.
  StatusOr<Primary> Current();
  // The server named by `primary` is not the primary (it failed the ROLE check, or answered
  // READONLY) or could not be reached: the next Current() asks the sentinels again. With
  // `distrust_source`, the sentinel that named it is moved to the end of the asking order.
  // A no-op when the address has already been replaced.
  void Forget(const Primary& primary, bool distrust_source);
  // The sentinel `source` announced a switch to `primary` (+switch-master, see
  // sentinel_switch_watch.h): it becomes the address, and when it is a new one the generation
  // changes, so connections opened for the former primary are closed before their next use.
  void Switched(const RedisEndpoint& primary, const RedisEndpoint& source);
  // The address the next connection would be opened to, if one is known ("" when the sentinels
  // must be asked first); for logs and tests.
  std::string KnownPrimary() const;
  // The generation of the address found last (compared with a connection's, see Primary).
  uint64_t generation() const;

  const std::string& primary_name() const { return primary_name_; }
  const std::string& password() const { return password_; }
  // The last time the sentinels were asked, every one that answered refused the credentials
  // (IsAuthenticationError), and none named the primary.
  bool credentials_refused() const { return credentials_refused_.load(); }
  std::string DescribeSentinels() const;

 private:
  StatusOr<RedisEndpoint> AskOne(const RedisEndpoint& sentinel, bool* refused) const;

  const std::string primary_name_;
  const std::chrono::milliseconds ask_timeout_;
  const std::string password_;
  std::atomic<bool> credentials_refused_{false};
  mutable std::mutex mu_;
  std::vector<RedisEndpoint> sentinels_;  // the asking order
  std::optional<RedisEndpoint> known_;    // the address found last, until forgotten
  std::optional<RedisEndpoint> last_;     // the address found last, even when forgotten
  RedisEndpoint known_source_;            // the sentinel that named `known_`
  // Written under mu_, read without it: a command checking its connection must not wait for a
  // resolution under way (which may take a sentinel timeout).
  std::atomic<uint64_t> generation_{0};
};

}  // namespace dnaserve::core
