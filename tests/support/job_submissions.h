// The gateway's side of submitting a job to a JobRunner, for the runner's unit tests: the
// record a gateway creates first (alice's, task "test") and the submission that runs the work
// under a lease of hers.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/jobs/job_store.h"
#include "gateway/handlers/job_runner.h"

namespace dnaserve::testing {

// The id of a test's `n`th job (a valid UUID for n < 10).
inline std::string TestJobId(int n) {
  return "00000000-0000-4000-8000-00000000000" + std::to_string(n);
}

// Creates the job's record in `jobs` (`mode` "sync" or "async", in `state`, made at `now_ms`)
// and returns its submission of `work`.
inline gateway::JobSubmission RecordedSubmission(core::JobStore& jobs, core::QuotaStore& quotas,
                                                 const std::string& id, const std::string& mode,
                                                 core::JobState state, int64_t now_ms,
                                                 std::unique_ptr<core::Job> work,
                                                 std::shared_ptr<Cancellation> client_gone) {
  core::JobRecord record;
  record.job_id = id;
  record.request_id = "req-" + id;
  record.owner = "alice";
  record.task = "test";
  record.mode = mode;
  record.state = state;
  record.created_at_ms = record.updated_at_ms = now_ms;
  REQUIRE(jobs.Create(record).ok());
  gateway::JobSubmission submission;
  submission.job_id = id;
  submission.task = record.task;
  submission.request_id = record.request_id;
  submission.lease = std::make_shared<gateway::QuotaLease>(&quotas, core::Principal{"alice"}, id);
  submission.work = std::move(work);
  submission.client_gone = std::move(client_gone);
  return submission;
}

}  // namespace dnaserve::testing
