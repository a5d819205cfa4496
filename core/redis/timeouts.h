// Timeouts in the form hiredis takes them; shared by the connection and the Sentinel locator.
#pragma once

#include <sys/time.h>

#include <chrono>

namespace dnaserve::core {

inline timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace dnaserve::core
