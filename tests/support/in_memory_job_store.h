// JobStore in process memory with the same semantics as RedisJobStore (retention after last
// activity, 410 for the owner once expired, owner scoping, lost-job detection), driven entirely
// by the injected clock. For unit tests of handlers and single-process development; state is
// lost on restart.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jobs/job_store.h"
#include "core/quota/clock.h"

namespace dnaserve::core {

using InMemoryJobStoreOptions = JobStoreOptions;

class InMemoryJobStore : public JobStore {
 public:
  // `clock` must outlive the store; nullptr means the system clock.
  explicit InMemoryJobStore(const Clock* clock = nullptr, InMemoryJobStoreOptions options = {});

  Status Create(const JobRecord& record) override;
  StatusOr<std::string> CreateOrFind(const JobRecord& record, const std::string& identity) override;
  Status UpdateProgress(const std::string& job_id, double percent,
                        const std::string& message) override;
  Status Finish(const std::string& job_id, ErrorCode code, const std::string& content_type,
                const std::string& body) override;
  StatusOr<JobRecord> Get(const std::string& job_id, const std::string& owner) override;
  StatusOr<JobRecord> GetStored(const std::string& job_id, const std::string& owner) override;
  StatusOr<std::vector<JobRecord>> List(const std::string& owner, int limit) override;
  Status Ping() override { return Status::Ok(); }

  size_t live_jobs() const;

 private:
  struct Job {
    JobRecord record;
    int64_t expires_at_ms = 0;
  };
  struct Tombstone {
    std::string owner;
    int64_t expires_at_ms = 0;
    bool evicted = false;  // removed under the owner's result allowance, not by retention
  };
  // One stored result of an owner, for the allowance.
  struct StoredResult {
    int64_t finished_at_ms = 0;
    std::string job_id;
    int64_t bytes = 0;
  };
  struct Identity {
    std::string job_id;
    int64_t expires_at_ms = 0;
  };
  // The live job, or nullptr (an expired one is removed on the way).
  Job* FindLive(const std::string& job_id, int64_t now_ms);
  Status CreateLocked(const JobRecord& record, int64_t now_ms);
  void Touch(Job* job, int64_t now_ms);
  void SweepExpired(int64_t now_ms);
  // Makes room for `bytes` more under the owner's allowance: forgets expired results, then
  // evicts the oldest.
  void MakeRoom(const std::string& owner, int64_t bytes, int64_t now_ms);

  const Clock* clock_;
  InMemoryJobStoreOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Job> jobs_;
  std::unordered_map<std::string, Tombstone> tombstones_;
  // "<owner>\n<identity>" -> the job recorded for that case (CreateOrFind).
  std::unordered_map<std::string, Identity> identities_;
  // owner -> (created_at_ms, job_id) in creation order, newest last.
  std::unordered_map<std::string, std::multimap<int64_t, std::string>> index_;
  // owner -> its stored results, oldest finished first.
  std::unordered_map<std::string, std::vector<StoredResult>> results_;
  int64_t last_sweep_ms_ = 0;
};

}  // namespace dnaserve::core
