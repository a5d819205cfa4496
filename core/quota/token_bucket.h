// The token bucket shared by the per-key quota (in-process and Redis) and the per-IP edge limit.
// The math is pure (state + now in, decision out) so that the Lua script in
// redis_quota_store.cc can mirror it line by line and tests can drive it with a ManualClock.
#pragma once

#include <cstdint>

#include "core/quota/clock.h"

namespace dnaserve::core {

// Tolerance for floating-point drift: a bucket this close to a whole token counts as holding it.
// The Lua script in redis_quota_store.cc uses the same value.
inline constexpr double kTokenEpsilon = 1e-9;

// A bucket holds at most `capacity` tokens and regains `refill_tokens` tokens every
// `refill_period_ms`, continuously.
struct BucketConfig {
  int64_t capacity = 1;
  double refill_tokens = 1;
  int64_t refill_period_ms = 1000;
};

// Per-key quota: capacity = rate_per_minute / kBurstDivisor (at least 1), refilled at
// rate_per_minute tokens per 60 s.
int64_t BucketCapacityForRate(int64_t rate_per_minute);
BucketConfig BucketConfigForRate(int64_t rate_per_minute);

struct BucketState {
  double tokens = 0;
  int64_t updated_ms = 0;  // time of the last refill
};

struct BucketDecision {
  bool admitted = false;
  int64_t limit = 0;                // capacity
  int64_t remaining = 0;            // whole tokens left after this decision
  int64_t reset_seconds = 0;        // seconds until the bucket is full again
  int64_t retry_after_seconds = 0;  // refused only: seconds until one token (at least 1)
};

// A full bucket as of `now_ms` (a client never seen before starts with a full burst).
BucketState FullBucket(const BucketConfig& config, int64_t now_ms);

// Refills `state` up to `now_ms`. A clock that went backwards (another replica's clock ahead of
// ours) refills nothing and keeps the later timestamp, so no time is ever counted twice.
void Refill(const BucketConfig& config, int64_t now_ms, BucketState* state);

// Refills, then takes one token if one is available. Refusal leaves the tokens untouched.
BucketDecision TakeToken(const BucketConfig& config, int64_t now_ms, BucketState* state);

// Refills and describes the bucket without taking anything (admitted = a token is available).
BucketDecision PeekBucket(const BucketConfig& config, int64_t now_ms, BucketState* state);

// Milliseconds after which an untouched bucket is full again (its state can then be dropped).
int64_t MsUntilFull(const BucketConfig& config, const BucketState& state);

// One bucket with its own state; not thread-safe (callers hold their own lock).
class TokenBucket {
 public:
  TokenBucket(BucketConfig config, const Clock* clock);

  BucketDecision TryTake();
  BucketDecision Peek();
  const BucketConfig& config() const { return config_; }

 private:
  BucketConfig config_;
  const Clock* clock_;
  BucketState state_;
};

}  // namespace dnaserve::core
