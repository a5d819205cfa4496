// SIGINT and SIGTERM for the three processes (gateway, runner, worker): blocked in every thread
// and taken by the one thread that waits for them, so that no library thread (gRPC, LibTorch,
// Pistache) ever runs a signal handler and shutdown happens in ordinary code.
#pragma once

#include <csignal>

namespace dnaserve {

class ShutdownSignals {
 public:
  // Blocks SIGINT and SIGTERM in the calling thread. Construct it before any thread starts:
  // threads inherit the mask.
  ShutdownSignals();
  // Waits until one of them arrives; its number.
  int Wait() const;

 private:
  sigset_t signals_;
};

}  // namespace dnaserve
