#include "core/jobs/job_queue.h"

#include <algorithm>
#include <cstdlib>

#include "common/log.h"

namespace dnaserve::core {
namespace {

constexpr const char* kGroup = "runners";
constexpr const char* kFactPrefix = "fact.";

// Wake-up signals the wake stream keeps: a waiting runner needs only the newest.
constexpr const char* kWakeSignalsKept = "64";

// KEYS: stream, clients set, wake stream. ARGV: max entries (0 = unbounded), client id ('' for
// the admission stream, which runners block on directly), wake signals kept, then the entry's
// field/value pairs. The group is made with the stream; BUSYGROUP (it exists) is expected. A
// job for a client stream wakes the idle runners.
const RedisScript& AddScript() {
  static const RedisScript script(R"lua(
local n = redis.call('XLEN', KEYS[1])
local max = tonumber(ARGV[1])
if max > 0 and n >= max then return {'full', n} end
redis.pcall('XGROUP', 'CREATE', KEYS[1], 'runners', '0', 'MKSTREAM')
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 4))
if ARGV[2] ~= '' then
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[3], '*', 'client', ARGV[2])
end
return {'ok', id}
)lua");
  return script;
}

// KEYS: stream, clients set. ARGV: entry id, client id ('' for the admission stream).
const RedisScript& AckScript() {
  static const RedisScript script(R"lua(
redis.call('XACK', KEYS[1], 'runners', ARGV[1])
redis.call('XDEL', KEYS[1], ARGV[1])
if ARGV[2] ~= '' and redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 'ok'
)lua");
  return script;
}

std::vector<std::string> EntryFields(const QueuedJob& j) {
  std::vector<std::string> f = {"version",     std::to_string(EntryFormatVersion(j)),
                                "job_id",      j.job_id,
                                "request_id",  j.request_id,
                                "client_id",   j.client_id,
                                "rate",        std::to_string(j.rate_per_minute),
                                "concurrency", std::to_string(j.max_concurrency),
                                "kind",        j.kind,
                                "mode",        j.mode,
                                "deadline_ms", std::to_string(j.deadline_ms),
                                "command",     j.command};
  for (const auto& [name, value] : j.facts) {
    f.push_back(kFactPrefix + name);
    f.push_back(value);
  }
  return f;
}

int64_t ToInt(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// The "version" field: 1 when absent (entries of the release before versions), 0 when it is
// not a positive decimal integer (nobody can read such an entry; it is left, not guessed at).
int64_t EntryVersion(const std::vector<RedisReply>& fields) {
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields[i].str != "version") continue;
    const std::string& v = fields[i + 1].str;
    if (v.empty() || v.size() > 18 || v[0] == '0' ||
        v.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    return ToInt(v);
  }
  return 1;
}

QueuedJob JobFromFields(const std::vector<RedisReply>& fields) {
  QueuedJob j;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& name = fields[i].str;
    const std::string& value = fields[i + 1].str;
    if (name == "job_id") j.job_id = value;
    else if (name == "request_id") j.request_id = value;
    else if (name == "client_id") j.client_id = value;
    else if (name == "rate") j.rate_per_minute = ToInt(value);
    else if (name == "concurrency") j.max_concurrency = ToInt(value);
    else if (name == "kind") j.kind = value;
    else if (name == "mode") j.mode = value;
    else if (name == "deadline_ms") j.deadline_ms = ToInt(value);
    else if (name == "command") j.command = value;
    else if (name == "task") j.legacy_request.task = value;
    else if (name == "format") j.legacy_request.format = value;
    else if (name == "accept") j.legacy_request.accept = value;
    else if (name == "body") j.legacy_request.body = value;
    else if (name.rfind(kFactPrefix, 0) == 0) j.facts[name.substr(5)] = value;
  }
  return j;
}

// [id, [field, value, ...]] as XREADGROUP and XAUTOCLAIM return each entry. A nil field list
// is an entry deleted while pending (acknowledged elsewhere): nothing to run.
std::optional<Delivery> DeliveryFrom(const std::string& stream, const RedisReply& entry) {
  if (entry.type != RedisReply::Type::kArray || entry.elements.size() != 2) return std::nullopt;
  if (entry.elements[1].type != RedisReply::Type::kArray) return std::nullopt;
  Delivery d;
  d.stream = stream;
  d.entry_id = entry.elements[0].str;
  d.version = EntryVersion(entry.elements[1].elements);
  if (d.Readable()) d.job = JobFromFields(entry.elements[1].elements);
  return d;
}

