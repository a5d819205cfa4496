// A job that runs where it was admitted (a gateway's sync prediction) needs two things from the
// shared store before its worker call: the caller's quota (a token and a concurrency lease) and
// its job record, so that a poll finds it. Asked for together here, so that the Redis stores
// answer both in one round trip (redis_admit_and_create.h) instead of one each.
#pragma once

#include <cstdint>

#include "core/jobs/job_store.h"
#include "core/quota/principal.h"
#include "core/quota/quota.h"

namespace dnaserve::core {

class AdmitAndCreate {
 public:
  virtual ~AdmitAndCreate() = default;
  // QuotaStore::Admit(principal, record.job_id, lease_ttl_ms) and, only when it admits,
  // JobStore::Create(record). The decision is the quota's; when the record could not be created
  // its status is the store's failure instead (conflict when the id is taken) and no lease is
  // left held. A refusal creates no record.
  virtual QuotaDecision Run(const Principal& principal, int64_t lease_ttl_ms,
                            const JobRecord& record) = 0;
};

// The two steps one after the other: any pair of stores (the in-memory ones of unit tests).
class SequentialAdmitAndCreate : public AdmitAndCreate {
 public:
  SequentialAdmitAndCreate(QuotaStore* quotas, JobStore* jobs) : quotas_(quotas), jobs_(jobs) {}
  QuotaDecision Run(const Principal& principal, int64_t lease_ttl_ms,
                    const JobRecord& record) override;

 private:
  QuotaStore* quotas_;
  JobStore* jobs_;
};

}  // namespace dnaserve::core
