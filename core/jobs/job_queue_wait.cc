// RedisJobQueue's blocking reads: how an idle runner waits for work without polling Redis.
//
// Admissions arrive on one stream, so a runner blocks on it directly (XREADGROUP ... BLOCK).
// Jobs arrive on one stream per client, a set that changes as clients come and go, which no
// single blocking read can cover; so every enqueue also appends a signal to the wake stream
// (job_queue.cc, AddScript) and idle runners block on that (XREAD ... BLOCK, no group: every
// idle runner sees every signal, then looks through the clients in turn as before). A runner
// takes the wake stream's newest id before it looks for work and waits from there, so a job
// queued while it looked wakes it at once instead of being missed.
#include <algorithm>

#include "common/log.h"
#include "core/jobs/job_queue.h"

namespace dnaserve::core {
namespace {

Status WaitError(const char* op, const Status& status) {
  if (status.code() == ErrorCode::kCancelled) return status;
  log::Warn("job_queue_error", {{"op", op}, {"error", status.message()}});
  return Unavailable("the job queue is unavailable; retry shortly")
      .set_retry_after_seconds(kRedisRetryAfterSeconds);
}

}  // namespace

std::unique_ptr<BlockingRedisConnection> RedisJobQueue::OpenWaitConnection() {
  return std::make_unique<BlockingRedisConnection>(redis_);
}

StatusOr<std::string> RedisJobQueue::WakeCursor() {
  auto reply = redis_->Command({"XREVRANGE", WakeStream(), "+", "-", "COUNT", "1"});
  if (!reply.ok()) return WaitError("wake_cursor", reply.status());
  if (reply->IsError()) return WaitError("wake_cursor", Unavailable(reply->str));
  // [[id, [field, value, ...]]], or [] when the stream does not exist (yet, or any more).
  if (reply->type != RedisReply::Type::kArray || reply->elements.empty() ||
      reply->elements[0].elements.empty()) {
    return std::string("0-0");
  }
  return reply->elements[0].elements[0].str;
}

StatusOr<WakeUp> RedisJobQueue::WaitForWork(BlockingRedisConnection& wait, std::string* cursor,
                                            std::chrono::milliseconds block) {
  const int64_t block_ms = std::max<int64_t>(1, block.count());  // BLOCK 0 waits for ever
  auto reply = wait.Command({"XREAD", "BLOCK", std::to_string(block_ms), "STREAMS", WakeStream(),
                             cursor->empty() ? std::string("0-0") : *cursor},
                            std::chrono::milliseconds(block_ms) + kWaitMargin);
  if (!reply.ok()) return WaitError("wait", reply.status());
  if (reply->IsError()) return WaitError("wait", Unavailable(reply->str));
  WakeUp wake;
  // nil when the wait timed out; else [[stream, [[id, [field, value, ...]], ...]]].
  if (reply->type != RedisReply::Type::kArray || reply->elements.empty() ||
      reply->elements[0].elements.size() != 2) {
    return wake;
  }
  for (const RedisReply& entry : reply->elements[0].elements[1].elements) {
    if (entry.elements.size() != 2) continue;
    wake.woken = true;
    *cursor = entry.elements[0].str;
    const auto& fields = entry.elements[1].elements;
    for (size_t i = 0; i + 1 < fields.size(); i += 2) {
      if (fields[i].str == "reclaim") wake.reclaim = true;
    }
  }
  return wake;
}

StatusOr<std::optional<Delivery>> RedisJobQueue::WaitForAdmission(BlockingRedisConnection& wait,
                                                                  const std::string& consumer,
                                                                  std::chrono::milliseconds block) {
  return ReadFrom(AdmissionStream(), consumer, &wait, block);
}

}  // namespace dnaserve::core
