#include "runner/queue_runner.h"

#include <algorithm>

#include "common/log.h"
#include "core/jobs/admission_verdict.h"
#include "core/jobs/job_store_common.h"
#include "core/jobs/run_guarded.h"

namespace dnaserve::runner {
namespace {

using core::Delivery;
using core::JobOutput;

// Progress is written at most this often; polls need no finer grain.
constexpr std::chrono::milliseconds kProgressWriteInterval(500);
// Pauses after Redis failed a loop's read: doubling from the first to the last.
constexpr std::chrono::milliseconds kFirstRetryPause(100);
constexpr std::chrono::milliseconds kLastRetryPause(2000);
// Entries of unknown formats one look at a stream may pass (and leave) before giving up on it
// until the next look: a stream full of them costs a bounded number of commands.
constexpr int kMaxEntriesLeftPerLook = 64;

enum class CancelReason { kNone, kClientGone, kWallTime, kShutdown };

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

core::Principal PrincipalOf(const core::QueuedJob& job) {
  return core::Principal{job.client_id, job.rate_per_minute, job.max_concurrency};
}

bool IsFinished(core::JobState state) {
  return state == core::JobState::kCompleted || state == core::JobState::kFailed;
}

}  // namespace

struct QueueRunner::Running {
  core::Delivery delivery;
  Cancellation cancellation;
  std::atomic<CancelReason> reason{CancelReason::kNone};
  std::chrono::steady_clock::time_point started;
  std::mutex mu;  // percent, message
  double percent = 0;
  std::string message = "running";

  void Cancel(CancelReason why) {
    CancelReason none = CancelReason::kNone;
    reason.compare_exchange_strong(none, why);
    cancellation.Cancel();
  }
};

QueueRunner::QueueRunner(core::RedisJobQueue* queue, core::JobStore* jobs,
                         core::QuotaStore* quotas, JobServices services,
                         QueueRunnerOptions options, metrics::Registry* registry)
    : queue_(queue),
      jobs_(jobs),
      quotas_(quotas),
      services_(services),
      options_(std::move(options)),
      slots_(std::make_unique<core::Executor>(options_.slots, options_.slots)),
      fetch_wait_(queue_->OpenWaitConnection()),
      admission_wait_(queue_->OpenWaitConnection()) {
  if (registry != nullptr) {
    finished_ = &registry->AddCounter("dnaserve_runner_jobs_finished_total",
                                      "Jobs this runner ended, by kind and result code",
                                      {"kind", "code"});
    reclaimed_ = &registry->AddCounter(
        "dnaserve_runner_jobs_reclaimed_total",
        "Jobs this runner took over from a runner that stopped sending heartbeats");
    left_ = &registry->AddCounter(
        "dnaserve_runner_queue_entries_left_total",
        "Queue entries of a format version this runner cannot read, handed back untouched for a "
        "runner that can (\"invalid\": not a version number)",
        {"version"});
    registry->AddCallback("dnaserve_runner_jobs_running", "Jobs running on this runner", "gauge",
                          {}, [this] {
                            return std::vector<std::pair<metrics::LabelValues, double>>{
                                {{}, static_cast<double>(running())}};
                          });
    registry->AddCallback(
        "dnaserve_queue_depth",
        "Jobs queued or running on any runner, all clients (the runner Deployment scales on it)",
        "gauge", {}, [this] {
          auto depth = queue_->Depth();
          return std::vector<std::pair<metrics::LabelValues, double>>{
              {{}, depth.ok() ? static_cast<double>(*depth) : -1.0}};
        });
  }
}

QueueRunner::~QueueRunner() { Stop(); }

void QueueRunner::Start() {
  threads_.emplace_back([this] { FetchLoop(); });
  threads_.emplace_back([this] { AdmissionLoop(); });
  threads_.emplace_back([this] { HeartbeatLoop(); });
}

int QueueRunner::running() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(running_.size());
}

bool QueueRunner::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void QueueRunner::Pause(std::chrono::milliseconds pause) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, pause, [this] { return stopping_; });
}

std::chrono::milliseconds QueueRunner::ReclaimInterval() const {
  if (options_.reclaim_interval.count() > 0) return options_.reclaim_interval;
  return std::max(std::chrono::milliseconds(100), options_.claim_timeout / 3);
}

bool QueueRunner::Drain(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  draining_ = true;
  cv_.notify_all();
  return cv_.wait_until(lock, deadline, [this] { return running_.empty(); });
}

void QueueRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    draining_ = stopping_ = true;
    for (auto& [id, r] : running_) r->Cancel(CancelReason::kShutdown);
  }
  cv_.notify_all();
  fetch_wait_->Interrupt();  // blocked reads end now, not when their BLOCK timeout passes
  admission_wait_->Interrupt();
  slots_->Shutdown();  // the cancelled jobs return promptly and hand their entries back
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void QueueRunner::FetchLoop() {
  std::string wake_cursor;  // the newest wake-up signal seen; "" = read it again
  bool reclaim_due = true;  // dead runners' jobs first, from start-up on
  auto next_reclaim = std::chrono::steady_clock::now() + ReclaimInterval();
  auto retry_pause = kFirstRetryPause;
  auto failed = [&] {  // Redis is away: look again after a pause, from a fresh cursor
    wake_cursor.clear();
    Pause(retry_pause);
    retry_pause = std::min(retry_pause * 2, kLastRetryPause);
  };
  while (true) {
    {
      // Nothing to take while draining or full: a job ending, Drain and Stop notify.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] {
        return stopping_ || (!draining_ && static_cast<int>(running_.size()) < options_.slots);
      });
      if (stopping_) return;
    }
    if (options_.ready && !options_.ready()) {
      Pause(options_.poll_interval);
      continue;
    }
    // The cursor is taken before looking, so a job queued meanwhile ends the wait below at once.
    if (wake_cursor.empty()) {
      auto cursor = queue_->WakeCursor();
      if (!cursor.ok()) {
        failed();
        continue;
      }
      wake_cursor = *cursor;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_reclaim) {
      reclaim_due = true;
      next_reclaim = now + ReclaimInterval();
    }
    if (auto clients = queue_->ActiveClients(); clients.ok()) {
      std::sort(clients->begin(), clients->end());
      if (reclaim_due) {
        if (StartOne(*clients, /*claim_stale=*/true)) continue;
        reclaim_due = false;
      }
      if (StartOne(*clients, /*claim_stale=*/false)) continue;
    }
    // Nothing to take now: wait for a job to be queued or handed back, for the next look for
    // dead runners' jobs, for a job of a client at its slot limit to end (it interrupts), or
    // for Stop (it interrupts).
    auto woken = queue_->WaitForWork(
        *fetch_wait_, &wake_cursor,
        std::chrono::duration_cast<std::chrono::milliseconds>(next_reclaim -
                                                              std::chrono::steady_clock::now()));
    if (woken.ok()) {
      retry_pause = kFirstRetryPause;
      if (woken->reclaim) reclaim_due = true;
    } else if (woken.status().code() != ErrorCode::kCancelled) {
      failed();
    }
  }
}

bool QueueRunner::StartOne(const std::vector<std::string>& clients, bool claim_stale) {
  if (clients.empty()) return false;
  const size_t n = clients.size();
  size_t first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = next_client_ % n;
    skipped_full_client_ = false;
  }
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    const std::string& client = clients[i];
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = per_client_.find(client);
      if (it != per_client_.end() && it->second >= options_.client_slots) {
        skipped_full_client_ = true;
        continue;
      }
    }
    auto delivery = TakeFrom(client, claim_stale);
    if (!delivery) continue;

    auto running = std::make_shared<Running>();
    running->delivery = std::move(*delivery);
    running->started = std::chrono::steady_clock::now();
    // One delivery only: the entry was left by a runner that could not read it (Leave), not
    // run by one that died.
    if (claim_stale && running->delivery.attempts > 1) {
      log::Warn("runner_job_reclaimed", {{"job_id", running->delivery.job.job_id},
                                         {"attempt", running->delivery.attempts}});
      if (reclaimed_) reclaimed_->With({}).Inc();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_[running->delivery.job.job_id] = running;
      ++per_client_[client];
      next_client_ = i + 1;  // the next turn starts after this client
    }
    if (!slots_->TrySubmit([this, running] { RunJob(running); })) {
      // Shutting down: leave the entry for another runner.
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(running->delivery.job.job_id);
      if (--per_client_[client] <= 0) per_client_.erase(client);
      return false;
    }
    return true;
  }
  return false;
}

std::optional<Delivery> QueueRunner::TakeFrom(const std::string& client, bool claim_stale) {
  std::string cursor = "0-0";  // claims go on past the entries left on the way
  for (int passed = 0; passed < kMaxEntriesLeftPerLook; ++passed) {
    auto delivery = claim_stale ? queue_->ClaimStale(client, options_.consumer,
                                                     options_.claim_timeout.count(), &cursor)
                                : queue_->ReadNew(client, options_.consumer);
    if (!delivery.ok() || !delivery->has_value()) return std::nullopt;
    if ((*delivery)->Readable()) return std::move(delivery->value());
    LeaveUnreadable(**delivery);
    if (claim_stale && cursor == "0-0") return std::nullopt;  // through the pending list
  }
  return std::nullopt;
}

