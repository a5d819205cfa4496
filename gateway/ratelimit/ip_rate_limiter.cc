#include "gateway/ratelimit/ip_rate_limiter.h"

#include <algorithm>

#include "gateway/server/client_address.h"

namespace dnaserve::gateway {

IpRateLimiter::IpRateLimiter(IpRateLimiterOptions options, const core::Clock* clock)
    : max_entries_(std::max<size_t>(1, options.max_entries)),
      clock_(clock ? clock : &core::DefaultClock()) {
  config_.capacity = std::max<int64_t>(1, options.burst);
  config_.refill_tokens = options.requests_per_second > 0 ? options.requests_per_second : 1e-3;
  config_.refill_period_ms = 1000;
  idle_ms_ = MsUntilFull(config_, core::BucketState{0, 0});
  // Rounded up without `idle_ms_ + 999`, which overflows for a saturated idle_ms_.
  window_seconds_ = std::max<int64_t>(1, idle_ms_ / 1000 + (idle_ms_ % 1000 != 0 ? 1 : 0));
}

void IpRateLimiter::EvictIdle(int64_t now_ms) {
  // The list is ordered by last use, so idle entries gather at the back.
  while (!lru_.empty()) {
    auto it = entries_.find(lru_.back());
    if (now_ms - it->second.bucket.updated_ms < idle_ms_) break;
    entries_.erase(it);
    lru_.pop_back();
  }
}

IpDecision IpRateLimiter::Admit(const std::string& address) {
  const std::string ip = RateLimitKey(address);
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  EvictIdle(now);
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    if (entries_.size() >= max_entries_) {
      // Every entry is active: forget the least recently seen one (it restarts with a full
      // bucket, which errs towards admitting rather than growing without bound).
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(ip);
    it = entries_.emplace(ip, Entry{core::FullBucket(config_, now), lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  core::BucketDecision d = core::TakeToken(config_, now, &it->second.bucket);
  // Refill only stamps the bucket when time moved; stamp it anyway so LRU age means last use.
  it->second.bucket.updated_ms = std::max(it->second.bucket.updated_ms, now);
  IpDecision out;
  out.admitted = d.admitted;
  out.retry_after_seconds = d.admitted ? 0 : d.retry_after_seconds;
  out.info = core::RateLimitInfo{d.limit, d.remaining, d.reset_seconds, window_seconds_};
  return out;
}

size_t IpRateLimiter::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace dnaserve::gateway
