#include "gateway/handlers/job_waiter.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "common/log.h"

namespace dnaserve::gateway {
namespace {

constexpr std::chrono::milliseconds kFirstCheck(5);
constexpr std::chrono::milliseconds kMaxInterval(200);

bool IsFinished(core::JobState state) {
  return state == core::JobState::kCompleted || state == core::JobState::kFailed;
}

}  // namespace

std::chrono::milliseconds NextCheckInterval(std::chrono::milliseconds elapsed) {
  return std::clamp(elapsed / 10, kFirstCheck, kMaxInterval);
}

struct JobWaiter::Waiter {
  std::string job_id;
  std::string owner;  // record waits only
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<Cancellation> client_gone_source;
  Cancellation::Registration client_gone_registration;
  std::atomic<bool> client_gone{false};
  RecordDone record_done;
  VerdictDone verdict_done;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point next_check;
};

JobWaiter::JobWaiter(core::JobStore* jobs, core::RedisJobQueue* queue) : jobs_(jobs), queue_(queue) {}

JobWaiter::~JobWaiter() { Stop(); }

void JobWaiter::Start() { thread_ = std::thread([this] { Loop(); }); }

void JobWaiter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::map<uint64_t, std::shared_ptr<Waiter>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(waiters_);
  }
  for (auto& [id, w] : left) {
    w->client_gone_registration = Cancellation::Registration();
    if (w->record_done) w->record_done(WaitEnd::kStopped, nullptr);
    if (w->verdict_done) w->verdict_done(WaitEnd::kStopped, nullptr);
  }
}

void JobWaiter::WaitForRecord(const std::string& job_id, const std::string& owner,
                              std::chrono::steady_clock::time_point deadline,
                              std::shared_ptr<Cancellation> client_gone, RecordDone done) {
  auto w = std::make_shared<Waiter>();
  w->job_id = job_id;
  w->owner = owner;
  w->deadline = deadline;
  w->client_gone_source = std::move(client_gone);
  w->record_done = std::move(done);
  Add(std::move(w));
}

void JobWaiter::WaitForVerdict(const std::string& job_id,
                               std::chrono::steady_clock::time_point deadline,
                               std::shared_ptr<Cancellation> client_gone, VerdictDone done) {
  auto w = std::make_shared<Waiter>();
  w->job_id = job_id;
  w->deadline = deadline;
  w->client_gone_source = std::move(client_gone);
  w->verdict_done = std::move(done);
  Add(std::move(w));
}

void JobWaiter::Add(std::shared_ptr<Waiter> w) {
  w->started = std::chrono::steady_clock::now();
  w->next_check = w->started + kFirstCheck;
  if (w->client_gone_source) {
    std::weak_ptr<Waiter> weak = w;
    w->client_gone_registration = w->client_gone_source->OnCancel([this, weak] {
      if (auto waiter = weak.lock()) waiter->client_gone = true;
      cv_.notify_all();
    });
  }
  bool stopped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped = stopping_;
    if (!stopped) waiters_[next_id_++] = w;
  }
  if (stopped) {
    w->client_gone_registration = Cancellation::Registration();
    if (w->record_done) w->record_done(WaitEnd::kStopped, nullptr);
    if (w->verdict_done) w->verdict_done(WaitEnd::kStopped, nullptr);
    return;
  }
  cv_.notify_all();
}

size_t JobWaiter::waiting() {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

bool JobWaiter::Check(Waiter& w, std::chrono::steady_clock::time_point now) {
  auto finish_without_answer = [&](WaitEnd end) {
    if (w.record_done) w.record_done(end, nullptr);
    if (w.verdict_done) w.verdict_done(end, nullptr);
    return true;
  };
  if (w.client_gone) return finish_without_answer(WaitEnd::kClientGone);
  if (w.record_done) {
    auto record = jobs_->Get(w.job_id, w.owner);
    if (record.ok() && IsFinished(record->state)) {
      w.record_done(WaitEnd::kAnswered, &record.value());
      return true;
    }
  } else {
    auto verdict = queue_->Verdict(w.job_id);
    if (verdict.ok() && verdict->has_value()) {
      w.verdict_done(WaitEnd::kAnswered, &verdict->value());
      return true;
    }
  }
  // A store that cannot be reached is asked again on the next tick, until the deadline.
  if (now >= w.deadline) return finish_without_answer(WaitEnd::kDeadline);
  w.next_check = now + NextCheckInterval(
                           std::chrono::duration_cast<std::chrono::milliseconds>(now - w.started));
  return false;
}

void JobWaiter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto wake = std::chrono::steady_clock::now() + kMaxInterval;
    for (auto& [id, w] : waiters_) {
      wake = std::min(wake, w->client_gone ? std::chrono::steady_clock::now() : w->next_check);
    }
    cv_.wait_until(lock, wake);
    if (stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::pair<uint64_t, std::shared_ptr<Waiter>>> due;
    for (auto& [id, w] : waiters_) {
      if (w->client_gone || w->next_check <= now || w->deadline <= now) due.emplace_back(id, w);
    }
    lock.unlock();
    std::vector<uint64_t> finished;
    for (auto& [id, w] : due) {
      if (Check(*w, std::chrono::steady_clock::now())) finished.push_back(id);
    }
    lock.lock();
    for (uint64_t id : finished) {
      auto it = waiters_.find(id);
      if (it == waiters_.end()) continue;
      auto w = it->second;
      waiters_.erase(it);
      lock.unlock();
      w->client_gone_registration = Cancellation::Registration();
      lock.lock();
    }
  }
}

}  // namespace dnaserve::gateway