void QueueRunner::LeaveUnreadable(const Delivery& delivery) {
  const std::string version =
      delivery.version > 0 ? std::to_string(delivery.version) : std::string("invalid");
  log::Warn("runner_queue_entry_left", {{"stream", delivery.stream},
                                        {"entry_id", delivery.entry_id},
                                        {"version", version},
                                        {"readable_up_to", core::kQueueFormatVersion}});
  if (left_) left_->With({version}).Inc();
  // Claimable by others at once. Should this fail the entry stays pending here, unrefreshed,
  // and is claimable after the claim timeout: late, not lost.
  if (Status left = queue_->Leave(options_.consumer, delivery, options_.claim_timeout.count());
      !left.ok()) {
    log::Warn("runner_leave_failed", {{"entry_id", delivery.entry_id}, {"error", left.message()}});
  }
}

void QueueRunner::FreeLeaseAndAck(const Delivery& delivery) {
  quotas_->Release(PrincipalOf(delivery.job), delivery.job.job_id);
  if (Status acked = queue_->Ack(delivery); !acked.ok()) {
    log::Warn("runner_ack_failed", {{"job_id", delivery.job.job_id}, {"error", acked.message()}});
  }
}

void QueueRunner::Conclude(const core::Delivery& delivery, const StatusOr<JobOutput>& result) {
  // The seat is free before anyone can read the answer: a client that polls the result and
  // submits again at once is not refused by its own finished job.
  quotas_->Release(PrincipalOf(delivery.job), delivery.job.job_id);
  // A Redis restart must not lose a finished job: retry with backoff for about 10 s.
  const std::chrono::milliseconds backoff[] = {
      std::chrono::milliseconds(0), std::chrono::milliseconds(200), std::chrono::milliseconds(1000),
      std::chrono::milliseconds(3000), std::chrono::milliseconds(6000)};
  Status stored;
  for (auto delay : backoff) {
    std::this_thread::sleep_for(delay);
    stored = result.ok() ? jobs_->Finish(delivery.job.job_id, ErrorCode::kOk,
                                         result->content_type, result->body)
                         : jobs_->Fail(delivery.job.job_id, result.status(),
                                       delivery.job.request_id);
    // conflict: already finished (an earlier run, or "lost"); not_found: expired. Either way
    // there is nothing more to store.
    if (stored.ok() || stored.code() == ErrorCode::kConflict ||
        stored.code() == ErrorCode::kNotFound) {
      break;
    }
  }
  if (!stored.ok() && stored.code() == ErrorCode::kServiceUnavailable) {
    // Keep the entry: the job runs again once Redis is back (after the claim timeout).
    log::Error("job_result_not_stored",
               {{"job_id", delivery.job.job_id}, {"error", stored.ToString()}});
    return;
  }
  if (finished_) {
    finished_->With({delivery.job.kind, std::string(ErrorCodeName(result.status().code()))}).Inc();
  }
  if (Status acked = queue_->Ack(delivery); !acked.ok()) {
    log::Warn("runner_ack_failed", {{"job_id", delivery.job.job_id}, {"error", acked.message()}});
  }
}

void QueueRunner::RunJob(std::shared_ptr<Running> running) {
  const core::Delivery& delivery = running->delivery;
  const core::QueuedJob& job = delivery.job;
  auto done = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(job.job_id);
    if (--per_client_[job.client_id] <= 0) per_client_.erase(job.client_id);
    // The fetch loop may be waiting on Redis with a job of a client it passed over for its slot
    // limit: that job can start now.
    if (skipped_full_client_) fetch_wait_->Interrupt();
    cv_.notify_all();
  };

  auto record = jobs_->Get(job.job_id, job.client_id);
  if (!record.ok()) {
    if (record.status().code() == ErrorCode::kServiceUnavailable) {
      done();  // Redis is away: the entry stays and is claimed again later
      return;
    }
    // Expired or gone: nobody can read a result any more.
    FreeLeaseAndAck(delivery);
    done();
    return;
  }
  if (IsFinished(record->state)) {  // an earlier run finished it
    FreeLeaseAndAck(delivery);
    done();
    return;
  }
  if (delivery.attempts > options_.max_attempts) {
    Conclude(delivery, Status(ErrorCode::kServiceUnavailable,
                              "the job was started " + std::to_string(options_.max_attempts) +
                                  " times and each time the runner running it stopped; "
                                  "resubmit the request")
                           .set_retry_after_seconds(5));
    done();
    return;
  }
  if (auto cancel = queue_->CancelRequested(job.job_id); cancel.ok() && *cancel) {
    Conclude(delivery, core::ClientWentAway());
    done();
    return;
  }

  auto work = BuildJob(job, services_);
  if (!work.ok()) {
    Conclude(delivery, work.status());
    done();
    return;
  }
  jobs_->UpdateProgress(job.job_id, 0, "running");
  log::Info("runner_job_started", {{"job_id", job.job_id},
                                   {"request_id", job.request_id},
                                   {"kind", job.kind},
                                   {"attempt", delivery.attempts}});

  core::JobContext context;
  context.call.request_id = job.request_id;
  context.call.job_id = job.job_id;
  context.call.cancelled = running->cancellation.flag();
  context.call.cancellation = &running->cancellation;
  auto deadline = running->started + options_.job_max;
  if (job.deadline_ms > 0) {
    deadline = std::min(deadline, std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(job.deadline_ms - NowMs()));
  }
  context.call.deadline = deadline;
  auto last_write = std::chrono::steady_clock::now() - kProgressWriteInterval;
  context.report_progress = [&](double percent, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(running->mu);
      running->percent = percent;
      running->message = message;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_write >= kProgressWriteInterval) {
      last_write = now;
      jobs_->UpdateProgress(job.job_id, percent, message);
    }
  };

  StatusOr<JobOutput> result = core::RunGuarded(job.job_id, [&] { return (*work)->Run(context); });
  work->reset();

  switch (running->reason.load()) {
    case CancelReason::kShutdown:
      // Not this job's fault: another runner runs it again, at once.
      (void)queue_->Release(options_.consumer, delivery, options_.claim_timeout.count());
      log::Info("runner_job_handed_back", {{"job_id", job.job_id}});
      done();
      return;
    case CancelReason::kClientGone:
      result = core::ClientWentAway();
      break;
    case CancelReason::kWallTime:
      if (!result.ok() && IsServerSide(result.status().code())) {
        result = Status(ErrorCode::kServiceUnavailable,
                        "the job ran past the per-job time limit of " +
                            std::to_string(options_.job_max.count()) + " s and was stopped");
      }
      break;
    case CancelReason::kNone:
      break;
  }
  Conclude(delivery, result);
  done();
}

