// Time source for quotas and job state. Everything that decides by elapsed time takes a Clock so
// tests can drive time by hand instead of sleeping.
#pragma once

#include <atomic>
#include <cstdint>

namespace dnaserve::core {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch. Wall time rather than a monotonic clock because the values
  // are shared through Redis by several gateway replicas (whose clocks must be synchronised, e.g.
  // by NTP) and stored as job timestamps.
  virtual int64_t NowMs() const = 0;
};

class SystemClock : public Clock {
 public:
  int64_t NowMs() const override;
};

// The process-wide system clock; used when a component is given no clock.
const Clock& DefaultClock();

// A clock that moves only when told to. Thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_ms_(start_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  void AdvanceMs(int64_t delta_ms) { now_ms_.fetch_add(delta_ms); }
  void SetMs(int64_t now_ms) { now_ms_.store(now_ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace dnaserve::core
