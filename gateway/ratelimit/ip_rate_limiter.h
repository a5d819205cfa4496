// The edge per-IP limit (default 10 requests/s, burst 20): one token bucket per source network,
// in process memory: an IPv4 address, or an IPv6 /64 (client_address.h, RateLimitKey). Memory is bounded: buckets that have refilled completely are dropped (they
// equal a new one), and when the table is full the least recently seen address is evicted.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/quota/clock.h"
#include "core/quota/quota.h"
#include "core/quota/token_bucket.h"

namespace dnaserve::gateway {

struct IpRateLimiterOptions {
  double requests_per_second = 10;
  int64_t burst = 20;
  size_t max_entries = 100'000;
};

struct IpDecision {
  bool admitted = false;
  int64_t retry_after_seconds = 0;  // refused only; at least 1
  core::RateLimitInfo info;               // the address's bucket, for RateLimit-* on a 429
};

class IpRateLimiter {
 public:
  // `clock` must outlive the limiter; nullptr means the system clock. Nonsensical options
  // (rate <= 0, burst < 1, max_entries < 1) are raised to the smallest working values.
  explicit IpRateLimiter(IpRateLimiterOptions options = {}, const core::Clock* clock = nullptr);

  // `ip` is a textual address; IPv6 addresses of one /64 share a bucket, and an IPv4-mapped
  // IPv6 address shares its IPv4 address's.
  IpDecision Admit(const std::string& address);
  size_t size() const;
  const core::BucketConfig& config() const { return config_; }

 private:
  struct Entry {
    core::BucketState bucket;
    std::list<std::string>::iterator lru;  // position in lru_, most recent first
  };
  void EvictIdle(int64_t now_ms);

  core::BucketConfig config_;
  int64_t window_seconds_ = 1;  // an empty bucket refills in this long (burst / rate)
  size_t max_entries_;
  int64_t idle_ms_;  // untouched this long = full again
  const core::Clock* clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;
};

}  // namespace dnaserve::gateway
