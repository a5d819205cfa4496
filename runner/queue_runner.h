// The runner's engine: takes jobs from the Redis queue (core/jobs/job_queue.h) and runs them.
//
//   fetch loop      while a slot is free, takes the next job, clients in turn (a client already
//                   holding `client_slots` of this runner's slots is skipped, so another client
//                   always finds a slot); first any job a dead runner left behind (idle longer
//                   than the claim timeout; looked for every `reclaim_interval`, and at once
//                   when a stopping runner hands a job back), then new ones. With nothing to
//                   take it blocks on the queue's wake-up stream, not polling
//   admission loop  the variant workflow's admissions, which the gateway waits for: never
//                   behind long jobs; blocks on the admission stream
//
// Each loop blocks on a Redis connection of its own, which Stop interrupts at once. An entry
// of a format this runner does not know is handed back untouched for a runner that does.
//   heartbeat loop  keeps this runner's entries fresh, writes running jobs' progress, renews
//                   their concurrency leases, cancels jobs whose sync client left or whose wall
//                   time is spent
//
// A job whose runner died is run again by the runner that claims it; after `max_attempts`
// runs it ends as 503. Running a job again is safe: its result is stored once (the first final
// answer stays), and the variant workflow writes one output object per job id.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/cancellation.h"
#include "common/observability/metrics.h"
#include "core/dispatch/executor.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/job_store.h"
#include "core/quota/quota.h"
#include "runner/jobs/runner_jobs.h"

namespace dnaserve::runner {

struct QueueRunnerOptions {
  std::string consumer;  // this runner's name in the consumer group
  int slots = 4;
  int client_slots = 3;
  std::chrono::milliseconds claim_timeout{30000};
  int64_t max_attempts = 3;
  std::chrono::seconds job_max{6 * 3600};
  // How often to look for entries of dead runners (0: a third of the claim timeout, so such an
  // entry is taken within 4/3 of the claim timeout). Also the longest one blocking read lasts:
  // an idle runner sends Redis 4 commands per interval (runner/README.md, "Waiting for work").
  std::chrono::milliseconds reclaim_interval{0};
  // How often a runner that is not `ready` yet looks again (no Redis command is sent meanwhile).
  std::chrono::milliseconds poll_interval{50};
  // Jobs are taken only while this holds (null: always): a runner that has just started and
  // does not know the workers' models yet would fail every job it took with 503.
  std::function<bool()> ready;
};

class QueueRunner {
 public:
  QueueRunner(core::RedisJobQueue* queue, core::JobStore* jobs, core::QuotaStore* quotas,
              JobServices services, QueueRunnerOptions options,
              metrics::Registry* registry = nullptr);
  ~QueueRunner();

  void Start();
  // Takes no new job; waits until the running ones end or `deadline` passes. True when none is
  // left.
  bool Drain(std::chrono::steady_clock::time_point deadline);
  // Cancels what still runs and hands those entries back to the queue at once (another runner
  // runs them again), then stops every loop.
  void Stop();

  int running();

 private:
  struct Running;
  void FetchLoop();
  void AdmissionLoop();
  void HeartbeatLoop();
  // Takes one job of `clients` (sorted), the next in turn whose client has a slot left: a new
  // one, or with `claim_stale` one a dead runner left. False when there is none.
  bool StartOne(const std::vector<std::string>& clients, bool claim_stale);
  // The next readable entry of `client` (of the admission stream for ""), new or (with
  // `claim_stale`) left by a dead runner; entries of unknown formats on the way are left.
  std::optional<core::Delivery> TakeFrom(const std::string& client, bool claim_stale);
  // Hands an entry of a format this runner cannot read back to the queue, counted and logged.
  void LeaveUnreadable(const core::Delivery& delivery);
  void Admit(const core::Delivery& admission);
  void RunJob(std::shared_ptr<Running> running);
  // Ends a job without running it: stores `response` (unless already finished), frees its
  // lease and removes its entry.
  // Stores the job's result (its output, or the status it failed with) and acknowledges it.
  void Conclude(const core::Delivery& delivery, const StatusOr<core::JobOutput>& result);
  void FreeLeaseAndAck(const core::Delivery& delivery);
  bool Stopping();
  // Sleeps for `pause` or until Stop.
  void Pause(std::chrono::milliseconds pause);
  std::chrono::milliseconds ReclaimInterval() const;

  core::RedisJobQueue* queue_;
  core::JobStore* jobs_;
  core::QuotaStore* quotas_;
  JobServices services_;
  QueueRunnerOptions options_;
  std::unique_ptr<core::Executor> slots_;
  // The blocking reads of the fetch loop (wake-up stream) and of the admission loop.
  std::unique_ptr<core::BlockingRedisConnection> fetch_wait_;
  std::unique_ptr<core::BlockingRedisConnection> admission_wait_;

  metrics::Family<metrics::Counter>* finished_ = nullptr;  // by kind and outcome
  metrics::Family<metrics::Counter>* reclaimed_ = nullptr;
  metrics::Family<metrics::Counter>* left_ = nullptr;  // by entry format version

  std::mutex mu_;
  std::condition_variable cv_;
  bool draining_ = false;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Running>> running_;  // by job id
  std::map<std::string, int> per_client_;
  size_t next_client_ = 0;  // round-robin position
  // The last look for work passed over a client at its slot limit: a job of this runner ending
  // then interrupts the fetch loop's wait, since that client's next job may now start.
  bool skipped_full_client_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dnaserve::runner
