#include "tests/support/in_memory_job_store.h"

#include <algorithm>
#include <utility>

#include "core/render/error_envelope.h"
#include "core/jobs/job_store_common.h"

namespace dnaserve::core {
namespace {

// How often (by the store's clock) a write sweeps out expired jobs and tombstones.
constexpr int64_t kSweepIntervalMs = 60'000;

}  // namespace

InMemoryJobStore::InMemoryJobStore(const Clock* clock, InMemoryJobStoreOptions options)
    : clock_(clock ? clock : &DefaultClock()), options_(options) {}

InMemoryJobStore::Job* InMemoryJobStore::FindLive(const std::string& job_id, int64_t now_ms) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return nullptr;
  if (it->second.expires_at_ms <= now_ms) {
    jobs_.erase(it);
    return nullptr;
  }
  return &it->second;
}

void InMemoryJobStore::Touch(Job* job, int64_t now_ms) {
  job->expires_at_ms = now_ms + options_.retention_ms;
  tombstones_[job->record.job_id] = Tombstone{job->record.owner, now_ms + options_.tombstone_ms};
}

void InMemoryJobStore::SweepExpired(int64_t now_ms) {
  if (now_ms - last_sweep_ms_ < kSweepIntervalMs) return;
  last_sweep_ms_ = now_ms;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    it = it->second.expires_at_ms <= now_ms ? jobs_.erase(it) : std::next(it);
  }
  for (auto it = tombstones_.begin(); it != tombstones_.end();) {
    it = it->second.expires_at_ms <= now_ms ? tombstones_.erase(it) : std::next(it);
  }
  for (auto it = identities_.begin(); it != identities_.end();) {
    it = it->second.expires_at_ms <= now_ms ? identities_.erase(it) : std::next(it);
  }
}

Status InMemoryJobStore::Create(const JobRecord& record) {
  if (record.job_id.empty() || record.owner.empty()) {
    return Internal("job record without job_id or owner");
  }
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  return CreateLocked(record, now);
}

StatusOr<std::string> InMemoryJobStore::CreateOrFind(const JobRecord& record,
                                                     const std::string& identity) {
  if (record.job_id.empty() || record.owner.empty() || identity.empty()) {
    return Internal("job record without job_id, owner or identity");
  }
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = record.owner + "\n" + identity;
  auto found = identities_.find(key);
  if (found != identities_.end() && found->second.expires_at_ms > now) {
    const Job* job = FindLive(found->second.job_id, now);
    if (job != nullptr && job->record.owner == record.owner &&
        job->record.state != JobState::kFailed &&
        !IsLost(job->record, now, options_.heartbeat_timeout_ms)) {
      found->second.expires_at_ms = now + options_.retention_ms;
      return job->record.job_id;
    }
  }
  DNASERVE_RETURN_IF_ERROR(CreateLocked(record, now));
  identities_[key] = Identity{record.job_id, now + options_.retention_ms};
  return record.job_id;
}

Status InMemoryJobStore::CreateLocked(const JobRecord& record, int64_t now) {
  SweepExpired(now);
  auto seen = tombstones_.find(record.job_id);
  if (FindLive(record.job_id, now) != nullptr ||
      (seen != tombstones_.end() && seen->second.expires_at_ms > now)) {
    return Status(ErrorCode::kConflict, "job " + record.job_id + " already exists");
  }
  Job job;
  job.record = record;
  if (job.record.created_at_ms == 0) job.record.created_at_ms = now;
  job.record.updated_at_ms = now;
  Job& stored = jobs_[record.job_id] = std::move(job);
  Touch(&stored, now);

  auto& index = index_[record.owner];
  index.emplace(stored.record.created_at_ms, record.job_id);
  while (static_cast<int64_t>(index.size()) > options_.max_jobs_per_owner) {
    index.erase(index.begin());
  }
  return Status::Ok();
}

Status InMemoryJobStore::UpdateProgress(const std::string& job_id, double percent,
                                        const std::string& message) {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = FindLive(job_id, now);
  if (job == nullptr) return JobNotFound(job_id);
  if (IsTerminal(job->record.state)) return JobAlreadyFinished(job_id);
  job->record.state = JobState::kRunning;
  job->record.progress_percent = percent >= 0 ? std::min(percent, 100.0) : 0.0;
  job->record.progress_message = message;
  job->record.updated_at_ms = now;
  Touch(job, now);
  return Status::Ok();
}

