#include "core/jobs/admit_and_create.h"

namespace dnaserve::core {

QuotaDecision SequentialAdmitAndCreate::Run(const Principal& principal, int64_t lease_ttl_ms,
                                            const JobRecord& record) {
  QuotaDecision decision = quotas_->Admit(principal, record.job_id, lease_ttl_ms);
  if (!decision.status.ok()) return decision;
  if (Status created = jobs_->Create(record); !created.ok()) {
    quotas_->Release(principal, record.job_id);  // the token stays spent, as for any refusal
    decision.status = created;
  }
  return decision;
}

}  // namespace dnaserve::core
