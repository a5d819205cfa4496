// Cancellation: the flag, callbacks run once, at once for late registrations, and a
// registration's end waits for its running callback.
#include "common/cancellation.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using namespace dnaserve;

TEST_CASE("Cancel sets the flag and runs each registered callback once", "[common][cancel]") {
  Cancellation c;
  int a = 0;
  int b = 0;
  auto ra = c.OnCancel([&] { ++a; });
  auto rb = c.OnCancel([&] { ++b; });
  CHECK_FALSE(c.cancelled());
  CHECK_FALSE(c.flag()->load());
  c.Cancel();
  c.Cancel();
  CHECK(c.cancelled());
  CHECK(c.flag()->load());
  CHECK(a == 1);
  CHECK(b == 1);
}

TEST_CASE("a registration after Cancel runs at once, a dropped one never runs",
          "[common][cancel]") {
  Cancellation c;
  int dropped = 0;
  {
    auto r = c.OnCancel([&] { ++dropped; });
  }
  int moved = 0;
  Cancellation::Registration kept;
  kept = c.OnCancel([&] { ++moved; });  // move-assigned: still registered
  c.Cancel();
  CHECK(dropped == 0);
  CHECK(moved == 1);
  int late = 0;
  auto r = c.OnCancel([&] { ++late; });
  CHECK(late == 1);
}

TEST_CASE("ending a registration waits for its callback running on another thread",
          "[common][cancel]") {
  Cancellation c;
  std::promise<void> entered;
  std::atomic<bool> finished{false};
  auto registration = std::make_unique<Cancellation::Registration>(c.OnCancel([&] {
    entered.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    finished = true;
  }));
  std::thread canceller([&] { c.Cancel(); });
  entered.get_future().wait();
  registration.reset();  // must not return while the callback still runs
  CHECK(finished.load());
  canceller.join();
}
