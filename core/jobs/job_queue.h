// The durable queue between gateways (which accept jobs) and runners (which execute them), in
// Redis Streams with a consumer group. Why streams: an entry read by a runner stays in the
// group's pending list until that runner acknowledges it, so a runner that dies mid-job leaves
// its entries behind for another runner to claim (XAUTOCLAIM) once they have been idle longer
// than the heartbeat timeout; a live runner keeps its entries fresh (XCLAIM ... JUSTID). The
// delivery count the stream keeps is the job's attempt count. Idle runners wait without
// polling: blocked on the admission stream, and on a wake-up stream every enqueue writes to
// (the client streams are a changing set, one blocking read cannot cover them). Every entry
// carries its format version. See runner/README.md.
//
// Keys (prefix "dnaserve:"):
//   queue:client:<client_id>  one stream per client, group "runners": per-client streams let a
//                             runner take clients in turn (fairness) and bound each client's
//                             queued jobs with XLEN
//   queue:clients             set of clients whose stream has entries
//   queue:admit               the variant workflow's admissions (checks that need the object
//                             store, answered while the gateway waits)
//   queue:wake                wake-up signals, one per job queued or handed back (the last 64):
//                             idle runners block on it (XREAD BLOCK) instead of polling
//   admission:<job_id>        a runner's admission verdict, read by the waiting gateway
//   jobcancel:<job_id>        set when a sync client went away: the runner cancels the job
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

// The newest format of queue entries this code reads and writes. Each entry's "version" field
// names the oldest format that can read it (EntryFormatVersion), and a reader leaves an entry
// of a version it does not know to a reader that does (RedisJobQueue::Leave), so old and new
// runners can share the queue during an upgrade: a runner of the release before keeps running
// the kinds it knows and leaves only the new ones.
//   1  (no field: the first release) the HTTP request: kind, task, format, accept, body
//   2  the admitted job as a command (dnaserve/jobs/v1/command.proto) in "command"
//   3  as 2; the command is a VariantScoreCommand (POST /v1/variants/score), which a runner
//      of version 2 must not receive
//   4  as 3 for a VariantScoreCommand that names a scorer other than splice (expression,
//      chromatin, promoter): a version-3 runner would drop those fields unread (proto3) and
//      answer without them. Splice-only scores stay version 3. Also every IntervalCommand (a
//      prediction or find-genes request naming a genome interval), which a runner of version 3
//      or older must not receive.
//   5  as 4 for a batch VariantScoreCommand (`batch`: a VCF body or more than 100 variants,
//      runner/workflows/variant_score_batch.h), which a version-4 runner would answer as a
//      plain JSON job without its annotated VCF, and for an IsmCommand (POST /v1/ism), which a
//      runner of version 4 or older must not receive.
//   6  as 5 for an IntervalCommand whose expression window reaches past its interval
//      (`tss_genome_position` near an edge: core/admission/interval_commands.h), which a
//      version-5 runner would cut from the interval's bases alone and fail.
//   7  as 6 for an IsmCommand whose scorer is expression (runner/workflows/ism_expression.h),
//      which a version-6 runner refuses as damaged.
// A runner reads all seven; a version-1 entry's request is admitted by the runner with the
// core's own code (runner/jobs/runner_jobs.cc).
inline constexpr int64_t kQueueFormatVersion = 7;

// The kind of a queued variant score (QueuedJob::kind): the one kind that needs version 3 (or
// 4, by its command: QueuedJob::command_version).
inline constexpr std::string_view kVariantScoreKind = "variant_score";
// The kind of a queued interval request (IntervalCommand): the one kind that needs version 4.
inline constexpr std::string_view kIntervalKind = "interval";
// The kind of a queued in-silico mutagenesis (IsmCommand): version 5.
inline constexpr std::string_view kIsmKind = "ism";

