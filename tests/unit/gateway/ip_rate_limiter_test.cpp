// The edge per-IP limit with a hand-driven clock: 10 r/s with a burst of 20 by default,
// configurable, independent per address, and bounded in memory.
#include "gateway/ratelimit/ip_rate_limiter.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "core/quota/clock.h"

namespace dnaserve::gateway {
namespace {

TEST_CASE("defaults: a burst of 20, then 10 per second", "[ip]") {
  core::ManualClock clock;
  IpRateLimiter limiter({}, &clock);
  CHECK(limiter.config().capacity == 20);
  for (int i = 0; i < 20; ++i) {
    INFO("request " << i);
    IpDecision d = limiter.Admit("192.0.2.1");
    REQUIRE(d.admitted);
    CHECK(d.retry_after_seconds == 0);
  }
  IpDecision refused = limiter.Admit("192.0.2.1");
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 1);
  // What the 429's RateLimit-* headers report: an empty bucket of 20 that refills in 2 s.
  CHECK(refused.info.limit == 20);
  CHECK(refused.info.remaining == 0);
  CHECK(refused.info.reset_seconds == 2);
  CHECK(refused.info.window_seconds == 2);

  clock.AdvanceMs(100);  // one token at 10/s
  CHECK(limiter.Admit("192.0.2.1").admitted);
  CHECK_FALSE(limiter.Admit("192.0.2.1").admitted);

  clock.AdvanceMs(1'000);  // ten more
  int admitted = 0;
  while (limiter.Admit("192.0.2.1").admitted) ++admitted;
  CHECK(admitted == 10);
}

TEST_CASE("addresses are limited independently", "[ip]") {
  core::ManualClock clock;
  IpRateLimiter limiter({}, &clock);
  for (int i = 0; i < 20; ++i) REQUIRE(limiter.Admit("192.0.2.1").admitted);
  CHECK_FALSE(limiter.Admit("192.0.2.1").admitted);
  CHECK(limiter.Admit("192.0.2.2").admitted);
  CHECK(limiter.Admit("2001:db8::1").admitted);
}

TEST_CASE("IPv6 clients are counted by their /64", "[ip]") {
  core::ManualClock clock;
  IpRateLimiter limiter({}, &clock);
  // 20 requests, each from another interface id (and spelling) of one /64.
  for (int i = 0; i < 20; ++i) {
    INFO("request " << i);
    REQUIRE(limiter.Admit("2001:db8:0:7:" + std::to_string(i + 1) + "::" + std::to_string(i)).admitted);
  }
  CHECK_FALSE(limiter.Admit("2001:db8:0:7:ffff:ffff:ffff:ffff").admitted);
  CHECK_FALSE(limiter.Admit("2001:0db8:0000:0007::1").admitted);
  CHECK(limiter.size() == 1);
  // The neighbouring /64 is another client.
  CHECK(limiter.Admit("2001:db8:0:8::1").admitted);
  CHECK(limiter.size() == 2);
}

TEST_CASE("IPv4 stays per address, and ::ffff:a.b.c.d is a.b.c.d", "[ip]") {
  core::ManualClock clock;
  IpRateLimiter limiter({}, &clock);
  for (int i = 0; i < 10; ++i) REQUIRE(limiter.Admit("198.51.100.7").admitted);
  for (int i = 0; i < 10; ++i) REQUIRE(limiter.Admit("::ffff:198.51.100.7").admitted);
  CHECK_FALSE(limiter.Admit("198.51.100.7").admitted);
  CHECK_FALSE(limiter.Admit("::ffff:198.51.100.7").admitted);
  // The next address (which would share a /64-style prefix if IPv4 were grouped) is its own.
  CHECK(limiter.Admit("198.51.100.8").admitted);
  CHECK(limiter.size() == 2);
}

TEST_CASE("rate and burst are configurable, retry-after follows the rate", "[ip]") {
  core::ManualClock clock;
  IpRateLimiterOptions options;
  options.requests_per_second = 0.25;  // one every 4 s
  options.burst = 2;
  IpRateLimiter limiter(options, &clock);
  REQUIRE(limiter.Admit("a").admitted);
  REQUIRE(limiter.Admit("a").admitted);
  IpDecision refused = limiter.Admit("a");
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 4);
  clock.AdvanceMs(2'500);
  refused = limiter.Admit("a");
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == 2);  // 1.5 s left
  clock.AdvanceMs(1'500);
  CHECK(limiter.Admit("a").admitted);
}

TEST_CASE("nonsensical options still give a working limiter", "[ip]") {
  core::ManualClock clock;
  IpRateLimiterOptions options;
  options.requests_per_second = 0;
  options.burst = 0;
  options.max_entries = 0;
  IpRateLimiter limiter(options, &clock);
  CHECK(limiter.Admit("a").admitted);
  CHECK_FALSE(limiter.Admit("a").admitted);
  CHECK(limiter.size() == 1);
}

TEST_CASE("idle addresses are forgotten once their bucket is full again", "[ip]") {
  core::ManualClock clock;
  IpRateLimiter limiter({}, &clock);  // empty to full takes 2 s
  for (int i = 0; i < 100; ++i) limiter.Admit("10.0.0." + std::to_string(i));
  CHECK(limiter.size() == 100);
  clock.AdvanceMs(1'999);
  limiter.Admit("10.0.1.1");
  CHECK(limiter.size() == 101);
  clock.AdvanceMs(1);
  limiter.Admit("10.0.1.1");  // the only one seen recently
  CHECK(limiter.size() == 1);
}

TEST_CASE("the table never exceeds its cap, the least recently seen goes first", "[ip]") {
  core::ManualClock clock;
  IpRateLimiterOptions options;
  options.max_entries = 3;
  IpRateLimiter limiter(options, &clock);
  // Exhaust "a", then touch b and c.
  for (int i = 0; i < 20; ++i) REQUIRE(limiter.Admit("a").admitted);
  REQUIRE_FALSE(limiter.Admit("a").admitted);
  limiter.Admit("b");
  limiter.Admit("c");
  limiter.Admit("a");  // a is now the most recent (and still refused)
  limiter.Admit("d");  // evicts b, the least recently seen
  CHECK(limiter.size() == 3);
  CHECK_FALSE(limiter.Admit("a").admitted);  // a kept its empty bucket
  for (int i = 0; i < 1000; ++i) limiter.Admit("x" + std::to_string(i));
  CHECK(limiter.size() == 3);
}

// Found by tests/fuzz/fuzz_token_bucket: a refill this slow made the time computations overflow.
TEST_CASE("a vanishingly small rate saturates its times instead of overflowing", "[ip]") {
  core::ManualClock clock;
  IpRateLimiterOptions options;
  options.requests_per_second = 1e-300;
  options.burst = 2;
  IpRateLimiter limiter(options, &clock);
  CHECK(limiter.Admit("192.0.2.9").admitted);
  CHECK(limiter.Admit("192.0.2.9").admitted);
  IpDecision refused = limiter.Admit("192.0.2.9");
  CHECK_FALSE(refused.admitted);
  CHECK(refused.retry_after_seconds == std::numeric_limits<int64_t>::max());
  CHECK(refused.info.reset_seconds == std::numeric_limits<int64_t>::max());
  CHECK(refused.info.window_seconds > 0);
}

}  // namespace
}  // namespace dnaserve::gateway