Status QueueError(const char* op, const Status& status) {
  log::Warn("job_queue_error", {{"op", op}, {"error", status.message()}});
  return Unavailable("the job queue is unavailable; retry shortly")
      .set_retry_after_seconds(kRedisRetryAfterSeconds);
}

}  // namespace

int64_t EntryFormatVersion(const QueuedJob& job) {
  // Version 2 readers run every kind but variant scoring and intervals; writing their entries
  // newer would leave them unrun while old runners are still the only ones reading. Intervals
  // need version 4; a command that needs more than its kind (version 4: a variant score naming
  // another scorer than splice) says so itself.
  int64_t by_kind = 2;
  if (job.kind == kVariantScoreKind) by_kind = 3;
  if (job.kind == kIntervalKind) by_kind = 4;
  if (job.kind == kIsmKind) by_kind = 5;
  return std::max(by_kind, job.command_version);
}

std::string QueuedJob::Fact(const std::string& name) const {
  auto it = facts.find(name);
  return it == facts.end() ? std::string() : it->second;
}

RedisJobQueue::RedisJobQueue(std::shared_ptr<RedisConnection> redis, JobQueueOptions options)
    : redis_(std::move(redis)), options_(std::move(options)) {}

std::string RedisJobQueue::ClientStream(const std::string& client_id) const {
  return options_.key_prefix + "queue:client:" + client_id;
}
std::string RedisJobQueue::AdmissionStream() const { return options_.key_prefix + "queue:admit"; }
std::string RedisJobQueue::ClientsKey() const { return options_.key_prefix + "queue:clients"; }
std::string RedisJobQueue::WakeStream() const { return options_.key_prefix + "queue:wake"; }

Status RedisJobQueue::Add(const std::string& stream, const QueuedJob& job, bool bounded) {
  std::vector<std::string> args = {
      bounded ? std::to_string(options_.max_jobs_per_client) : std::string("0"),
      bounded ? job.client_id : std::string(), kWakeSignalsKept};
  std::vector<std::string> fields = EntryFields(job);
  args.insert(args.end(), fields.begin(), fields.end());
  // A job (bounded) is accepted once queued: it must survive the loss of the primary, so its
  // write waits for the replicas (RedisOptions::wait_replicas). An admission is only a question
  // to a runner; one lost with the primary ends as the gateway's 503 after its wait.
  const std::vector<std::string> keys = {stream, ClientsKey(), WakeStream()};
  StatusOr<ReplicatedReply> written = Status(ErrorCode::kInternal, "unreachable");
  if (bounded) {
    written = redis_->EvalReplicated(AddScript(), keys, args);
  } else if (auto plain = redis_->Eval(AddScript(), keys, args); plain.ok()) {
    written = ReplicatedReply{std::move(plain).value(), 0, true};
  } else {
    written = plain.status();
  }
  if (!written.ok()) return QueueError("enqueue", written.status());
  const RedisReply& reply = written->reply;
  const auto& e = reply.elements;
  if (reply.type != RedisReply::Type::kArray || e.size() < 2) {
    return QueueError("enqueue", Internal("unexpected reply shape"));
  }
  if (e[0].str == "full") {
    return Status(ErrorCode::kTooManyRequests,
                  "this key already has " + std::to_string(options_.max_jobs_per_client) +
                      " jobs queued or running; wait for some to finish")
        .set_retry_after_seconds(5);
  }
  if (!written->confirmed) return Withdraw(stream, e[1].str, job, written->replicas);
  return Status::Ok();
}

Status RedisJobQueue::Withdraw(const std::string& stream, const std::string& entry_id,
                               const QueuedJob& job, int64_t replicas) {
  // Refused, so not left half-accepted: the entry leaves the queue (as an acknowledged one
  // does), and a runner that took it meanwhile finds the job cancelled before it starts it. The
  // caller fails the job's record with the same status, and a failed record is never rewritten
  // (a runner already running the job cannot turn it into a result). When the primary is lost
  // before these writes replicate, the entry is lost with it anyway.
  log::Warn("job_queue_unreplicated", {{"job_id", job.job_id},
                                       {"replicas", std::to_string(replicas)},
                                       {"needed", std::to_string(redis_->wait_replicas())}});
  auto removed = redis_->Eval(AckScript(), {stream, ClientsKey()}, {entry_id, job.client_id});
  if (!removed.ok()) log::Warn("job_queue_withdraw_failed", {{"job_id", job.job_id}});
  (void)RequestCancel(job.job_id);
  return Unavailable("the job could not be confirmed by " +
                     std::to_string(redis_->wait_replicas()) +
                     " Redis replica(s) in time and was not accepted; retry shortly")
      .set_retry_after_seconds(kRedisRetryAfterSeconds);
}