// What a runner needs to run a job accepted by a gateway: the admitted job as a command
// (dnaserve/jobs/v1/command.proto: validated, models resolved, format negotiated), who it runs
// for, and the facts the gateway established.
struct QueuedJob {
  std::string job_id;
  std::string request_id;
  std::string client_id;
  int64_t rate_per_minute = 0;  // the principal, for the concurrency lease the job holds
  int64_t max_concurrency = 0;
  std::string kind;  // "predict", "find_genes", "variant", "variant_score" or "interval"
  std::string mode;  // "sync" or "async"
  std::string command;  // a serialised dnaserve.jobs.v1.JobCommand
  // The entry version the command itself needs beyond its kind's (0: its kind's), set by the
  // writer that knows the command's shape (core/admission VariantScoreEntryVersion). Not read
  // back: the entry's "version" field carries it.
  int64_t command_version = 0;
  // Entries written by the release before commands carried the HTTP request instead; a runner
  // admits such an entry again from it (runner/jobs/runner_jobs.cc). Empty in new entries.
  struct Request {
    std::string task;    // predict: the {task} path segment
    std::string format;  // ?format= as sent ("" when absent)
    std::string accept;  // Accept header as sent
    std::string body;
  } legacy_request;
  // What the gateway established beside the command: the caller's object-store grants
  // (common/s3_grants.h); variant admissions record the object's "etag" here.
  std::map<std::string, std::string> facts;
  // Epoch ms after which nobody waits for the answer (sync jobs); 0 = none.
  int64_t deadline_ms = 0;

  std::string Fact(const std::string& name) const;
};

// The version an entry for `job` is written with: the oldest format whose readers know its kind.
int64_t EntryFormatVersion(const QueuedJob& job);

// One entry as a runner holds it.
struct Delivery {
  std::string stream;  // the stream key it came from
  std::string entry_id;
  int64_t attempts = 1;  // deliveries so far, this one included
  // The entry's format version: 1 without the field, 0 when it is not a positive integer.
  int64_t version = 1;
  QueuedJob job;  // read only when Readable()

  // This code knows the entry's format (1 <= version <= kQueueFormatVersion).
  bool Readable() const { return version >= 1 && version <= kQueueFormatVersion; }
};

// What a wait for work (RedisJobQueue::WaitForWork) ended with.
struct WakeUp {
  bool woken = false;    // a job was queued or handed back (else the wait timed out)
  bool reclaim = false;  // a job was handed back: look for claimable entries now
};

struct JobQueueOptions {
  std::string key_prefix = "dnaserve:";
  // Queued and running jobs one client may have; beyond it Enqueue refuses (429).
  int64_t max_jobs_per_client = 64;
  int64_t verdict_ttl_ms = 10 * 60 * 1000;
  int64_t cancel_ttl_ms = 60 * 60 * 1000;
};

class RedisJobQueue {
 public:
  explicit RedisJobQueue(std::shared_ptr<RedisConnection> redis, JobQueueOptions options = {});

  // ---- gateway side
  // Appends the job to its client's stream. too_many_requests (Retry-After set) when the client
  // already has max_jobs_per_client entries; service_unavailable (Retry-After set) when Redis is
  // unreachable, or when fewer replicas than RedisOptions::wait_replicas confirmed the entry in
  // time (the entry is then withdrawn and the job's cancellation requested: see Withdraw).
  Status Enqueue(const QueuedJob& job);
  Status EnqueueAdmission(const QueuedJob& job);
  // The verdict a runner wrote for an admission, once there is one.
  StatusOr<std::optional<std::string>> Verdict(const std::string& job_id);
  // Asks the runner running `job_id` to cancel it (its sync client left).
  Status RequestCancel(const std::string& job_id);