void InMemoryJobStore::MakeRoom(const std::string& owner, int64_t bytes, int64_t now_ms) {
  auto& results = results_[owner];
  int64_t total = 0;
  for (auto it = results.begin(); it != results.end();) {
    if (FindLive(it->job_id, now_ms) == nullptr) {
      it = results.erase(it);
    } else {
      total += it->bytes;
      ++it;
    }
  }
  const int64_t allowance = options_.client_result_bytes;
  if (allowance <= 0) return;
  while (!results.empty() && total + bytes > allowance) {
    const StoredResult oldest = results.front();
    results.erase(results.begin());
    total -= oldest.bytes;
    jobs_.erase(oldest.job_id);
    tombstones_[oldest.job_id] = Tombstone{owner, now_ms + options_.tombstone_ms, true};
  }
}

Status InMemoryJobStore::Finish(const std::string& job_id, ErrorCode code,
                                const std::string& content_type, const std::string& body) {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = FindLive(job_id, now);
  if (job == nullptr) return JobNotFound(job_id);
  if (IsTerminal(job->record.state)) return JobAlreadyFinished(job_id);
  StoredBody stored = EncodeForStorage(body);
  std::string type = content_type;
  const int64_t allowance = options_.client_result_bytes;
  if (allowance > 0 && static_cast<int64_t>(stored.bytes.size()) > allowance) {
    code = ErrorCode::kPayloadTooLarge;
    type = "application/json";
    const std::string& rid =
        job->record.request_id.empty() ? job->record.job_id : job->record.request_id;
    stored = {ErrorEnvelopeJson(
                  ResultTooLarge(static_cast<int64_t>(stored.bytes.size()), allowance), rid),
              ""};
  }
  const std::string owner = job->record.owner;
  const auto bytes = static_cast<int64_t>(stored.bytes.size());
  MakeRoom(owner, bytes, now);
  job = FindLive(job_id, now);  // (never evicted: it has no result yet)
  job->record.state = StateForCode(code);
  if (job->record.state == JobState::kCompleted) job->record.progress_percent = 100;
  job->record.code = code;
  job->record.content_type = type;
  job->record.body = std::move(stored.bytes);
  job->record.body_encoding = std::move(stored.encoding);
  job->record.updated_at_ms = now;
  Touch(job, now);
  results_[owner].push_back({now, job_id, bytes});
  return Status::Ok();
}

StatusOr<JobRecord> InMemoryJobStore::Get(const std::string& job_id, const std::string& owner) {
  auto record = GetStored(job_id, owner);
  if (!record.ok()) return record;
  auto body = DecodeStored(std::move(record->body), record->body_encoding);
  if (!body.ok()) return body.status();
  record->body = std::move(body).value();
  record->body_encoding.clear();
  return record;
}

StatusOr<JobRecord> InMemoryJobStore::GetStored(const std::string& job_id,
                                                const std::string& owner) {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = FindLive(job_id, now);
  if (job == nullptr) {
    auto seen = tombstones_.find(job_id);
    if (seen != tombstones_.end() && seen->second.expires_at_ms > now &&
        seen->second.owner == owner) {
      if (seen->second.evicted) return JobEvicted(job_id, options_.client_result_bytes);
      return JobExpired(job_id, options_.retention_ms);
    }
    return JobNotFound(job_id);
  }
  if (job->record.owner != owner) return JobNotFound(job_id);
  if (IsLost(job->record, now, options_.heartbeat_timeout_ms)) {
    MarkLost(&job->record, now);
    job->record.body_encoding.clear();
  }
  Touch(job, now);
  return job->record;
}

StatusOr<std::vector<JobRecord>> InMemoryJobStore::List(const std::string& owner, int limit) {
  const int64_t now = clock_->NowMs();
  std::vector<JobRecord> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto index = index_.find(owner);
  if (index == index_.end() || limit <= 0) return out;
  for (auto it = index->second.rbegin();
       it != index->second.rend() && static_cast<int>(out.size()) < limit; ++it) {
    auto job = jobs_.find(it->second);
    if (job == jobs_.end() || job->second.expires_at_ms <= now ||
        job->second.record.owner != owner) {
      continue;
    }
    JobRecord record = job->second.record;
    record.body.clear();
    record.body_encoding.clear();
    if (IsLost(record, now, options_.heartbeat_timeout_ms)) {
      record.state = JobState::kFailed;
      record.code = ErrorCode::kServiceUnavailable;
    }
    out.push_back(std::move(record));
  }
  return out;
}

size_t InMemoryJobStore::live_jobs() const {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    return entry.second.expires_at_ms > now;
  }));
}

}  // namespace dnaserve::core
