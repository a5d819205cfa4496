// A fixed pool of threads with a bounded queue. Predict calls block on gRPC for up to the sync
// budget, so they run here instead of on Pistache's reactor threads; when the queue is full the
// caller refuses the request (503) instead of queueing without bound.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dnaserve::core {

class Executor {
 public:
  Executor(int threads, size_t max_queued);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // False when the queue is full or the executor is shutting down; the task is not run.
  bool TrySubmit(std::function<void()> task);
  // Runs what is queued, then joins the threads.
  void Shutdown();

 private:
  void Loop();

  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dnaserve::core
