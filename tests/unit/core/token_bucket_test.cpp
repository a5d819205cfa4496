// The token bucket with a hand-driven clock: burst size, continuous refill, Retry-After and
// RateLimit-Reset values, and capacity rounding from the per-minute rate.
#include "core/quota/token_bucket.h"

#include <catch2/catch.hpp>

#include "core/quota/clock.h"
#include "core/quota/quota.h"

namespace dnaserve::core {
namespace {

TEST_CASE("capacity is rate / 6 rounded down, at least 1", "[ratelimit]") {
  CHECK(core::kBurstDivisor == 6);
  CHECK(BucketCapacityForRate(60) == 10);
  CHECK(BucketCapacityForRate(600) == 100);
  CHECK(BucketCapacityForRate(12) == 2);
  CHECK(BucketCapacityForRate(11) == 1);
  CHECK(BucketCapacityForRate(6) == 1);
  CHECK(BucketCapacityForRate(5) == 1);
  CHECK(BucketCapacityForRate(1) == 1);
  CHECK(BucketCapacityForRate(0) == 1);
  core::BucketConfig c = core::BucketConfigForRate(60);
  CHECK(c.capacity == 10);
  CHECK(c.refill_tokens == 60);
  CHECK(c.refill_period_ms == 60'000);
}

TEST_CASE("a fresh bucket admits a full burst, then refuses", "[ratelimit]") {
  core::ManualClock clock;
  core::TokenBucket bucket(core::BucketConfigForRate(60), &clock);
  for (int i = 0; i < 10; ++i) {
    core::BucketDecision d = bucket.TryTake();
    INFO("take " << i);
    REQUIRE(d.admitted);
    CHECK(d.limit == 10);
    CHECK(d.remaining == 9 - i);
    CHECK(d.retry_after_seconds == 0);
    // One token per second: the bucket is full again after (10 - remaining) seconds.
    CHECK(d.reset_seconds == 10 - d.remaining);
  }
  core::BucketDecision refused = bucket.TryTake();
  CHECK_FALSE(refused.admitted);
  CHECK(refused.remaining == 0);
  CHECK(refused.retry_after_seconds == 1);
  CHECK(refused.reset_seconds == 10);
  // A refusal takes nothing: still refused, nothing went negative.
  core::BucketDecision again = bucket.TryTake();
  CHECK_FALSE(again.admitted);
  CHECK(again.reset_seconds == 10);
}

TEST_CASE("the bucket refills continuously at rate per 60 s", "[ratelimit]") {
  core::ManualClock clock;
  core::TokenBucket bucket(core::BucketConfigForRate(60), &clock);
  for (int i = 0; i < 10; ++i) REQUIRE(bucket.TryTake().admitted);

  clock.AdvanceMs(500);  // half a token
  core::BucketDecision half = bucket.TryTake();
  CHECK_FALSE(half.admitted);
  CHECK(half.retry_after_seconds == 1);
  CHECK(half.reset_seconds == 10);  // 9.5 s, rounded up

  clock.AdvanceMs(500);  // one whole token
  core::BucketDecision one = bucket.TryTake();
  CHECK(one.admitted);
  CHECK(one.remaining == 0);
  CHECK_FALSE(bucket.TryTake().admitted);

  clock.AdvanceMs(3'000);
  core::BucketDecision peek = bucket.Peek();
  CHECK(peek.remaining == 3);
  CHECK(peek.reset_seconds == 7);
  CHECK(bucket.Peek().remaining == 3);  // peeking takes nothing

  clock.AdvanceMs(3'600'000);  // long idle: capped at capacity
  core::BucketDecision full = bucket.Peek();
  CHECK(full.remaining == 10);
  CHECK(full.reset_seconds == 0);
}

TEST_CASE("retry-after is the rounded-up wait for one token at slow rates", "[ratelimit]") {
  core::ManualClock clock;
  // 5 per minute: capacity 1, one token every 12 s.
  core::TokenBucket bucket(core::BucketConfigForRate(5), &clock);
  core::BucketDecision first = bucket.TryTake();
  REQUIRE(first.admitted);
  CHECK(first.limit == 1);
  CHECK(first.remaining == 0);
  CHECK(first.reset_seconds == 12);

  core::BucketDecision refused = bucket.TryTake();
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 12);

  clock.AdvanceMs(5'500);
  refused = bucket.TryTake();
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 7);  // 6.5 s left
  CHECK(refused.reset_seconds == 7);

  clock.AdvanceMs(6'500);
  CHECK(bucket.TryTake().admitted);
}

TEST_CASE("retry-after is at least 1 second even for fast buckets", "[ratelimit]") {
  core::ManualClock clock;
  core::BucketConfig fast{2, 100, 1000};  // 100 tokens/s, burst 2
  core::TokenBucket bucket(fast, &clock);
  REQUIRE(bucket.TryTake().admitted);
  REQUIRE(bucket.TryTake().admitted);
  core::BucketDecision refused = bucket.TryTake();
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 1);
  clock.AdvanceMs(10);
  CHECK(bucket.TryTake().admitted);
}

TEST_CASE("a clock going backwards refills nothing", "[ratelimit]") {
  core::ManualClock clock;
  core::TokenBucket bucket(core::BucketConfigForRate(60), &clock);
  for (int i = 0; i < 10; ++i) REQUIRE(bucket.TryTake().admitted);
  clock.AdvanceMs(-30'000);
  CHECK_FALSE(bucket.TryTake().admitted);
  // Back to the original time: still nothing gained (no double counting).
  clock.AdvanceMs(30'000);
  CHECK_FALSE(bucket.TryTake().admitted);
  clock.AdvanceMs(1'000);
  CHECK(bucket.TryTake().admitted);
}

TEST_CASE("many small steps add up to whole tokens", "[ratelimit]") {
  core::ManualClock clock;
  core::BucketConfig config = core::BucketConfigForRate(7);  // capacity 1, 7 per minute
  core::BucketState state = core::FullBucket(config, clock.NowMs());
  REQUIRE(core::TakeToken(config, clock.NowMs(), &state).admitted);
  // 60000/7 ms per token = 8571.43 ms: refused at 8571, admitted at 8572, in 1 ms steps.
  for (int ms = 1; ms <= 8571; ++ms) {
    clock.AdvanceMs(1);
    core::Refill(config, clock.NowMs(), &state);
  }
  CHECK_FALSE(core::PeekBucket(config, clock.NowMs(), &state).admitted);
  clock.AdvanceMs(1);
  CHECK(core::TakeToken(config, clock.NowMs(), &state).admitted);
}

TEST_CASE("a bucket whose capacity shrank is clamped", "[ratelimit]") {
  core::BucketConfig big = core::BucketConfigForRate(600);
  core::BucketState state = core::FullBucket(big, 0);
  core::BucketConfig small = core::BucketConfigForRate(60);
  core::BucketDecision d = core::PeekBucket(small, 0, &state);
  CHECK(d.remaining == 10);
  CHECK(d.limit == 10);
  CHECK(MsUntilFull(small, state) == 0);
}

}  // namespace
}  // namespace dnaserve::core
