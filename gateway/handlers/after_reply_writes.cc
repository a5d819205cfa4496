#include "gateway/handlers/after_reply_writes.h"

#include <utility>

#include "common/log.h"

namespace dnaserve::gateway {

AfterReplyWrites::AfterReplyWrites(size_t capacity) : capacity_(capacity) {}

AfterReplyWrites::~AfterReplyWrites() {
  Flush(std::chrono::steady_clock::now() + std::chrono::hours(1));
  if (thread_.joinable()) thread_.join();
}

void AfterReplyWrites::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void AfterReplyWrites::Write(std::function<void()> write) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ && !stopping_ && queue_.size() < capacity_) {
      queue_.push_back(std::move(write));
      work_cv_.notify_one();
      return;
    }
    ++done_inline_;
  }
  write();
}

void AfterReplyWrites::ReleaseIfPending(const QuotaLease* lease) {
  std::shared_ptr<QuotaLease> taken;
  std::string client_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto range = pending_leases_.equal_range(lease->client_id());
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.get() == lease) {
        taken = std::move(it->second);
        pending_leases_.erase(it);
        break;
      }
    }
    if (!taken) return;  // ReleasePendingFor took it first
    client_id = taken->client_id();
    ++releasing_[client_id];
  }
  taken.reset();  // the Redis call
  ++releases_done_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--releasing_[client_id] == 0) releasing_.erase(client_id);
  }
  released_cv_.notify_all();
}

void AfterReplyWrites::ReleaseLease(std::shared_ptr<QuotaLease> lease) {
  if (!lease) return;
  const QuotaLease* key = lease.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ && !stopping_) {
      pending_leases_.emplace(lease->client_id(), std::move(lease));
      // The raw pointer only identifies the entry; whoever takes it drops the last reference.
      queue_.push_front([this, key] { ReleaseIfPending(key); });
      work_cv_.notify_one();
      return;
    }
    ++done_inline_;
  }
  lease.reset();  // the writer has stopped: released here
}

bool AfterReplyWrites::ReleasePendingFor(const std::string& client_id, uint64_t releases_seen) {
  std::vector<std::shared_ptr<QuotaLease>> taken;
  bool any;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto range = pending_leases_.equal_range(client_id);
    for (auto it = range.first; it != range.second; ++it) taken.push_back(std::move(it->second));
    pending_leases_.erase(range.first, range.second);
    any = !taken.empty() || releasing_.count(client_id) > 0;
    // A release the writer has started may not have reached Redis yet.
    released_cv_.wait_for(lock, std::chrono::seconds(5),
                          [&] { return releasing_.count(client_id) == 0; });
  }
  const size_t released_here = taken.size();
  taken.clear();  // each release is one Redis call, made here
  releases_done_ += released_here;
  return any || releases_done_.load() != releases_seen;
}

void AfterReplyWrites::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, nothing left
    std::function<void()> write = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    write();
    write = nullptr;  // whatever it held (a result body) goes now, outside the lock
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

bool AfterReplyWrites::Flush(std::chrono::steady_clock::time_point deadline) {
  std::deque<std::function<void()>> dropped;
  std::multimap<std::string, std::shared_ptr<QuotaLease>> leases;
  bool still_writing;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (started_) {
      idle_cv_.wait_until(lock, deadline, [this] { return queue_.empty() && !writing_; });
    }
    stopping_ = true;
    dropped.swap(queue_);
    left_unwritten_ += static_cast<int64_t>(dropped.size());
    still_writing = writing_;
    work_cv_.notify_all();
  }
  // A write still under way (a Redis outage: its retries) is not waited for past the deadline;
  // the destructor joins the thread.
  if (!still_writing && thread_.joinable()) thread_.join();
  // A lease still pending is released anyway: that is one quick call, and a lease left behind
  // would hold the client's slot until its TTL.
  {
    std::lock_guard<std::mutex> lock(mu_);
    leases.swap(pending_leases_);
  }
  leases.clear();
  if (!dropped.empty()) {
    log::Warn("after_reply_writes_dropped", {{"count", static_cast<int64_t>(dropped.size())}});
  }
  return dropped.empty() && !still_writing;
}

AfterReplyWrites::Counts AfterReplyWrites::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.pending = static_cast<int64_t>(queue_.size()) + (writing_ ? 1 : 0);
  c.done_inline = done_inline_;
  c.left_unwritten = left_unwritten_;
  return c;
}

}  // namespace dnaserve::gateway
