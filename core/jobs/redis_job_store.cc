#include "core/jobs/redis_job_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <utility>

#include "common/log.h"
#include "core/render/error_envelope.h"
#include "core/jobs/job_store_common.h"

namespace dnaserve::core {
namespace {

// Stands for the record's request_id in the lost-job body handed to the Get script.
constexpr const char* kRequestIdMark = "@@request_id@@";

// The create step both create scripts end with: the hash (field/value pairs from
// ARGV[first_field] on), its retention, the owner tombstone and the owner's index.
// KEYS: job, seen, index. ARGV: retention_ms, tombstone_ms, max_jobs, owner, job_id,
// created_at_ms.
std::string CreateStepLua(int first_field) {
  return R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return {'exists'}
end
redis.call('HSET', KEYS[1], unpack(ARGV, )lua" +
         std::to_string(first_field) + R"lua())
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[5])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[3]) + 1))
redis.call('PEXPIRE', KEYS[3], ARGV[2])
)lua";
}

// KEYS: job, seen, index. ARGV: as CreateStepLua, then the hash's field/value pairs.
// Returns {'exists'} or {'created'}.
const RedisScript& CreateScript() {
  static const RedisScript script(CreateStepLua(7) + "return {'created'}\n");
  return script;
}

// Create, unless a live job of the same owner that has not failed (nor been lost) is recorded
// under the identity. KEYS: job, seen, index, identity. ARGV: as CreateScript's first six, then
// the job key prefix, now_ms, heartbeat_timeout_ms, then the hash's field/value pairs. The
// existing job's key is built from the prefix: its id is only known inside the script.
const RedisScript& CreateOrFindScript() {
  static const RedisScript script(R"lua(
local existing = redis.call('GET', KEYS[4])
if existing then
  local f = redis.call('HMGET', ARGV[7] .. existing, 'owner', 'state', 'updated_at_ms', 'queued')
  local owner, state, updated = f[1], f[2], f[3]
  if owner == ARGV[4] and state and state ~= 'failed' then
    local lost = f[4] ~= '1' and (state == 'accepted' or state == 'running') and
                 tonumber(ARGV[8]) - tonumber(updated or '0') > tonumber(ARGV[9])
    if not lost then
      redis.call('PEXPIRE', KEYS[4], ARGV[1])
      return {'existing', existing}
    end
  end
end
)lua" + CreateStepLua(10) + R"lua(
redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[1])
return {'created'}
)lua");
  return script;
}

// KEYS: job, seen. ARGV: retention_ms, tombstone_ms, now_ms, then field/value pairs to set.
// Only a job that exists and has not finished is touched.
const RedisScript& UpdateScript() {
  static const RedisScript script(R"lua(
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'not_found' end
if state == 'completed' or state == 'failed' then return 'finished' end
redis.call('HSET', KEYS[1], 'updated_at_ms', ARGV[3], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], redis.call('HGET', KEYS[1], 'owner'), 'PX', ARGV[2])
return 'ok'
)lua");
  return script;
}

// The owner's result accounting, kept beside the jobs (see the header). Keys are built in the
// scripts: the owner is only known inside them. Defines `acct(prefix, owner)` returning the
// four keys and `reclaim(k, prefix, now)`, which forgets the results whose retention has
// passed (the job hash expired on its own: nothing to evict) and returns the bytes freed.
const char* kAccountingLua = R"lua(
local function acct(prefix, owner)
  return {sizes = prefix .. 'resultsizes:' .. owner, order = prefix .. 'resultorder:' .. owner,
          expiry = prefix .. 'resultexpiry:' .. owner, total = prefix .. 'resultbytes:' .. owner}
end
local function forget(k, id)
  local size = tonumber(redis.call('HGET', k.sizes, id) or '0')
  redis.call('HDEL', k.sizes, id)
  redis.call('ZREM', k.order, id)
  redis.call('ZREM', k.expiry, id)
  return size
