// common/shutdown_signals.h: SIGTERM and SIGINT are held for the waiting thread, not delivered.
#include "common/shutdown_signals.h"

#include <catch2/catch.hpp>
#include <pthread.h>

#include <csignal>

using namespace dnaserve;

namespace {
// Unblocks the two signals again at scope exit: later tests in this process fork children, which
// would inherit the mask.
struct RestoreMask {
  ~RestoreMask() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  }
};
}  // namespace

TEST_CASE("a pending SIGTERM or SIGINT is what Wait returns, and kills nobody", "[common]") {
  RestoreMask restore;
  const ShutdownSignals signals;
  sigset_t blocked;
  pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  CHECK(sigismember(&blocked, SIGTERM) == 1);
  CHECK(sigismember(&blocked, SIGINT) == 1);
  // Sent to this thread while blocked: it stays pending (the default action would end the test).
  REQUIRE(pthread_kill(pthread_self(), SIGTERM) == 0);
  CHECK(signals.Wait() == SIGTERM);
  REQUIRE(pthread_kill(pthread_self(), SIGINT) == 0);
  CHECK(signals.Wait() == SIGINT);
}