Status RedisJobQueue::Enqueue(const QueuedJob& job) {
  return Add(ClientStream(job.client_id), job, /*bounded=*/true);
}

Status RedisJobQueue::EnqueueAdmission(const QueuedJob& job) {
  return Add(AdmissionStream(), job, /*bounded=*/false);
}

StatusOr<std::optional<std::string>> RedisJobQueue::Verdict(const std::string& job_id) {
  auto reply = redis_->Command({"GET", options_.key_prefix + "admission:" + job_id});
  if (!reply.ok()) return QueueError("verdict", reply.status());
  if (reply->IsNil()) return std::optional<std::string>();
  return std::optional<std::string>(reply->str);
}

Status RedisJobQueue::WriteVerdict(const std::string& job_id, const std::string& verdict) {
  auto reply = redis_->Command({"SET", options_.key_prefix + "admission:" + job_id, verdict, "PX",
                                std::to_string(options_.verdict_ttl_ms)});
  if (!reply.ok()) return QueueError("verdict", reply.status());
  return Status::Ok();
}

Status RedisJobQueue::RequestCancel(const std::string& job_id) {
  auto reply = redis_->Command({"SET", options_.key_prefix + "jobcancel:" + job_id, "1", "PX",
                                std::to_string(options_.cancel_ttl_ms)});
  if (!reply.ok()) return QueueError("cancel", reply.status());
  return Status::Ok();
}

StatusOr<bool> RedisJobQueue::CancelRequested(const std::string& job_id) {
  auto reply = redis_->Command({"EXISTS", options_.key_prefix + "jobcancel:" + job_id});
  if (!reply.ok()) return QueueError("cancel", reply.status());
  return reply->integer == 1;
}

StatusOr<std::vector<std::string>> RedisJobQueue::ActiveClients() {
  auto reply = redis_->Command({"SMEMBERS", ClientsKey()});
  if (!reply.ok()) return QueueError("clients", reply.status());
  std::vector<std::string> clients;
  for (const auto& e : reply->elements) clients.push_back(e.str);
  return clients;
}

StatusOr<std::optional<Delivery>> RedisJobQueue::ReadFrom(const std::string& stream,
                                                          const std::string& consumer,
                                                          BlockingRedisConnection* wait,
                                                          std::chrono::milliseconds block) {
  std::vector<std::string> command = {"XREADGROUP", "GROUP", kGroup, consumer, "COUNT", "1"};
  if (wait != nullptr) {
    // BLOCK 0 would wait for ever.
    command.insert(command.end(), {"BLOCK", std::to_string(std::max<int64_t>(1, block.count()))});
  }
  command.insert(command.end(), {"STREAMS", stream, ">"});
  auto reply =
      wait != nullptr ? wait->Command(command, block + kWaitMargin) : redis_->Command(command);
  if (!reply.ok()) {
    if (reply.status().code() == ErrorCode::kCancelled) return reply.status();
    return QueueError("read", reply.status());
  }
  if (reply->IsError()) {
    // NOGROUP: the stream has never had an entry (or Redis lost it). A blocking read would
    // answer so again at once, so it makes the group to block on.
    if (reply->str.rfind("NOGROUP", 0) == 0) {
      if (wait == nullptr) return std::optional<Delivery>();
      auto made = redis_->Command({"XGROUP", "CREATE", stream, kGroup, "0", "MKSTREAM"});
      if (!made.ok()) return QueueError("read", made.status());
      if (made->IsError() && made->str.rfind("BUSYGROUP", 0) != 0) {
        return QueueError("read", Unavailable(made->str));
      }
      return std::optional<Delivery>();
    }
    return QueueError("read", Unavailable(reply->str));
  }
  // [[stream, [[id, fields]]]]
  if (reply->type != RedisReply::Type::kArray || reply->elements.empty()) {
    return std::optional<Delivery>();
  }
  const RedisReply& per_stream = reply->elements[0];
  if (per_stream.elements.size() != 2 || per_stream.elements[1].elements.empty()) {
    return std::optional<Delivery>();
  }
  return DeliveryFrom(stream, per_stream.elements[1].elements[0]);
}

