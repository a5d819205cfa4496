#include "core/jobs/job_store.h"

#include "core/jobs/job_store_common.h"
#include "core/jobs/result_codec.h"
#include "core/render/error_envelope.h"

namespace dnaserve::core {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kAccepted:
      return "accepted";
    case JobState::kRunning:
      return "running";
    case JobState::kCompleted:
      return "completed";
    case JobState::kFailed:
      return "failed";
  }
  return "failed";
}

std::optional<JobState> JobStateFromName(std::string_view name) {
  for (JobState s :
       {JobState::kAccepted, JobState::kRunning, JobState::kCompleted, JobState::kFailed}) {
    if (JobStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsTerminal(JobState state) {
  return state == JobState::kCompleted || state == JobState::kFailed;
}

JobState StateForCode(ErrorCode code) {
  return code == ErrorCode::kOk ? JobState::kCompleted : JobState::kFailed;
}

Status JobStore::Fail(const std::string& job_id, const Status& status,
                      const std::string& request_id) {
  return Finish(job_id, status.code(), "application/json", ErrorEnvelopeJson(status, request_id));
}

Status JobNotFound(const std::string& job_id) { return NotFound("job " + job_id + " not found"); }

Status JobExpired(const std::string& job_id, int64_t retention_ms) {
  std::string retention = retention_ms % 3'600'000 == 0
                              ? std::to_string(retention_ms / 3'600'000) + " h"
                              : std::to_string(retention_ms / 1000) + " s";
  return Status(ErrorCode::kJobExpired, "job " + job_id + " has expired: results are kept for " +
                                            retention +
                                            " after the last activity; resubmit the request");
}

Status ClientWentAway() {
  return Status(ErrorCode::kServiceUnavailable,
                "the client closed its connection before the answer was ready; the work was "
                "cancelled");
}

Status JobAlreadyFinished(const std::string& job_id) {
  return Status(ErrorCode::kConflict, "job " + job_id + " has already finished");
}

bool IsLost(const JobRecord& record, int64_t now_ms, int64_t heartbeat_timeout_ms) {
  return !record.queued && !IsTerminal(record.state) &&
         now_ms - record.updated_at_ms > heartbeat_timeout_ms;
}

std::string LostJobBody(const std::string& job_id, const std::string& request_id) {
  Status lost = Unavailable("job " + job_id +
                            " was lost: the gateway running it stopped reporting progress "
                            "(restart or crash); resubmit the request");
  return ErrorEnvelopeJson(lost, request_id.empty() ? job_id : request_id);
}

void MarkLost(JobRecord* record, int64_t now_ms) {
  record->state = JobState::kFailed;
  record->code = ErrorCode::kServiceUnavailable;
  record->content_type = "application/json";
  record->body = LostJobBody(record->job_id, record->request_id);
  record->updated_at_ms = now_ms;
}

StoredBody EncodeForStorage(const std::string& body) {
  if (body.size() >= kCompressMinBytes) {
    std::string gz = GzipCompress(body);
    if (!gz.empty() && gz.size() < body.size()) return {std::move(gz), std::string(kGzipEncoding)};
  }
  return {body, std::string(kIdentityEncoding)};
}

StatusOr<std::string> DecodeStored(std::string bytes, const std::string& encoding) {
  if (encoding == kIdentityEncoding) return bytes;
  if (encoding == kGzipEncoding) return GzipDecompress(bytes);
  return Internal("a stored result has an unknown encoding '" + encoding + "'");
}

namespace {
std::string Bytes(int64_t n) {
  return n % (1LL << 20) == 0 ? std::to_string(n >> 20) + " MiB" : std::to_string(n) + " bytes";
}
}  // namespace

Status JobEvicted(const std::string& job_id, int64_t allowance_bytes) {
  return Status(ErrorCode::kJobExpired,
                "job " + job_id + "'s result was removed to make room for newer results: each " +
                    "client keeps at most " + Bytes(allowance_bytes) +
                    " of stored results (compressed), oldest removed first; resubmit the request");
}

Status ResultTooLarge(int64_t stored_bytes, int64_t allowance_bytes) {
  return Status(ErrorCode::kPayloadTooLarge,
                "the result (" + std::to_string(stored_bytes) +
                    " bytes compressed) is larger than the " + Bytes(allowance_bytes) +
                    " of stored results this client may keep; raise options.threshold or send "
                    "a shorter sequence");
}

Status JobStore::PutFile(const std::string&, const std::string& name, const std::string&) {
  return Status(ErrorCode::kInternal, "this job store keeps no job files (" + name + ")");
}

StatusOr<std::string> JobStore::GetFile(const std::string&, const std::string& name) {
  return NotFound("no job file " + name);
}

Status JobStore::DeleteFile(const std::string&, const std::string&) { return Status::Ok(); }

}  // namespace dnaserve::core
