// JobStore in Redis, so any gateway replica can poll any job.
//   dnaserve:job:<id>      hash with every JobRecord field; expires `retention_ms` after the
//                          last activity (create, progress, finish, get)
//   dnaserve:jobseen:<id>  owner's client id, kept `tombstone_ms` (30 days): once the hash has
//                          expired, the owner gets 410 job_expired and anyone else 404
//   dnaserve:jobs:<owner>  sorted set of job ids scored by created_at_ms, newest 500 kept
//   dnaserve:jobidentity:<owner>:<identity>
//                          job id of a case (CreateOrFind), kept `retention_ms` from its
//                          creation or last reuse
//   dnaserve:resultsizes:<owner>   hash: job id -> bytes of its stored body (every finished job)
//   dnaserve:resultorder:<owner>   sorted set of those ids by finish time (eviction order)
//   dnaserve:resultexpiry:<owner>  the same ids by when their retention ends (refreshed by
//                                  polls), so results that expired on their own are forgotten
//   dnaserve:resultbytes:<owner>   the sum of the sizes: what counts against the allowance
//                                  (RedisJobStoreOptions::client_result_bytes)
//   The four live as long as the owner's newest activity on a result. Every gateway updates
//   them in the same scripts that store and poll results, so the total is exact across them.
// Bodies of kCompressMinBytes or more are stored as gzip (field body_encoding = "gzip").
// Each operation is one Lua script, so concurrent replicas never see half-written jobs and a
// job whose hash expired is never recreated by a late progress update.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/jobs/job_store.h"
#include "core/quota/clock.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

struct RedisJobStoreOptions : JobStoreOptions {
  std::string key_prefix = "dnaserve:";
};

class RedisJobStore : public JobStore {
 public:
  // `clock` must outlive the store; nullptr means the system clock. It stamps activity and
  // judges heartbeats (retention itself is Redis's own TTL).
  explicit RedisJobStore(std::shared_ptr<RedisConnection> redis, const Clock* clock = nullptr,
                         RedisJobStoreOptions options = {});

  // created_at_ms = record's (or now when 0); updated_at_ms = now. conflict if the id exists.
  Status Create(const JobRecord& record) override;
  StatusOr<std::string> CreateOrFind(const JobRecord& record, const std::string& identity) override;
  // not_found when the job is unknown or expired; conflict when it has already finished.
  Status UpdateProgress(const std::string& job_id, double percent,
                        const std::string& message) override;
  // not_found when unknown or expired; conflict when it has already finished (the first
  // final answer, e.g. "lost", stays).
  Status Finish(const std::string& job_id, ErrorCode code, const std::string& content_type,
                const std::string& body) override;
  StatusOr<JobRecord> Get(const std::string& job_id, const std::string& owner) override;
  StatusOr<JobRecord> GetStored(const std::string& job_id, const std::string& owner) override;
  StatusOr<std::vector<JobRecord>> List(const std::string& owner, int limit) override;
  Status Ping() override;
  // One string key per file, expiring with the job's retention.
  Status PutFile(const std::string& job_id, const std::string& name,
                 const std::string& bytes) override;
  StatusOr<std::string> GetFile(const std::string& job_id, const std::string& name) override;
  Status DeleteFile(const std::string& job_id, const std::string& name) override;

  std::string JobKey(const std::string& job_id) const;
  std::string SeenKey(const std::string& job_id) const;
  std::string IndexKey(const std::string& owner) const;
  std::string IdentityKey(const std::string& owner, const std::string& identity) const;
  std::string FileKey(const std::string& job_id, const std::string& name) const;

  // Create's step, for a script that creates the record in the same step as something else
  // (core/jobs/redis_admit_and_create.h): Lua reading KEYS[1..3] (CreateKeys) and ARGV
  // (CreateStepArgs) that returns {'exists'} when the id is taken and otherwise falls through
  // having created the record; then the store's answer to that reply (Create's).
  static const std::string& CreateStepSource();
  std::vector<std::string> CreateKeys(const JobRecord& record) const;
  std::vector<std::string> CreateStepArgs(const JobRecord& record) const;
  Status CreateOutcome(const std::string& job_id, const StatusOr<RedisReply>& reply) const;

 private:
  std::vector<std::string> CreateArgs(const JobRecord& record,
                                      std::vector<std::string>* fields) const;
  Status StoreError(const char* op, const Status& status) const;

  std::shared_ptr<RedisConnection> redis_;
  const Clock* clock_;
  RedisJobStoreOptions options_;
};

}  // namespace dnaserve::core
