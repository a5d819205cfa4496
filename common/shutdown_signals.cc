#include "common/shutdown_signals.h"

#include <pthread.h>

namespace dnaserve {

ShutdownSignals::ShutdownSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int ShutdownSignals::Wait() const {
  int signal_number = 0;
  sigwait(&signals_, &signal_number);
  return signal_number;
}

}  // namespace dnaserve
