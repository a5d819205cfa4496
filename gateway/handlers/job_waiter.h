// Waits for what runners write to Redis for a gateway: the final record of a queued sync job
// (find-genes, variant scoring), the verdict of a variant admission. One thread checks every
// waiter, each on its own schedule (NextCheckInterval), so a waiting request holds no executor
// thread and an answer is seen soon after it is written.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/cancellation.h"
#include "common/status.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/job_store.h"

namespace dnaserve::gateway {

// How long after a check at `elapsed` (since the wait began) a waiter checks again: a tenth of
// the time waited so far, at least 5 ms and at most 200 ms. An answer written at time T is seen
// by T + max(5 ms, T / 10) (at most 200 ms late), so a 110 ms variant score waits ~11 ms more,
// not the ~45 ms that doubling intervals cost; and a wait of T takes about 10 ln(T / 50 ms) + 10
// checks up to 2 s, then 5 a second.
std::chrono::milliseconds NextCheckInterval(std::chrono::milliseconds elapsed);

// Why a wait ended without an answer.
enum class WaitEnd { kAnswered, kClientGone, kDeadline, kStopped };

class JobWaiter {
 public:
  JobWaiter(core::JobStore* jobs, core::RedisJobQueue* queue);
  ~JobWaiter();

  void Start();
  // Ends every wait (kStopped) and the thread.
  void Stop();

  // `done` gets the job's record once it has finished (completed or failed), or the reason the
  // wait ended first: the client's connection closed (`client_gone`, may be null), the deadline
  // passed, or Stop. Called once, on the waiter's thread: keep it short.
  using RecordDone = std::function<void(WaitEnd, const core::JobRecord*)>;
  void WaitForRecord(const std::string& job_id, const std::string& owner,
                     std::chrono::steady_clock::time_point deadline,
                     std::shared_ptr<Cancellation> client_gone, RecordDone done);

  using VerdictDone = std::function<void(WaitEnd, const std::string* verdict)>;
  void WaitForVerdict(const std::string& job_id, std::chrono::steady_clock::time_point deadline,
                      std::shared_ptr<Cancellation> client_gone, VerdictDone done);

  size_t waiting();

 private:
  struct Waiter;
  void Add(std::shared_ptr<Waiter> waiter);
  void Loop();
  // True when the waiter is finished (its callback has run).
  bool Check(Waiter& waiter, std::chrono::steady_clock::time_point now);

  core::JobStore* jobs_;
  core::RedisJobQueue* queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::thread thread_;
};

}  // namespace dnaserve::gateway
