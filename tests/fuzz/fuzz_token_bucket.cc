// The token bucket behind every quota (core/quota/token_bucket.h) and the edge per-IP
// limiter built on it, driven by arbitrary configurations (any a keys file or the flags accept)
// and arbitrary clocks, including clocks that jump backwards (another replica's clock ahead of
// ours). Invariants:
//  - tokens stay within [0, capacity]; decisions report limit = capacity, remaining within it,
//    a Retry-After of at least 1 s exactly when refusing, non-negative reset times;
//  - conservation: admissions never exceed the capacity plus what the elapsed forward time
//    refills (time that went backwards refills nothing);
//  - the per-IP table never holds more than its max_entries addresses.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gateway/ratelimit/ip_rate_limiter.h"
#include "core/quota/token_bucket.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

namespace {

// Consumes the fuzzer's bytes as integers; zeros once they run out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint64_t Take(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | (pos_ < size_ ? data_[pos_++] : 0);
    return v;
  }
  double TakeDouble() {
    uint64_t bits = Take(8);
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "rate limit invariant broken: %s\n", what);
  std::abort();
}

void CheckDecision(const core::BucketConfig& config, const core::BucketDecision& d) {
  if (d.limit != config.capacity) Violation("limit is not the capacity");
  if (d.remaining < 0 || d.remaining > config.capacity) Violation("remaining out of range");
  if (d.reset_seconds < 0) Violation("negative reset");
  if (d.admitted && d.retry_after_seconds != 0) Violation("Retry-After on an admission");
  if (!d.admitted && d.retry_after_seconds < 1) Violation("refusal without Retry-After >= 1");
}

// The per-key bucket, as BucketConfigForRate makes it for a keys file's rate_per_minute.
void FuzzKeyBucket(Bytes& in) {
  const int64_t rate_per_minute = 1 + static_cast<int64_t>(in.Take(3) % 6'000'000);
  const core::BucketConfig config = core::BucketConfigForRate(rate_per_minute);
  const int64_t start = static_cast<int64_t>(in.Take(6));
  int64_t now = start;
  int64_t latest = start;
  core::BucketState state = core::FullBucket(config, now);
  int64_t admitted = 0;
  while (!in.empty()) {
    const uint64_t op = in.Take(1);
    // Steps from -32 s to +32 s, in milliseconds or (op bit 2) in whole seconds.
    int64_t step = static_cast<int64_t>(in.Take(2)) - 32768;
    if (op & 4) step *= 1000;
    now = std::max<int64_t>(0, now + step);
    latest = std::max(latest, now);
    switch (op % 3) {
      case 0: {
        core::BucketDecision d = core::TakeToken(config, now, &state);
        CheckDecision(config, d);
        if (d.admitted) ++admitted;
        break;
      }
      case 1:
        CheckDecision(config, core::PeekBucket(config, now, &state));
        break;
      default:
        if (MsUntilFull(config, state) < 0) Violation("negative time until full");
        break;
    }
    if (!(state.tokens >= 0) || state.tokens > static_cast<double>(config.capacity)) {
      Violation("tokens out of range");
    }
    const double refilled = static_cast<double>(latest - start) * config.refill_tokens /
                            static_cast<double>(config.refill_period_ms);
    // Slack for the epsilon the bucket allows per decision (kTokenEpsilon) and for rounding.
    const double allowed = static_cast<double>(config.capacity) + refilled;
    const double slack = 1e-6 + 2 * core::kTokenEpsilon * static_cast<double>(admitted) + 1e-12 * allowed;
    if (static_cast<double>(admitted) > allowed + slack) {
      Violation("more admissions than capacity plus refill");
    }
  }
}

// The edge limiter with any options the flags accept (rate > 0, burst >= 1).
void FuzzIpLimiter(Bytes& in) {
  IpRateLimiterOptions options;
  options.requests_per_second = std::fabs(in.TakeDouble());
  if (!std::isfinite(options.requests_per_second) || options.requests_per_second == 0) {
    options.requests_per_second = 10;
  }
  options.burst = 1 + static_cast<int64_t>(in.Take(4) % 1'000'000);
  options.max_entries = 1 + in.Take(1) % 16;
  core::ManualClock clock(static_cast<int64_t>(in.Take(6)));
  IpRateLimiter limiter(options, &clock);
  while (!in.empty()) {
    const uint64_t op = in.Take(1);
    clock.AdvanceMs(static_cast<int64_t>(in.Take(2)) - (op & 1 ? 32768 : 0));
    const std::string ip = "192.0.2." + std::to_string(op % 32);
    IpDecision d = limiter.Admit(ip);
    if (d.admitted != (d.retry_after_seconds == 0)) Violation("Retry-After disagrees");
    if (d.info.limit != limiter.config().capacity) Violation("IP limit is not the burst");
    if (d.info.remaining < 0 || d.info.remaining > d.info.limit) Violation("IP remaining");
    if (d.info.window_seconds < 1 || d.info.reset_seconds < 0) Violation("IP window/reset");
    if (limiter.size() > options.max_entries) Violation("IP table beyond max_entries");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Bytes in(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    FuzzKeyBucket(in);
  } else {
    FuzzIpLimiter(in);
  }
  return 0;
}