end
local function reclaim(k, prefix, now)
  local freed = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', k.expiry, '-inf', now)) do
    -- Redis's clock decides: a hash still there (clocks apart by a few ms) stays counted.
    if redis.call('EXISTS', prefix .. 'job:' .. id) == 0 then freed = freed + forget(k, id) end
  end
  return freed
end
)lua";

// KEYS: job, seen. ARGV: retention_ms, tombstone_ms, now_ms, allowance (0 = none), key prefix,
// job id, request-id mark ('' = none: see Finish), body, then the other field/value pairs.
// Returns {'ok', evicted count}, {'not_found'} or {'finished'}. The body's size counts against
// the owner's allowance: results whose retention has passed are forgotten first, then the
// oldest results are evicted (hash deleted, tombstone marked 'evicted:<owner>') until it fits.
const RedisScript& FinishScript() {
  static const RedisScript script(std::string(kAccountingLua) + R"lua(
local f = redis.call('HMGET', KEYS[1], 'state', 'owner', 'request_id')
local state, owner = f[1], f[2]
if not state then return {'not_found'} end
if state == 'completed' or state == 'failed' then return {'finished'} end
local prefix, id, now = ARGV[5], ARGV[6], tonumber(ARGV[3])
local body = ARGV[8]
if ARGV[7] ~= '' then
  local rid = f[3] or ''
  if not string.match(rid, '^[%w%-]+$') then rid = id end
  local at = string.find(body, ARGV[7], 1, true)
  if at then body = string.sub(body, 1, at - 1) .. rid .. string.sub(body, at + #ARGV[7]) end
end
local size = #body
local allowance = tonumber(ARGV[4])
local k = acct(prefix, owner)
local total = tonumber(redis.call('GET', k.total) or '0')
local evicted = 0
if allowance > 0 and total + size > allowance then
  total = total - reclaim(k, prefix, now)
  while total + size > allowance do
    local oldest = redis.call('ZRANGE', k.order, 0, 0)
    if #oldest == 0 then break end
    local victim = oldest[1]
    total = total - forget(k, victim)
    if redis.call('DEL', prefix .. 'job:' .. victim) == 1 then
      redis.call('SET', prefix .. 'jobseen:' .. victim, 'evicted:' .. owner, 'PX', ARGV[2])
      evicted = evicted + 1
    end
  end
  if total < 0 then total = 0 end
end
redis.call('HSET', KEYS[1], 'updated_at_ms', ARGV[3], 'body', body, unpack(ARGV, 9))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], owner, 'PX', ARGV[2])
redis.call('HSET', k.sizes, id, size)
redis.call('ZADD', k.order, now, id)
redis.call('ZADD', k.expiry, now + tonumber(ARGV[1]), id)
redis.call('SET', k.total, total + size, 'PX', ARGV[1])
redis.call('PEXPIRE', k.sizes, ARGV[1])
redis.call('PEXPIRE', k.order, ARGV[1])
redis.call('PEXPIRE', k.expiry, ARGV[1])
return {'ok', tostring(evicted)}
)lua");
  return script;
}

