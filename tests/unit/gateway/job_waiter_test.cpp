// The schedule on which the gateway checks for a queued sync job's answer.
#include <catch2/catch.hpp>

#include <chrono>

#include "gateway/handlers/job_waiter.h"

namespace dnaserve::gateway {
namespace {

using std::chrono::milliseconds;

TEST_CASE("job waiter: checks come a tenth of the time waited apart, 5 ms to 200 ms",
          "[gateway][waiter]") {
  CHECK(NextCheckInterval(milliseconds(0)) == milliseconds(5));
  CHECK(NextCheckInterval(milliseconds(49)) == milliseconds(5));
  CHECK(NextCheckInterval(milliseconds(110)) == milliseconds(11));
  CHECK(NextCheckInterval(milliseconds(1500)) == milliseconds(150));
  CHECK(NextCheckInterval(milliseconds(2000)) == milliseconds(200));
  CHECK(NextCheckInterval(milliseconds(300000)) == milliseconds(200));
}

TEST_CASE("job waiter: an answer is seen at most a tenth (or 5 ms, or 200 ms) late, in few checks",
          "[gateway][waiter]") {
  // The checks a waiter makes: the first 5 ms after it began, then NextCheckInterval apart.
  for (int64_t answered_ms : {1, 7, 60, 110, 157, 900, 2500, 60000, 300000}) {
    INFO("answer written at " << answered_ms << " ms");
    const milliseconds answered(answered_ms);
    milliseconds check(5);
    int checks = 1;
    while (check < answered) {
      check += NextCheckInterval(check);
      ++checks;
    }
    const milliseconds late = check - answered;
    CHECK(late <= std::max(milliseconds(5), std::min(answered / 10 + milliseconds(5),
                                                     milliseconds(200))));
    // Logarithmic to 2 s, then five a second: a 300 s wait is about 1,550 checks.
    CHECK(checks <= 50 + answered_ms / 200);
  }
}

}  // namespace
}  // namespace dnaserve::gateway
