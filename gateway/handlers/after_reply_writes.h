// The Redis writes a sync job owes once its client has its answer: the stored copy of the result
// (gzip and a Finish script, retried through a Redis restart) and the release of its
// concurrency lease. Doing them after the reply, on a thread of their own, keeps them off the
// client's latency and off the executor's threads.
//
// Bounded: at most `capacity` writes wait. When the queue is full, the write is done inline by
// the caller (the executor thread that ran the job, after the client was answered), and counted,
// so a Redis slower than the load slows the gateway's jobs down instead of growing memory.
// Lease releases go to the front of the queue: a client that sends its next request the moment
// it is answered must find its slot free (and an admission refused for concurrency settles this
// client's pending releases first: ReleasePendingFor).
//
// A crash loses what is queued: only stored copies of results their clients already received
// (a poll then reports the job lost after the heartbeat timeout) and lease releases (the lease
// expires after its TTL).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

class AfterReplyWrites {
 public:
  explicit AfterReplyWrites(size_t capacity = 256);
  ~AfterReplyWrites();  // flushes with no deadline
  AfterReplyWrites(const AfterReplyWrites&) = delete;
  AfterReplyWrites& operator=(const AfterReplyWrites&) = delete;

  void Start();
  // Queues `write`, or runs it here when the queue is full or the writer has stopped.
  void Write(std::function<void()> write);
  // Releases `lease` (drops this last reference) before any queued write. Until then,
  // ReleasePendingFor(client_id) can release it from another thread.
  void ReleaseLease(std::shared_ptr<QuotaLease> lease);
  // Counts lease releases made so far (any client). Read before an admission, it tells
  // ReleasePendingFor whether a release may have landed after Redis refused it.
  uint64_t releases_done() const { return releases_done_.load(); }
  // Releases, here and now, the leases of `client_id` still waiting in the queue, and waits for
  // those the writer is releasing at this moment. True when there was one, or when a release
  // was made since `releases_seen` (releases_done() before the refused admission): asking
  // again may now succeed.
  bool ReleasePendingFor(const std::string& client_id, uint64_t releases_seen);
  // Graceful termination: runs what is queued until `deadline`, then stops the thread (a write
  // under way then is finished by it, not waited for). True when nothing was left behind.
  // Writes arriving afterwards are done inline.
  bool Flush(std::chrono::steady_clock::time_point deadline);

  struct Counts {
    int64_t pending = 0;         // queued or being written
    int64_t done_inline = 0;     // ever done inline because the queue was full or stopped
    int64_t left_unwritten = 0;  // dropped by a Flush whose deadline passed
  };
  Counts counts();

 private:
  void Loop();
  // Releases `lease` if it is still pending (ReleasePendingFor may have taken it first).
  void ReleaseIfPending(const QuotaLease* lease);

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool writing_ = false;  // the thread is running a write taken off the queue
  bool stopping_ = false;
  bool started_ = false;
  int64_t done_inline_ = 0;
  int64_t left_unwritten_ = 0;
  std::multimap<std::string, std::shared_ptr<QuotaLease>> pending_leases_;  // by client id
  std::map<std::string, int> releasing_;  // by client id: releases the writer is making now
  std::condition_variable released_cv_;
  std::atomic<uint64_t> releases_done_{0};
  std::thread thread_;
};

}  // namespace dnaserve::gateway
