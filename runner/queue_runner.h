// The runner's engine: takes jobs from the Redis queue (core/jobs/job_queue.h) and runs them.
//
//   fetch loop      while a slot is free, takes the next job, clients in turn (a client already
//                   holding `client_slots` of this runner's slots is skipped, so another client
//                   always finds a slot); first any job a dead runner left behind (idle longer
//                   than the claim timeout), then new ones
//   admission loop  the variant workflow's admissions, which the gateway waits for: never
//                   behind long jobs
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
  // How often an idle runner looks for work (and for admissions).
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
  bool TryStartOne(bool claim_stale);
  void RunJob(std::shared_ptr<Running> running);
  // Ends a job without running it: stores `response` (unless already finished), frees its
  // lease and removes its entry.
  // Stores the job's result (its output, or the status it failed with) and acknowledges it.
  void Conclude(const core::Delivery& delivery, const StatusOr<core::JobOutput>& result);
  void FreeLeaseAndAck(const core::Delivery& delivery);
  bool Stopping();

  core::RedisJobQueue* queue_;
  core::JobStore* jobs_;
  core::QuotaStore* quotas_;
  JobServices services_;
  QueueRunnerOptions options_;
  std::unique_ptr<core::Executor> slots_;

  metrics::Family<metrics::Counter>* finished_ = nullptr;  // by kind and outcome
  metrics::Family<metrics::Counter>* reclaimed_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool draining_ = false;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Running>> running_;  // by job id
  std::map<std::string, int> per_client_;
  size_t next_client_ = 0;  // round-robin position
  std::vector<std::thread> threads_;
};

}  // namespace dnaserve::runner