StatusOr<std::optional<Delivery>> RedisJobQueue::ClaimFrom(const std::string& stream,
                                                           const std::string& consumer,
                                                           int64_t min_idle_ms,
                                                           std::string* cursor) {
  const std::string start = cursor != nullptr && !cursor->empty() ? *cursor : "0-0";
  if (cursor != nullptr) *cursor = "0-0";  // unless the reply says where to go on
  auto reply = redis_->Command({"XAUTOCLAIM", stream, kGroup, consumer,
                                std::to_string(min_idle_ms), start, "COUNT", "1"});
  if (!reply.ok()) return QueueError("claim", reply.status());
  if (reply->IsError()) {
    if (reply->str.rfind("NOGROUP", 0) == 0) return std::optional<Delivery>();
    return QueueError("claim", Unavailable(reply->str));
  }
  // [next cursor, [[id, fields]], [deleted ids]]
  if (cursor != nullptr && reply->type == RedisReply::Type::kArray && !reply->elements.empty()) {
    *cursor = reply->elements[0].str;
  }
  if (reply->type != RedisReply::Type::kArray || reply->elements.size() < 2 ||
      reply->elements[1].elements.empty()) {
    return std::optional<Delivery>();
  }
  auto delivery = DeliveryFrom(stream, reply->elements[1].elements[0]);
  if (!delivery) return delivery;
  auto pending = redis_->Command(
      {"XPENDING", stream, kGroup, delivery->entry_id, delivery->entry_id, "1"});
  if (pending.ok() && pending->type == RedisReply::Type::kArray && !pending->elements.empty() &&
      pending->elements[0].elements.size() == 4) {
    delivery->attempts = pending->elements[0].elements[3].integer;
  }
  return delivery;
}

StatusOr<std::optional<Delivery>> RedisJobQueue::ReadNew(const std::string& client_id,
                                                         const std::string& consumer) {
  return ReadFrom(ClientStream(client_id), consumer);
}

StatusOr<std::optional<Delivery>> RedisJobQueue::ClaimStale(const std::string& client_id,
                                                            const std::string& consumer,
                                                            int64_t min_idle_ms,
                                                            std::string* cursor) {
  const std::string stream = client_id.empty() ? AdmissionStream() : ClientStream(client_id);
  return ClaimFrom(stream, consumer, min_idle_ms, cursor);
}

Status RedisJobQueue::Touch(const std::string& consumer, const std::vector<const Delivery*>& held) {
  if (held.empty()) return Status::Ok();
  std::vector<std::vector<std::string>> commands;
  for (const Delivery* d : held) {
    commands.push_back({"XCLAIM", d->stream, kGroup, consumer, "0", d->entry_id, "JUSTID"});
  }
  auto replies = redis_->Pipeline(commands);
  if (!replies.ok()) return QueueError("touch", replies.status());
  return Status::Ok();
}

Status RedisJobQueue::Release(const std::string& consumer, const Delivery& delivery,
                              int64_t idle_ms) {
  auto replies = redis_->Pipeline(
      {{"XCLAIM", delivery.stream, kGroup, consumer, "0", delivery.entry_id, "IDLE",
        std::to_string(idle_ms), "JUSTID"},
       {"XADD", WakeStream(), "MAXLEN", kWakeSignalsKept, "*", "reclaim", "1"}});
  if (!replies.ok()) return QueueError("release", replies.status());
  return Status::Ok();
}

Status RedisJobQueue::Leave(const std::string& consumer, const Delivery& delivery,
                            int64_t idle_ms) {
  // RETRYCOUNT puts the delivery count back to what it was before this reader took the entry
  // (JUSTID alone would leave it counted): a reader that knows the format must not see its job
  // as run and given up by runners that died.
  auto reply = redis_->Command(
      {"XCLAIM", delivery.stream, kGroup, consumer, "0", delivery.entry_id, "IDLE",
       std::to_string(idle_ms), "RETRYCOUNT",
       std::to_string(std::max<int64_t>(0, delivery.attempts - 1)), "JUSTID"});
  if (!reply.ok()) return QueueError("leave", reply.status());
  if (reply->IsError()) return QueueError("leave", Unavailable(reply->str));
  return Status::Ok();
}

Status RedisJobQueue::Ack(const Delivery& delivery) {
  const bool admission = delivery.stream == AdmissionStream();
  auto reply = redis_->Eval(AckScript(), {delivery.stream, ClientsKey()},
                            {delivery.entry_id, admission ? std::string() : delivery.job.client_id});
  if (!reply.ok()) return QueueError("ack", reply.status());
  return Status::Ok();
}

StatusOr<int64_t> RedisJobQueue::Depth() {
  auto clients = ActiveClients();
  if (!clients.ok()) return clients.status();
  if (clients->empty()) return int64_t{0};
  std::vector<std::vector<std::string>> commands;
  for (const auto& c : *clients) commands.push_back({"XLEN", ClientStream(c)});
  auto replies = redis_->Pipeline(commands);
  if (!replies.ok()) return QueueError("depth", replies.status());
  int64_t depth = 0;
  for (const auto& r : *replies) depth += r.integer;
  return depth;
}

}  // namespace dnaserve::core
