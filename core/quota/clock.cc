#include "core/quota/clock.h"

#include <chrono>

namespace dnaserve::core {

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const Clock& DefaultClock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace dnaserve::core
