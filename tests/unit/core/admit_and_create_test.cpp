// AdmitAndCreate: a job run where it was admitted gets the caller's quota and its record in one
// step, both or neither. The same behaviour from the two stores one after the other (in memory)
// and from the one Redis script, plus what only the script brings: one command, and nothing
// taken for a job id already in use.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/jobs/admit_and_create.h"
#include "core/jobs/redis_admit_and_create.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/clock.h"
#include "core/quota/redis_quota_store.h"
#include "tests/support/in_memory_job_store.h"
#include "tests/support/in_memory_quota_store.h"
#include "tests/support/redis_monitor.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

Principal Client(const std::string& id, int64_t rate, int64_t concurrency) {
  static std::atomic<int> counter{0};
  Principal p;
  p.client_id = id + "-" + std::to_string(counter++);
  p.rate_per_minute = rate;
  p.max_concurrency = concurrency;
  return p;
}

JobRecord SyncRecord(const Principal& principal, const std::string& job_id) {
  JobRecord record;
  record.job_id = job_id;
  record.request_id = "req-" + job_id;
  record.owner = principal.client_id;
  record.task = "promoter";
  record.mode = "sync";
  record.state = JobState::kRunning;
  return record;
}

// Both stores and the step over them, in memory or in one redis-server of the test's own.
struct Stores {
  ManualClock clock;
  std::optional<testing::RedisServer> redis;
  std::unique_ptr<QuotaStore> quotas;
  std::unique_ptr<JobStore> jobs;
  std::unique_ptr<AdmitAndCreate> both;

  explicit Stores(const std::string& kind) {
    if (kind == "memory") {
      quotas = std::make_unique<InMemoryQuotaStore>(&clock);
      jobs = std::make_unique<InMemoryJobStore>(&clock);
      both = std::make_unique<SequentialAdmitAndCreate>(quotas.get(), jobs.get());
      return;
    }
    redis = testing::RedisServer::Start();
    REQUIRE(redis.has_value());
    auto connection = testing::ConnectRedis(redis->url());
    auto redis_quotas = std::make_unique<RedisQuotaStore>(connection, &clock);
    auto redis_jobs = std::make_unique<RedisJobStore>(connection, &clock);
    both = std::make_unique<RedisAdmitAndCreate>(connection, redis_quotas.get(), redis_jobs.get());
    quotas = std::move(redis_quotas);
    jobs = std::move(redis_jobs);
  }

  bool Exists(const Principal& p, const std::string& job_id) {
    return jobs->Get(job_id, p.client_id).ok();
  }
};

TEST_CASE("admit and create: admitted, the lease and token are taken and the record exists",
          "[quota][jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  Stores s(kind);
  Principal p = Client("both", 60, 1);  // 10 tokens, one seat
  QuotaDecision admitted = s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "job-1"));
  REQUIRE(admitted.status.ok());
  CHECK(admitted.info.limit == 10);
  CHECK(admitted.info.remaining == 9);
  auto record = s.jobs->Get("job-1", p.client_id);
  REQUIRE(record.ok());
  CHECK(record->state == JobState::kRunning);
  CHECK(record->mode == "sync");
  CHECK(record->request_id == "req-job-1");
  // The seat is held under the job's id: released, the next call is admitted.
  QuotaDecision seat_taken = s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "job-2"));
  CHECK(seat_taken.status.code() == ErrorCode::kTooManyRequests);
  CHECK(seat_taken.cause == RateLimitCause::kKeyConcurrency);
  s.quotas->Release(p, "job-1");
  CHECK(s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "job-3")).status.ok());
}

TEST_CASE("admit and create: a refusal creates no record", "[quota][jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  Stores s(kind);
  Principal p = Client("refused", 6, 1);  // one token, one seat
  REQUIRE(s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "first")).status.ok());
  // The seat is taken: refused for concurrency, no token taken, no record.
  QuotaDecision busy = s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "second"));
  CHECK(busy.status.code() == ErrorCode::kTooManyRequests);
  CHECK(busy.cause == RateLimitCause::kKeyConcurrency);
  CHECK_FALSE(s.Exists(p, "second"));
  // The seat free but the bucket empty: refused for the rate, no record.
  s.quotas->Release(p, "first");
  QuotaDecision empty = s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "third"));
  CHECK(empty.status.code() == ErrorCode::kTooManyRequests);
  CHECK(empty.cause == RateLimitCause::kKeyRate);
  CHECK_FALSE(s.Exists(p, "third"));
  CHECK(s.Exists(p, "first"));
}

TEST_CASE("admit and create: a job id in use is a conflict and holds no seat", "[quota][jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  Stores s(kind);
  Principal p = Client("conflict", 60, 1);
  Principal other = Client("conflict-other", 60, 1);
  REQUIRE(s.both->Run(other, kLeaseTtlMs, SyncRecord(other, "taken")).status.ok());
  QuotaDecision conflict = s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "taken"));
  CHECK(conflict.status.code() == ErrorCode::kConflict);
  // Its one seat is free, and the record is still the other client's.
  CHECK(s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "fresh")).status.ok());
  CHECK_FALSE(s.Exists(p, "taken"));
  CHECK(s.Exists(other, "taken"));
  if (kind == "redis") {
    // One script checks the id first: not even a token was spent on the conflict.
    CHECK(s.quotas->Peek(p).remaining == 9);
  }
}

TEST_CASE("admit and create in Redis is one command", "[quota][jobs][redis]") {
  Stores s("redis");
  Principal p = Client("one-command", 60, 4);
  // Warm: the scripts are loaded (a first EVALSHA is answered NOSCRIPT and sent again as
  // EVAL), this one's and the control's below.
  REQUIRE(s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "warm")).status.ok());
  REQUIRE(s.Exists(p, "warm"));
  testing::RedisMonitor monitor;
  REQUIRE(monitor.Start(s.redis->port()));
  REQUIRE(s.both->Run(p, kLeaseTtlMs, SyncRecord(p, "counted")).status.ok());
  REQUIRE(s.Exists(p, "counted"));  // the control: this HGETALL-running script is seen too
  auto sent_by_clients = [&] {  // a script's own commands say "lua" instead of a client
    std::vector<std::string> sent;
    for (const std::string& line : monitor.Lines()) {
      if (line.find(" lua]") == std::string::npos) sent.push_back(line);
    }
    return sent;
  };
  for (int i = 0; i < 200 && sent_by_clients().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<std::string> sent = sent_by_clients();
  monitor.Stop();
  for (const auto& line : sent) UNSCOPED_INFO(line.substr(0, 160));
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].find("\"EVALSHA\"") != std::string::npos);
  // The admission and the record in that one command: its keys are the quota's and the job's.
  CHECK(sent[0].find("{" + p.client_id + "}:leases") != std::string::npos);
  CHECK(sent[0].find("dnaserve:job:counted") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::core