void QueueRunner::AdmissionLoop() {
  auto next_reclaim = std::chrono::steady_clock::now();  // dead runners' admissions first
  auto retry_pause = kFirstRetryPause;
  while (!Stopping()) {
    if (options_.ready && !options_.ready()) {
      Pause(options_.poll_interval);
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_reclaim) {
      if (auto stale = TakeFrom("", /*claim_stale=*/true)) {
        Admit(*stale);
        continue;  // more may be waiting
      }
      next_reclaim = now + ReclaimInterval();
    }
    auto admission = queue_->WaitForAdmission(
        *admission_wait_, options_.consumer,
        std::chrono::duration_cast<std::chrono::milliseconds>(next_reclaim -
                                                              std::chrono::steady_clock::now()));
    if (!admission.ok()) {
      if (admission.status().code() == ErrorCode::kCancelled) continue;
      Pause(retry_pause);
      retry_pause = std::min(retry_pause * 2, kLastRetryPause);
      continue;
    }
    retry_pause = kFirstRetryPause;
    if (!admission->has_value()) continue;
    if (!(*admission)->Readable()) {
      LeaveUnreadable(**admission);
      continue;
    }
    Admit(**admission);
  }
}

void QueueRunner::Admit(const Delivery& d) {
  auto cancelled = queue_->CancelRequested(d.job.job_id);
  if (!(cancelled.ok() && *cancelled)) {
    const std::string verdict = AdmitVariant(d.job, services_, jobs_, queue_);
    const core::AdmissionVerdict parsed = core::ParseAdmissionVerdict(verdict);
    if (parsed.accepted && parsed.job_id == d.job.job_id) {
      // Queued now: its lease keeps the seat however long it waits.
      quotas_->Renew(PrincipalOf(d.job), d.job.job_id, core::kQueuedLeaseTtlMs);
    }
    (void)queue_->WriteVerdict(d.job.job_id, verdict);
  }
  (void)queue_->Ack(d);
}

void QueueRunner::HeartbeatLoop() {
  const auto interval = std::max(std::chrono::milliseconds(200), options_.claim_timeout / 6);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, interval, [this] { return stopping_; });
    if (stopping_) return;
    auto snapshot = running_;
    lock.unlock();
    std::vector<const core::Delivery*> held;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [job_id, r] : snapshot) {
      held.push_back(&r->delivery);
      double percent;
      std::string message;
      {
        std::lock_guard<std::mutex> guard(r->mu);
        percent = r->percent;
        message = r->message;
      }
      (void)jobs_->UpdateProgress(job_id, percent, message);
      quotas_->Renew(PrincipalOf(r->delivery.job), job_id, core::kQueuedLeaseTtlMs);
      if (now - r->started > options_.job_max) r->Cancel(CancelReason::kWallTime);
      if (r->delivery.job.mode == "sync") {
        if (auto cancel = queue_->CancelRequested(job_id); cancel.ok() && *cancel) {
          r->Cancel(CancelReason::kClientGone);
        }
      }
    }
    (void)queue_->Touch(options_.consumer, held);
    lock.lock();
  }
}

}  // namespace dnaserve::runner