  // ---- runner side
  StatusOr<std::vector<std::string>> ActiveClients();
  // The next entry of `client_id` no runner has read yet, if any.
  StatusOr<std::optional<Delivery>> ReadNew(const std::string& client_id,
                                            const std::string& consumer);
  // An entry of `client_id` (or, with an empty client, of the admission stream) whose runner
  // has not refreshed it for `min_idle_ms`: the runner died. It becomes this consumer's. With
  // `cursor` ("0-0" to start) each call goes on after the entry the previous one returned, and
  // sets it back to "0-0" once through the list: an entry this reader leaves (Leave) does not
  // hide those behind it.
  StatusOr<std::optional<Delivery>> ClaimStale(const std::string& client_id,
                                               const std::string& consumer, int64_t min_idle_ms,
                                               std::string* cursor = nullptr);
  // Keeps held entries from looking abandoned.
  Status Touch(const std::string& consumer, const std::vector<const Delivery*>& held);
  // Hands an entry back at once (graceful stop): another runner may claim it immediately, and
  // idle runners are woken to do so.
  Status Release(const std::string& consumer, const Delivery& delivery, int64_t idle_ms);
  // Hands back an entry this reader cannot read (!Readable()) as if it had never taken it: the
  // delivery it made is not counted and the entry is claimable at once (idle `idle_ms`) by a
  // reader that knows its format. Not acknowledged, not failed.
  Status Leave(const std::string& consumer, const Delivery& delivery, int64_t idle_ms);
  // The job is over (its result is stored): removes the entry.
  Status Ack(const Delivery& delivery);
  Status WriteVerdict(const std::string& job_id, const std::string& verdict);
  StatusOr<bool> CancelRequested(const std::string& job_id);
  // Entries in every client stream (queued and running): the runner Deployment scales on it.
  StatusOr<int64_t> Depth();

  // ---- runner side, waiting without polling (job_queue_wait.cc)
  // A connection of its own for the waits below (one per waiting thread).
  std::unique_ptr<BlockingRedisConnection> OpenWaitConnection();
  // The newest wake-up signal ("0-0" when there is none). Taken before looking for work, it is
  // where WaitForWork starts, so a job queued while this runner looked is not missed.
  StatusOr<std::string> WakeCursor();
  // Blocks on `wait` until a wake-up signal newer than *cursor arrives (*cursor then moves past
  // it) or `block` passes. cancelled when the wait was interrupted.
  StatusOr<WakeUp> WaitForWork(BlockingRedisConnection& wait, std::string* cursor,
                               std::chrono::milliseconds block);
  // The next admission no runner has read yet, blocking on `wait` up to `block` for one.
  StatusOr<std::optional<Delivery>> WaitForAdmission(BlockingRedisConnection& wait,
                                                     const std::string& consumer,
                                                     std::chrono::milliseconds block);

  std::string ClientStream(const std::string& client_id) const;
  std::string AdmissionStream() const;
  std::string WakeStream() const;

 private:
  Status Add(const std::string& stream, const QueuedJob& job, bool bounded);
  // Takes back an entry whose write too few replicas confirmed; the refusal to give the client.
  Status Withdraw(const std::string& stream, const std::string& entry_id, const QueuedJob& job,
                  int64_t replicas);
  // With `wait`, blocks on it up to `block` for a new entry.
  StatusOr<std::optional<Delivery>> ReadFrom(const std::string& stream,
                                             const std::string& consumer,
                                             BlockingRedisConnection* wait = nullptr,
                                             std::chrono::milliseconds block = {});
  StatusOr<std::optional<Delivery>> ClaimFrom(const std::string& stream,
                                              const std::string& consumer, int64_t min_idle_ms,
                                              std::string* cursor);
  std::string ClientsKey() const;

  // How much longer than its BLOCK timeout a blocking read may take before its connection is
  // taken for dead (a Redis that stopped answering without closing the connection).
  static constexpr std::chrono::milliseconds kWaitMargin{2000};

  std::shared_ptr<RedisConnection> redis_;
  JobQueueOptions options_;
};

}  // namespace dnaserve::core
