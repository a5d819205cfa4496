// AdmitAndCreate over the Redis stores in one round trip: one Lua script runs the quota's
// decision (RedisQuotaStore's own script) and, when it admits, the job store's create step
// (RedisJobStore's own), atomically. A sync prediction then makes one Redis call before its
// worker call instead of two. Nothing is taken when the job id is already in use.
//
// The script touches a client's quota keys and a job's keys together: the deployment is one
// primary (or a Sentinel group), not a Redis Cluster, as the job store's scripts already assume.
#pragma once

#include <memory>

#include "core/jobs/admit_and_create.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/redis_quota_store.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

class RedisAdmitAndCreate : public AdmitAndCreate {
 public:
  // The stores must outlive this and use `redis` (their own connection).
  RedisAdmitAndCreate(std::shared_ptr<RedisConnection> redis, const RedisQuotaStore* quotas,
                      const RedisJobStore* jobs)
      : redis_(std::move(redis)), quotas_(quotas), jobs_(jobs) {}

  QuotaDecision Run(const Principal& principal, int64_t lease_ttl_ms,
                    const JobRecord& record) override;

 private:
  std::shared_ptr<RedisConnection> redis_;
  const RedisQuotaStore* quotas_;
  const RedisJobStore* jobs_;
};

}  // namespace dnaserve::core
