// Job state. Every predict call, sync or async, is a job. Records live in Redis so that any
// gateway replica can poll any job; this interface keeps hiredis out of the handlers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dnaserve::core {

// The version of the job record format this build writes. A reader meets records of the
// version before it during a rolling upgrade (read as they were written), and of a newer one
// when an older build polls a record a newer build wrote: those are answered 503 (another
// replica may know them) and never rewritten.
inline constexpr int kJobRecordVersion = 2;

// Retention after last activity, and the heartbeat age after which a job running on a gateway
// (a sync prediction) whose gateway stopped updating it is declared lost.
inline constexpr int64_t kJobRetentionSeconds = 24 * 3600;
inline constexpr int64_t kJobHeartbeatTimeoutSeconds = 60;

enum class JobState { kAccepted, kRunning, kCompleted, kFailed };
std::string_view JobStateName(JobState state);  // "accepted", "running", "completed", "failed"

struct JobRecord {
  std::string job_id;
  std::string request_id;  // of the submitting request; echoed by polls of the finished job
  std::string owner;  // client_id
  std::string task;   // "promoter", ... (later also workflow names)
  std::string mode;   // "sync" or "async"
  // Run by a runner from the Redis queue: never declared lost by the heartbeat rule (a queued
  // job waits its turn; a runner that dies leaves it to another runner, see job_queue.h).
  bool queued = false;
  JobState state = JobState::kAccepted;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;  // last activity / heartbeat
  double progress_percent = 0;
  std::string progress_message;
  // Final result, stored when the job ends: kOk (completed) or the error's code (failed), with
  // the body (the result, or the error envelope) and its media type.
  ErrorCode code = ErrorCode::kOk;
  // Records written before records carried a format version stored an HTTP status instead of
  // a code; such a record keeps it here (and its code is kOk when 2xx, kInternal otherwise).
  std::optional<int> legacy_http_status;
  std::string content_type;
  std::string body;
  // How `body` is encoded: "" (as rendered) or "gzip" (result_codec.h). Get() always returns
  // "" (the body as rendered); GetStored() may return "gzip" with the stored bytes.
  std::string body_encoding;
  // The record format it was read in (kJobRecordVersion for records this build writes).
  int format_version = kJobRecordVersion;
};

// Each client's finished jobs may keep at most this many bytes of results (as stored, i.e.
// compressed) in the store; 0 = no limit. When a new result would go past it, the client's
// oldest results are removed first (their polls answer 410 job_expired, saying why); a result
// larger than the whole allowance on its own is stored as 413 payload_too_large instead.
// Tenants never share an allowance, so one client cannot push out another's results.
inline constexpr int64_t kDefaultClientResultBytes = 64LL << 20;
// How long an expired job's owner still gets 410 job_expired (anyone else 404).
inline constexpr int64_t kJobTombstoneMs = 30LL * 24 * 3600 * 1000;
inline constexpr int64_t kMaxJobsPerOwner = 500;

// The settings every JobStore implementation honours the same way.
struct JobStoreOptions {
  int64_t retention_ms = kJobRetentionSeconds * 1000;
  int64_t tombstone_ms = kJobTombstoneMs;
  int64_t heartbeat_timeout_ms = kJobHeartbeatTimeoutSeconds * 1000;
  int64_t max_jobs_per_owner = kMaxJobsPerOwner;
  // Stored result bytes (compressed) each owner may keep; 0 = no limit (see above).
  int64_t client_result_bytes = kDefaultClientResultBytes;
};

class JobStore {
 public:
  virtual ~JobStore() = default;
  virtual Status Create(const JobRecord& record) = 0;
  // Job identity (the variant workflow's resubmissions): when `identity` names a job of
  // record.owner that is live and has not failed (nor been lost), that job's id; otherwise
  // `record` is created as by Create and recorded under `identity` for the retention period,
  // and its id returned. One atomic step, so two identical submissions never both run. The
  // identity is the caller's digest of the case; it is scoped to the owner here as well.
  virtual StatusOr<std::string> CreateOrFind(const JobRecord& record,
                                             const std::string& identity) = 0;
  // Moves to running, records progress and refreshes the heartbeat and retention.
  virtual Status UpdateProgress(const std::string& job_id, double percent,
                                const std::string& message) = 0;
  // Stores the final result; state becomes completed (kOk) or failed (otherwise). Large
  // bodies are stored gzip-compressed and count against the owner's result allowance (above):
  // storing one may evict the owner's oldest results, and a body larger than the whole
  // allowance is replaced by a 413 payload_too_large envelope (the job fails).
  virtual Status Finish(const std::string& job_id, ErrorCode code,
                        const std::string& content_type, const std::string& body) = 0;
  // Stores a failed job's result: `status` as the contract's error envelope.
  Status Fail(const std::string& job_id, const Status& status, const std::string& request_id);
  // The job if `owner` owns it: not_found when unknown or owned by another client,
  // job_expired when its retention has passed. A running job whose heartbeat is older than
  // kJobHeartbeatTimeoutSeconds is returned as failed with a 503 service_unavailable body.
  // Refreshes retention (a poll is activity).
  // The body is returned as rendered (body_encoding ""). A result evicted to make room under
  // the owner's allowance is job_expired too, with a message saying so.
  virtual StatusOr<JobRecord> Get(const std::string& job_id, const std::string& owner) = 0;
  // As Get, but the body as stored: gzip bytes with body_encoding "gzip" when the store
  // compressed it, so a poll can send them to a client accepting gzip without recompressing.
  // The default returns Get's answer.
  virtual StatusOr<JobRecord> GetStored(const std::string& job_id, const std::string& owner) {
    return Get(job_id, owner);
  }
  // The owner's most recent jobs, newest first, without bodies.
  virtual StatusOr<std::vector<JobRecord>> List(const std::string& owner, int limit) = 0;
  // Liveness of the backing store (used by /health and readiness).
  virtual Status Ping() = 0;

  // A job's named files beside its result, kept for the retention period: a batch variant
  // job's annotated VCF, and its checkpoints while it runs (runner/workflows/
  // variant_score_batch.h). No owner check here: the caller has checked it (Get) or is the
  // job's runner. Stores without files answer unimplemented / not_found.
  virtual Status PutFile(const std::string& job_id, const std::string& name,
                         const std::string& bytes);
  // not_found when the job has no such file (never written, or expired).
  virtual StatusOr<std::string> GetFile(const std::string& job_id, const std::string& name);
  virtual Status DeleteFile(const std::string& job_id, const std::string& name);
};

}  // namespace dnaserve::core
