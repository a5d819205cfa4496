// The durable queue between gateways (which accept jobs) and runners (which execute them), in
// Redis Streams with a consumer group. Why streams: an entry read by a runner stays in the
// group's pending list until that runner acknowledges it, so a runner that dies mid-job leaves
// its entries behind for another runner to claim (XAUTOCLAIM) once they have been idle longer
// than the heartbeat timeout; a live runner keeps its entries fresh (XCLAIM ... JUSTID). The
// delivery count the stream keeps is the job's attempt count. See runner/README.md.
//
// Keys (prefix "dnaserve:"):
//   queue:client:<client_id>  one stream per client, group "runners": per-client streams let a
//                             runner take clients in turn (fairness) and bound each client's
//                             queued jobs with XLEN
//   queue:clients             set of clients whose stream has entries
//   queue:admit               the variant workflow's admissions (checks that need the object
//                             store, answered while the gateway waits)
//   admission:<job_id>        a runner's admission verdict, read by the waiting gateway
//   jobcancel:<job_id>        set when a sync client went away: the runner cancels the job
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

// What a runner needs to run a job accepted by a gateway: the admitted job as a command
// (dnaserve/jobs/v1/command.proto: validated, models resolved, format negotiated), who it runs
// for, and the facts the gateway established.
struct QueuedJob {
  std::string job_id;
  std::string request_id;
  std::string client_id;
  int64_t rate_per_minute = 0;  // the principal, for the concurrency lease the job holds
  int64_t max_concurrency = 0;
  std::string kind;  // "predict", "find_genes" or "variant"
  std::string mode;  // "sync" or "async"
  std::string command;  // a serialised dnaserve.jobs.v1.JobCommand
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

// One entry as a runner holds it.
struct Delivery {
  std::string stream;  // the stream key it came from
  std::string entry_id;
  int64_t attempts = 1;  // deliveries so far, this one included
  QueuedJob job;
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
  // already has max_jobs_per_client entries; service_unavailable when Redis is unreachable.
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
  // has not refreshed it for `min_idle_ms`: the runner died. It becomes this consumer's.
  StatusOr<std::optional<Delivery>> ClaimStale(const std::string& client_id,
                                               const std::string& consumer, int64_t min_idle_ms);
  StatusOr<std::optional<Delivery>> ReadNewAdmission(const std::string& consumer);
  // Keeps held entries from looking abandoned.
  Status Touch(const std::string& consumer, const std::vector<const Delivery*>& held);
  // Hands an entry back at once (graceful stop): another runner may claim it immediately.
  Status Release(const std::string& consumer, const Delivery& delivery, int64_t idle_ms);
  // The job is over (its result is stored): removes the entry.
  Status Ack(const Delivery& delivery);
  Status WriteVerdict(const std::string& job_id, const std::string& verdict);
  StatusOr<bool> CancelRequested(const std::string& job_id);
  // Entries in every client stream (queued and running): the runner Deployment scales on it.
  StatusOr<int64_t> Depth();

  std::string ClientStream(const std::string& client_id) const;
  std::string AdmissionStream() const;

 private:
  Status Add(const std::string& stream, const QueuedJob& job, bool bounded);
  StatusOr<std::optional<Delivery>> ReadFrom(const std::string& stream,
                                             const std::string& consumer);
  StatusOr<std::optional<Delivery>> ClaimFrom(const std::string& stream,
                                              const std::string& consumer, int64_t min_idle_ms);
  std::string ClientsKey() const;

  std::shared_ptr<RedisConnection> redis_;
  JobQueueOptions options_;
};

}  // namespace dnaserve::core
