// Pieces shared by the JobStore implementations so that both answer with the same statuses,
// messages and lost-job body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "core/jobs/job_store.h"

namespace dnaserve::core {

std::optional<JobState> JobStateFromName(std::string_view name);
bool IsTerminal(JobState state);
// completed for kOk, failed otherwise.
JobState StateForCode(ErrorCode code);

// The same not_found for an unknown job and for another client's job: ownership is never revealed.
Status JobNotFound(const std::string& job_id);
Status JobExpired(const std::string& job_id, int64_t retention_ms);
Status JobAlreadyFinished(const std::string& job_id);
// A sync job whose client closed its connection: stored as its result (nobody reads it).
Status ClientWentAway();

// True when an accepted/running job has not reported for longer than `heartbeat_timeout_ms`.
bool IsLost(const JobRecord& record, int64_t now_ms, int64_t heartbeat_timeout_ms);
// The stored response of a lost job: 503 service_unavailable envelope asking to resubmit. Its
// request_id is the submitting request's (the poll repeats that X-Request-Id), the job id when
// the record has none.
std::string LostJobBody(const std::string& job_id, const std::string& request_id);
// Turns `record` into the failed/503 record of a lost job as of `now_ms`.
void MarkLost(JobRecord* record, int64_t now_ms);

// A result as the store keeps it: gzip when the body is at least kCompressMinBytes long and
// compresses, otherwise as it is.
struct StoredBody {
  std::string bytes;
  std::string encoding;  // "" or "gzip"
};
StoredBody EncodeForStorage(const std::string& body);
// The body as rendered from what the store kept.
StatusOr<std::string> DecodeStored(std::string bytes, const std::string& encoding);

// 410 job_expired for a result removed to make room for the owner's newer results.
Status JobEvicted(const std::string& job_id, int64_t allowance_bytes);
// The stored response of a job whose result alone (`stored_bytes`, compressed) is larger than
// the owner's whole allowance: 413 payload_too_large.
Status ResultTooLarge(int64_t stored_bytes, int64_t allowance_bytes);

}  // namespace dnaserve::core