// KEYS: job, seen. ARGV: owner, now_ms, heartbeat_timeout_ms, retention_ms, tombstone_ms,
// lost-job body, the mark in that body standing for the record's request_id (a gateway-made
// UUID, so it needs no JSON escaping; anything else falls back to the job id), key prefix.
// Returns {'ok', field, value, ...}, {'expired'}, {'evicted'} or {'not_found'}.
const RedisScript& GetScript() {
  static const RedisScript script(std::string(kAccountingLua) + R"lua(
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then
  local seen = redis.call('GET', KEYS[2])
  if seen == ARGV[1] then return {'expired'} end
  if seen == 'evicted:' .. ARGV[1] then return {'evicted'} end
  return {'not_found'}
end
local rec = {}
for i = 1, #fields, 2 do rec[fields[i]] = fields[i + 1] end
if rec['owner'] ~= ARGV[1] then return {'not_found'} end
local now = tonumber(ARGV[2])
local state = rec['state']
if rec['queued'] ~= '1' and (state == 'accepted' or state == 'running') and
   now - tonumber(rec['updated_at_ms'] or '0') > tonumber(ARGV[3]) and
   (tonumber(rec['v'] or '1') or 0) <= tonumber(ARGV[9]) then
  local rid = rec['request_id'] or ''
  if not string.match(rid, '^[%w%-]+$') then rid = rec['job_id'] or '' end
  local body = ARGV[6]
  local at = string.find(body, ARGV[7], 1, true)
  if at then body = string.sub(body, 1, at - 1) .. rid .. string.sub(body, at + #ARGV[7]) end
  redis.call('HSET', KEYS[1], 'state', 'failed', 'code', 'service_unavailable',
             'content_type', 'application/json', 'body', body, 'body_encoding', '',
             'updated_at_ms', ARGV[2])
  fields = redis.call('HGETALL', KEYS[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[5])
-- A poll is activity: the result's accounting lives exactly as long as the result.
local k = acct(ARGV[8], ARGV[1])
if redis.call('ZADD', k.expiry, 'XX', 'CH', now + tonumber(ARGV[4]), rec['job_id'] or '') == 1 then
  for _, key in ipairs({k.sizes, k.order, k.expiry, k.total}) do
    redis.call('PEXPIRE', key, ARGV[4])
  end
end
local out = {'ok'}
for i = 1, #fields do out[i + 1] = fields[i] end
return out
)lua");
  return script;
}

// Every field but the body, for listings.
const std::vector<std::string>& ListFields() {
  // clang-format off
  static const std::vector<std::string> fields = {
      "job_id", "request_id", "owner", "task", "mode", "queued", "state", "created_at_ms",
      "updated_at_ms", "progress_percent", "progress_message", "code", "http_status", "v",
      "content_type"};
  // clang-format on
  return fields;
}

std::string FormatDouble(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

int64_t ParseInt(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

std::vector<std::string> RecordFields(const JobRecord& r) {
  // clang-format off
  return {"job_id", r.job_id,
          "request_id", r.request_id,
          "owner", r.owner,
          "task", r.task,
          "mode", r.mode,
          "queued", r.queued ? "1" : "0",
          "state", std::string(JobStateName(r.state)),
          "created_at_ms", std::to_string(r.created_at_ms),
          "updated_at_ms", std::to_string(r.updated_at_ms),
          "progress_percent", FormatDouble(r.progress_percent),
          "progress_message", r.progress_message,
          "v", std::to_string(kJobRecordVersion),
          "code", IsTerminal(r.state) ? std::string(ErrorCodeName(r.code)) : std::string(),
          "content_type", r.content_type,
          "body", r.body};
  // clang-format on
}

// Records without a "v" field were written before the format had versions (version 1): they
// stored an HTTP status instead of a code. Such a status is kept for the gateway to answer with;
// the code only has to say whether the job failed. A record of the current version has none.
constexpr int kUnversionedRecord = 1;
void ReadAsCurrent(JobRecord* r) {
  if (r->format_version >= 2) {
    r->legacy_http_status.reset();
    return;
  }
  const bool failed_legacy = r->legacy_http_status &&
                             (*r->legacy_http_status < 200 || *r->legacy_http_status >= 300);
  if (failed_legacy && r->code == ErrorCode::kOk) r->code = ErrorCode::kInternal;
}

Status NewerRecord(const std::string& job_id, int version) {
  log::Warn("job_record_newer_version", {{"job_id", job_id}, {"version", version}});
  return Status(ErrorCode::kServiceUnavailable,
                "job " + job_id + " was written by a newer release of the service; retry shortly")
      .set_retry_after_seconds(5);
}

// Fills one field of `r`; unknown fields are ignored (written by a newer gateway).
bool SetField(const std::string& name, const std::string& value, JobRecord* r) {
  if (name == "state") {
    auto state = JobStateFromName(value);
    if (!state) return false;
    r->state = *state;
  } else if (name == "queued") {
    r->queued = value == "1";
  } else if (name == "created_at_ms") {
    r->created_at_ms = ParseInt(value);
  } else if (name == "updated_at_ms") {
    r->updated_at_ms = ParseInt(value);
  } else if (name == "progress_percent") {
    r->progress_percent = std::strtod(value.c_str(), nullptr);
  } else if (name == "code") {
    if (!value.empty()) r->code = ErrorCodeFromName(value);
  } else if (name == "v") {
    r->format_version = static_cast<int>(ParseInt(value));
  } else if (name == "http_status") {
    // Written by releases before the record format had versions (see ReadAsCurrent).
    if (ParseInt(value) > 0) r->legacy_http_status = static_cast<int>(ParseInt(value));
  } else {
    std::string JobRecord::*text = nullptr;
    if (name == "job_id") text = &JobRecord::job_id;
    if (name == "request_id") text = &JobRecord::request_id;
    if (name == "owner") text = &JobRecord::owner;
    if (name == "task") text = &JobRecord::task;
    if (name == "mode") text = &JobRecord::mode;
    if (name == "progress_message") text = &JobRecord::progress_message;
    if (name == "content_type") text = &JobRecord::content_type;
    if (name == "body") text = &JobRecord::body;
    if (name == "body_encoding") text = &JobRecord::body_encoding;
    if (text != nullptr) r->*text = value;
  }
  return true;
}

bool IsString(const RedisReply& r) {
  return r.type == RedisReply::Type::kString || r.type == RedisReply::Type::kStatus;
}

double ClampPercent(double percent) {
  if (!(percent >= 0)) return 0;  // also NaN
  return std::min(percent, 100.0);
}

}  // namespace

RedisJobStore::RedisJobStore(std::shared_ptr<RedisConnection> redis, const Clock* clock,
                             RedisJobStoreOptions options)
    : redis_(std::move(redis)),
      clock_(clock ? clock : &DefaultClock()),
      options_(std::move(options)) {}

std::string RedisJobStore::JobKey(const std::string& job_id) const {
  return options_.key_prefix + "job:" + job_id;
}
std::string RedisJobStore::SeenKey(const std::string& job_id) const {
  return options_.key_prefix + "jobseen:" + job_id;
}
std::string RedisJobStore::IndexKey(const std::string& owner) const {
  return options_.key_prefix + "jobs:" + owner;
}

Status RedisJobStore::StoreError(const char* op, const Status& status) const {
  log::Warn("job_store_error", {{"op", op}, {"error", status.message()}});
  return Unavailable("the job store is unavailable; retry shortly")
      .set_retry_after_seconds(kRedisRetryAfterSeconds);
}

std::string RedisJobStore::IdentityKey(const std::string& owner,
                                       const std::string& identity) const {
  return options_.key_prefix + "jobidentity:" + owner + ":" + identity;
}

// The record as stored (timestamps filled in) and CreateScript's leading arguments.
std::vector<std::string> RedisJobStore::CreateArgs(const JobRecord& record,
                                                   std::vector<std::string>* fields) const {
  JobRecord r = record;
  const int64_t now = clock_->NowMs();
  if (r.created_at_ms == 0) r.created_at_ms = now;
  r.updated_at_ms = now;
  *fields = RecordFields(r);
  return {std::to_string(options_.retention_ms),
          std::to_string(options_.tombstone_ms),
          std::to_string(options_.max_jobs_per_owner),
          r.owner,
          r.job_id,
          std::to_string(r.created_at_ms)};
}

const std::string& RedisJobStore::CreateStepSource() {
  static const std::string lua = CreateStepLua(7);
  return lua;
}

std::vector<std::string> RedisJobStore::CreateKeys(const JobRecord& record) const {
  return {JobKey(record.job_id), SeenKey(record.job_id), IndexKey(record.owner)};
}

std::vector<std::string> RedisJobStore::CreateStepArgs(const JobRecord& record) const {
  std::vector<std::string> fields;
  std::vector<std::string> args = CreateArgs(record, &fields);
  args.insert(args.end(), std::make_move_iterator(fields.begin()),
              std::make_move_iterator(fields.end()));
  return args;
}

Status RedisJobStore::CreateOutcome(const std::string& job_id,
                                    const StatusOr<RedisReply>& reply) const {
  if (!reply.ok()) return StoreError("create", reply.status());
  const auto& e = reply->elements;
  if (reply->type != RedisReply::Type::kArray || e.empty() || !IsString(e[0])) {
    return StoreError("create", Internal("unexpected reply shape"));
  }
  if (e[0].str == "exists") return Status(ErrorCode::kConflict, "job " + job_id + " already exists");
  return Status::Ok();
}

Status RedisJobStore::Create(const JobRecord& record) {
  if (record.job_id.empty() || record.owner.empty()) {
    return Internal("job record without job_id or owner");
  }
  return CreateOutcome(record.job_id, redis_->Eval(CreateScript(), CreateKeys(record),
                                                   CreateStepArgs(record)));
}

StatusOr<std::string> RedisJobStore::CreateOrFind(const JobRecord& record,
                                                  const std::string& identity) {
  if (record.job_id.empty() || record.owner.empty() || identity.empty()) {
    return Internal("job record without job_id, owner or identity");
  }
  std::vector<std::string> fields;
  std::vector<std::string> args = CreateArgs(record, &fields);
  args.push_back(options_.key_prefix + "job:");
  args.push_back(std::to_string(clock_->NowMs()));
  args.push_back(std::to_string(options_.heartbeat_timeout_ms));
  args.insert(args.end(), fields.begin(), fields.end());
  const std::string& id = record.job_id;
  auto reply = redis_->Eval(
      CreateOrFindScript(),
      {JobKey(id), SeenKey(id), IndexKey(record.owner), IdentityKey(record.owner, identity)}, args);
  if (!reply.ok()) return StoreError("create", reply.status());
  const auto& e = reply->elements;
  if (reply->type != RedisReply::Type::kArray || e.empty() || !IsString(e[0])) {
    return StoreError("create", Internal("unexpected reply shape"));
  }
  if (e[0].str == "exists") return Status(ErrorCode::kConflict, "job " + id + " already exists");
  if (e[0].str == "existing" && e.size() == 2 && IsString(e[1])) return e[1].str;
  if (e[0].str == "created") return id;
  return StoreError("create", Internal("unexpected reply " + e[0].str));
}

Status RedisJobStore::UpdateProgress(const std::string& job_id, double percent,
                                     const std::string& message) {
  const int64_t now = clock_->NowMs();
  auto reply =
      redis_->Eval(UpdateScript(), {JobKey(job_id), SeenKey(job_id)},
                   {std::to_string(options_.retention_ms), std::to_string(options_.tombstone_ms),
                    std::to_string(now), "state", "running", "progress_percent",
                    FormatDouble(ClampPercent(percent)), "progress_message", message});
  if (!reply.ok()) return StoreError("progress", reply.status());
  if (reply->str == "not_found") return JobNotFound(job_id);
  if (reply->str == "finished") return JobAlreadyFinished(job_id);
  return Status::Ok();
}

Status RedisJobStore::Finish(const std::string& job_id, ErrorCode code,
                             const std::string& content_type, const std::string& body) {
  const int64_t now = clock_->NowMs();
  StoredBody stored = EncodeForStorage(body);
  std::string mark;  // set when the stored body is our own envelope naming the request
  std::string type = content_type;
  const int64_t allowance = options_.client_result_bytes;
  if (allowance > 0 && static_cast<int64_t>(stored.bytes.size()) > allowance) {
    code = ErrorCode::kPayloadTooLarge;
    type = "application/json";
    stored.bytes = ErrorEnvelopeJson(
        ResultTooLarge(static_cast<int64_t>(stored.bytes.size()), allowance), kRequestIdMark);
    stored.encoding.clear();
    mark = kRequestIdMark;
  }
  JobState state = StateForCode(code);
  std::vector<std::string> args = {std::to_string(options_.retention_ms),
                                   std::to_string(options_.tombstone_ms),
                                   std::to_string(now),
                                   std::to_string(std::max<int64_t>(0, allowance)),
                                   options_.key_prefix,
                                   job_id,
                                   mark};
  args.push_back(std::move(stored.bytes));
  const std::string fields[] = {"state",        std::string(JobStateName(state)),
                                "code",         std::string(ErrorCodeName(code)),
                                "content_type", type,
                                "body_encoding", stored.encoding};
  args.insert(args.end(), std::begin(fields), std::end(fields));
  if (state == JobState::kCompleted) {
    args.push_back("progress_percent");
    args.push_back("100");
  }
  auto reply = redis_->Eval(FinishScript(), {JobKey(job_id), SeenKey(job_id)}, args);
  if (!reply.ok()) return StoreError("finish", reply.status());
  const auto& e = reply->elements;
  if (reply->type != RedisReply::Type::kArray || e.empty() || !IsString(e[0])) {
    return StoreError("finish", Internal("unexpected reply shape"));
  }
  if (e[0].str == "not_found") return JobNotFound(job_id);
  if (e[0].str == "finished") return JobAlreadyFinished(job_id);
  if (e.size() == 2 && IsString(e[1]) && e[1].str != "0") {
    log::Info("job_results_evicted", {{"job_id", job_id}, {"evicted", e[1].str}});
  }
  return Status::Ok();
}

StatusOr<JobRecord> RedisJobStore::Get(const std::string& job_id, const std::string& owner) {
  auto record = GetStored(job_id, owner);
  if (!record.ok()) return record;
  auto body = DecodeStored(std::move(record->body), record->body_encoding);
  if (!body.ok()) return StoreError("get", body.status());
  record->body = std::move(body).value();
  record->body_encoding.clear();
  return record;
}

StatusOr<JobRecord> RedisJobStore::GetStored(const std::string& job_id, const std::string& owner) {
  const int64_t now = clock_->NowMs();
  auto reply =
      redis_->Eval(GetScript(), {JobKey(job_id), SeenKey(job_id)},
                   {owner, std::to_string(now), std::to_string(options_.heartbeat_timeout_ms),
                    std::to_string(options_.retention_ms), std::to_string(options_.tombstone_ms),
                    LostJobBody(job_id, kRequestIdMark), kRequestIdMark, options_.key_prefix,
                    std::to_string(kJobRecordVersion)});
  if (!reply.ok()) return StoreError("get", reply.status());
  auto& e = reply->elements;
  if (reply->type != RedisReply::Type::kArray || e.empty() || !IsString(e[0])) {
    return StoreError("get", Internal("unexpected reply shape"));
  }
  if (e[0].str == "not_found") return JobNotFound(job_id);
  if (e[0].str == "expired") return JobExpired(job_id, options_.retention_ms);
  if (e[0].str == "evicted") return JobEvicted(job_id, options_.client_result_bytes);
  JobRecord record;
  record.format_version = kUnversionedRecord;
  for (size_t i = 1; i + 1 < e.size(); i += 2) {
    if (e[i].str == "body") {
      record.body = std::move(e[i + 1].str);  // the one large field: moved, never copied
      continue;
    }
    if (!SetField(e[i].str, e[i + 1].str, &record)) {
      return StoreError("get", Internal("bad field " + e[i].str));
    }
  }
  if (record.format_version > kJobRecordVersion) {
    return NewerRecord(job_id, record.format_version);
  }
  ReadAsCurrent(&record);
  return record;
}

StatusOr<std::vector<JobRecord>> RedisJobStore::List(const std::string& owner, int limit) {
  std::vector<JobRecord> jobs;
  if (limit <= 0) return jobs;
  const int64_t now = clock_->NowMs();
  const std::vector<std::string>& fields = ListFields();
  std::vector<std::string> vanished;
  // Ids whose hash has expired are skipped, so read on until `limit` live jobs are found (the
  // index holds at most max_jobs_per_owner ids).
  for (int64_t offset = 0; static_cast<int>(jobs.size()) < limit;) {
    const int64_t chunk = std::max<int64_t>(limit, 50);
    auto ids = redis_->Command(
        {"ZREVRANGE", IndexKey(owner), std::to_string(offset), std::to_string(offset + chunk - 1)});
    if (!ids.ok()) return StoreError("list", ids.status());
    if (ids->type != RedisReply::Type::kArray || ids->elements.empty()) break;
    offset += static_cast<int64_t>(ids->elements.size());

    std::vector<std::vector<std::string>> commands;
    for (const auto& id : ids->elements) {
      std::vector<std::string> cmd = {"HMGET", JobKey(id.str)};
      cmd.insert(cmd.end(), fields.begin(), fields.end());
      commands.push_back(std::move(cmd));
    }
    auto rows = redis_->Pipeline(commands);
    if (!rows.ok()) return StoreError("list", rows.status());
    for (size_t i = 0; i < rows->size() && static_cast<int>(jobs.size()) < limit; ++i) {
      const RedisReply& row = (*rows)[i];
      if (row.type != RedisReply::Type::kArray || row.elements.size() != fields.size() ||
          row.elements[0].IsNil()) {
        vanished.push_back(ids->elements[i].str);
        continue;
      }
      JobRecord record;
      record.format_version = kUnversionedRecord;
      bool valid = true;
      for (size_t f = 0; f < fields.size(); ++f) {
        if (!row.elements[f].IsNil()) valid &= SetField(fields[f], row.elements[f].str, &record);
      }
      if (!valid || record.owner != owner) continue;
      ReadAsCurrent(&record);
      // Report what a poll would report, without writing (a poll marks it for good).
      if (IsLost(record, now, options_.heartbeat_timeout_ms)) {
        record.state = JobState::kFailed;
        record.code = ErrorCode::kServiceUnavailable;
      }
      jobs.push_back(std::move(record));
    }
    if (static_cast<int64_t>(ids->elements.size()) < chunk) break;
  }
  if (!vanished.empty()) {
    // Best effort: drop ids of expired jobs from the index.
    std::vector<std::string> zrem = {"ZREM", IndexKey(owner)};
    zrem.insert(zrem.end(), vanished.begin(), vanished.end());
    (void)redis_->Command(zrem);
  }
  return jobs;
}

Status RedisJobStore::Ping() {
  Status status = redis_->Ping();
  if (!status.ok()) return StoreError("ping", status);
  return Status::Ok();
}

std::string RedisJobStore::FileKey(const std::string& job_id, const std::string& name) const {
  return options_.key_prefix + "jobfile:" + job_id + ":" + name;
}

Status RedisJobStore::PutFile(const std::string& job_id, const std::string& name,
                              const std::string& bytes) {
  auto reply = redis_->Command(
      {"SET", FileKey(job_id, name), bytes, "PX", std::to_string(options_.retention_ms)});
  if (!reply.ok()) return StoreError("file", reply.status());
  if (reply->IsError()) return StoreError("file", Internal(reply->str));
  return Status::Ok();
}

StatusOr<std::string> RedisJobStore::GetFile(const std::string& job_id, const std::string& name) {
  auto reply = redis_->Command({"GET", FileKey(job_id, name)});
  if (!reply.ok()) return StoreError("file", reply.status());
  if (reply->type != RedisReply::Type::kString) return NotFound("no job file " + name);
  return reply->str;
}

Status RedisJobStore::DeleteFile(const std::string& job_id, const std::string& name) {
  auto reply = redis_->Command({"DEL", FileKey(job_id, name)});
  if (!reply.ok()) return StoreError("file", reply.status());
  return Status::Ok();
}

}  // namespace dnaserve::core
