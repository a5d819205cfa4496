#include "core/quota/token_bucket.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/quota/quota.h"

namespace dnaserve::core {
namespace {

// ceil(v) as a non-negative int64, saturating instead of overflowing: an operator may configure
// a refill so slow (DNASERVE_IP_RATE=1e-300) that the time to regain a token exceeds int64
// (found by tests/fuzz/fuzz_token_bucket: the plain cast was undefined behaviour).
int64_t SaturatingCeil(double v) {
  constexpr double kLargest = 9.2e18;  // just below 2^63
  if (!(v < kLargest)) return std::numeric_limits<int64_t>::max();  // also NaN
  if (v <= 0) return 0;
  return static_cast<int64_t>(std::ceil(v));
}

// Whole seconds (rounded up) needed to regain `tokens` tokens.
int64_t SecondsToRegain(const BucketConfig& config, double tokens) {
  if (tokens <= 0) return 0;
  double seconds =
      tokens * static_cast<double>(config.refill_period_ms) / (config.refill_tokens * 1000.0);
  return SaturatingCeil(seconds - kTokenEpsilon);
}

BucketDecision Describe(const BucketConfig& config, const BucketState& state, bool admitted) {
  BucketDecision d;
  d.admitted = admitted;
  d.limit = config.capacity;
  d.remaining =
      std::max<int64_t>(0, static_cast<int64_t>(std::floor(state.tokens + kTokenEpsilon)));
  d.reset_seconds = SecondsToRegain(config, static_cast<double>(config.capacity) - state.tokens);
  if (!admitted) {
    d.retry_after_seconds = std::max<int64_t>(1, SecondsToRegain(config, 1.0 - state.tokens));
  }
  return d;
}

}  // namespace

int64_t BucketCapacityForRate(int64_t rate_per_minute) {
  return std::max<int64_t>(1, rate_per_minute / kBurstDivisor);
}

BucketConfig BucketConfigForRate(int64_t rate_per_minute) {
  BucketConfig config;
  config.capacity = BucketCapacityForRate(rate_per_minute);
  config.refill_tokens = static_cast<double>(std::max<int64_t>(1, rate_per_minute));
  config.refill_period_ms = 60'000;
  return config;
}

BucketState FullBucket(const BucketConfig& config, int64_t now_ms) {
  return BucketState{static_cast<double>(config.capacity), now_ms};
}

void Refill(const BucketConfig& config, int64_t now_ms, BucketState* state) {
  const double capacity = static_cast<double>(config.capacity);
  int64_t elapsed_ms = now_ms - state->updated_ms;
  if (elapsed_ms > 0) {
    // Multiply before dividing so whole periods refill exact whole tokens.
    state->tokens += static_cast<double>(elapsed_ms) * config.refill_tokens /
                     static_cast<double>(config.refill_period_ms);
    state->updated_ms = now_ms;
  }
  // Also clamps a bucket whose capacity shrank (the key's rate was lowered).
  if (state->tokens > capacity - kTokenEpsilon) state->tokens = capacity;
  if (state->tokens < 0) state->tokens = 0;
}

BucketDecision TakeToken(const BucketConfig& config, int64_t now_ms, BucketState* state) {
  Refill(config, now_ms, state);
  if (state->tokens < 1.0 - kTokenEpsilon) return Describe(config, *state, false);
  state->tokens = std::max(0.0, state->tokens - 1.0);
  return Describe(config, *state, true);
}

BucketDecision PeekBucket(const BucketConfig& config, int64_t now_ms, BucketState* state) {
  Refill(config, now_ms, state);
  return Describe(config, *state, state->tokens >= 1.0 - kTokenEpsilon);
}

int64_t MsUntilFull(const BucketConfig& config, const BucketState& state) {
  double missing = static_cast<double>(config.capacity) - state.tokens;
  if (missing <= 0) return 0;
  return SaturatingCeil(missing * static_cast<double>(config.refill_period_ms) /
                        config.refill_tokens);
}

TokenBucket::TokenBucket(BucketConfig config, const Clock* clock)
    : config_(config),
      clock_(clock ? clock : &DefaultClock()),
      state_(FullBucket(config_, clock_->NowMs())) {}

BucketDecision TokenBucket::TryTake() { return TakeToken(config_, clock_->NowMs(), &state_); }

BucketDecision TokenBucket::Peek() { return PeekBucket(config_, clock_->NowMs(), &state_); }

}  // namespace dnaserve::core
