// Listening for a Sentinel failover instead of waiting to trip over it. The Sentinel client
// spec asks clients to subscribe to the sentinels' `+switch-master` channel: a failover is then
// known the moment the sentinels decide it, not when a command to the former primary fails.
// That matters most when the former primary is cut off from the sentinels but not from us (or
// hangs): without the message, commands would keep going to it, or each wait for a command
// timeout. One thread per watcher holds a subscription on one sentinel at a time (the next one
// when it breaks) and tells the locator of each switch of the named group; the pool then drops
// every connection opened for the former primary before its next use.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/redis/redis_sentinel.h"

namespace dnaserve::core {

// A `+switch-master` message's payload: "<name> <old-ip> <old-port> <new-ip> <new-port>".
// The new primary when the message is well formed and about `primary_name`.
std::optional<RedisEndpoint> ParseSwitchMaster(std::string_view payload,
                                               std::string_view primary_name);

class SentinelSwitchWatch {
 public:
  // `locator` must outlive the watch. `connect_timeout` bounds each connection to a sentinel.
  SentinelSwitchWatch(SentinelPrimaryLocator* locator, std::vector<RedisEndpoint> sentinels,
                      std::chrono::milliseconds connect_timeout);
  // Stops the thread at once (it waits on the subscription and on a stop signal together).
  ~SentinelSwitchWatch();
  SentinelSwitchWatch(const SentinelSwitchWatch&) = delete;
  SentinelSwitchWatch& operator=(const SentinelSwitchWatch&) = delete;

 private:
  void Run();
  // Subscribes through `sentinel` and handles messages until the connection breaks or the
  // watch stops. False when the subscription could not be made.
  bool Listen(const RedisEndpoint& sentinel);
  // Waits until the stop signal or `timeout`; true when stopping.
  bool StopRequested(std::chrono::milliseconds timeout) const;

  SentinelPrimaryLocator* const locator_;
  const std::vector<RedisEndpoint> sentinels_;
  const std::chrono::milliseconds connect_timeout_;
  int stop_fd_ = -1;  // an eventfd: readable once stopping
  std::thread thread_;
};

}  // namespace dnaserve::core
