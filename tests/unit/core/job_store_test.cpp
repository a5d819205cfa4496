// Job state: the in-process store and the Redis store (a real redis-server) answer alike:
// create/progress/finish/get round trips, owner scoping with 404, expiry with 410 for the owner
// only, newest-first listing, lost jobs turning into 503, and recovery after a Redis restart.
#include <rapidjson/document.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "tests/support/in_memory_job_store.h"
#include "core/jobs/redis_job_store.h"
#include "core/quota/clock.h"
#include "core/redis/redis_connection.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

using testing::SharedRedis;
std::shared_ptr<core::RedisConnection> Connect(const std::string& url) { return testing::ConnectRedis(url); }

// A client id unique to this run, so tests sharing the Redis server never share an index.
std::string Owner(const std::string& name) {
  static std::atomic<int> counter{0};
  return name + "-" + NewUuidV4().substr(0, 8) + "-" + std::to_string(counter++);
}

struct Stores {
  std::unique_ptr<core::JobStore> store;
  core::RedisJobStore* redis = nullptr;  // set when `store` is the Redis one
};

Stores MakeStore(const std::string& kind, const core::Clock* clock, int64_t retention_ms = 0) {
  Stores s;
  if (kind == "memory") {
    core::InMemoryJobStoreOptions options;
    if (retention_ms > 0) options.retention_ms = retention_ms;
    s.store = std::make_unique<core::InMemoryJobStore>(clock, options);
  } else {
    core::RedisJobStoreOptions options;
    if (retention_ms > 0) options.retention_ms = retention_ms;
    auto redis = std::make_unique<core::RedisJobStore>(Connect(SharedRedis().url()), clock, options);
    s.redis = redis.get();
    s.store = std::move(redis);
  }
  return s;
}

core::JobRecord NewJob(const std::string& owner, int64_t created_at_ms = 0) {
  core::JobRecord r;
  r.job_id = NewUuidV4();
  r.request_id = NewUuidV4();
  r.owner = owner;
  r.task = "promoter";
  r.mode = "async";
  r.created_at_ms = created_at_ms;
  return r;
}

TEST_CASE("JobStateName names every state", "[jobs]") {
  CHECK(core::JobStateName(core::JobState::kAccepted) == "accepted");
  CHECK(core::JobStateName(core::JobState::kRunning) == "running");
  CHECK(core::JobStateName(core::JobState::kCompleted) == "completed");
  CHECK(core::JobStateName(core::JobState::kFailed) == "failed");
}

TEST_CASE("create, progress, finish and get round-trip every field", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner, clock.NowMs());
  job.task = "splice";
  REQUIRE(s.store->Create(job).ok());

  auto accepted = s.store->Get(job.job_id, owner);
  REQUIRE(accepted.ok());
  CHECK(accepted->job_id == job.job_id);
  CHECK(accepted->request_id == job.request_id);
  CHECK(accepted->owner == owner);
  CHECK(accepted->task == "splice");
  CHECK(accepted->mode == "async");
  CHECK(accepted->state == core::JobState::kAccepted);
  CHECK(accepted->created_at_ms == clock.NowMs());
  CHECK(accepted->updated_at_ms == clock.NowMs());
  CHECK(accepted->code == ErrorCode::kOk);
  CHECK(accepted->body.empty());

  clock.AdvanceMs(1'500);
  REQUIRE(s.store->UpdateProgress(job.job_id, 37.5, "window 3 of 8").ok());
  auto running = s.store->Get(job.job_id, owner);
  REQUIRE(running.ok());
  CHECK(running->state == core::JobState::kRunning);
  CHECK(running->progress_percent == Approx(37.5));
  CHECK(running->progress_message == "window 3 of 8");
  CHECK(running->updated_at_ms == clock.NowMs());
  CHECK(running->created_at_ms == clock.NowMs() - 1'500);

  // A 2 MB result, with bytes JSON and Redis must not mangle.
  std::string body(2 * 1024 * 1024, 'x');
  for (size_t i = 0; i < body.size(); i += 997) body[i] = static_cast<char>(i % 256);
  clock.AdvanceMs(500);
  REQUIRE(s.store->Finish(job.job_id, ErrorCode::kOk, "application/json", body).ok());
  auto done = s.store->Get(job.job_id, owner);
  REQUIRE(done.ok());
  CHECK(done->state == core::JobState::kCompleted);
  CHECK(done->code == ErrorCode::kOk);
  CHECK(done->content_type == "application/json");
  CHECK(done->body.size() == body.size());
  CHECK(done->body == body);
  CHECK(done->updated_at_ms == clock.NowMs());
}

TEST_CASE("a non-2xx finish is a failed job carrying its response", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(s.store->Create(job).ok());
  const std::string envelope =
      R"({"error":{"code":"model_loading","message":"m","request_id":"r"}})";
  REQUIRE(s.store->Finish(job.job_id, ErrorCode::kServiceUnavailable, "application/json", envelope).ok());
  auto failed = s.store->Get(job.job_id, owner);
  REQUIRE(failed.ok());
  CHECK(failed->state == core::JobState::kFailed);
  CHECK(failed->code == ErrorCode::kServiceUnavailable);
  CHECK(failed->body == envelope);

  // The first final answer stays.
  CHECK(s.store->Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").code() == ErrorCode::kConflict);
  CHECK(s.store->UpdateProgress(job.job_id, 50, "late").code() == ErrorCode::kConflict);
  CHECK(s.store->Get(job.job_id, owner)->code == ErrorCode::kServiceUnavailable);
}

TEST_CASE("jobs are owner-scoped: another client gets the same 404 as an unknown id", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(s.store->Create(job).ok());

  auto other = s.store->Get(job.job_id, Owner("intruder"));
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == ErrorCode::kNotFound);
  const std::string unknown_id = NewUuidV4();
  auto unknown = s.store->Get(unknown_id, owner);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == ErrorCode::kNotFound);
  // Same wording apart from the id the caller sent: ownership is not revealed.
  std::string a = other.status().message();
  std::string b = unknown.status().message();
  a.replace(a.find(job.job_id), job.job_id.size(), "ID");
  b.replace(b.find(unknown_id), unknown_id.size(), "ID");
  CHECK(a == b);

  CHECK(s.store->UpdateProgress(unknown_id, 1, "x").code() == ErrorCode::kNotFound);
  CHECK(s.store->Finish(unknown_id, ErrorCode::kOk, "application/json", "{}").code() == ErrorCode::kNotFound);
  // A duplicate id is refused, whoever asks.
  CHECK(s.store->Create(job).code() == ErrorCode::kConflict);
  core::JobRecord stolen = job;
  stolen.owner = Owner("intruder");
  CHECK(s.store->Create(stolen).code() == ErrorCode::kConflict);
  CHECK(s.store->Get(job.job_id, owner).ok());
}

TEST_CASE("an accepted or running job without heartbeat is reported lost with a 503", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  const bool started = GENERATE(false, true);
  INFO(kind << (started ? " running" : " accepted"));
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(s.store->Create(job).ok());
  if (started) REQUIRE(s.store->UpdateProgress(job.job_id, 10, "working").ok());

  clock.AdvanceMs(core::kJobHeartbeatTimeoutSeconds * 1000);  // exactly the timeout: still alive
  auto alive = s.store->Get(job.job_id, owner);
  REQUIRE(alive.ok());
  CHECK(alive->state == (started ? core::JobState::kRunning : core::JobState::kAccepted));

  clock.AdvanceMs(1);
  auto lost = s.store->Get(job.job_id, owner);
  REQUIRE(lost.ok());
  CHECK(lost->state == core::JobState::kFailed);
  CHECK(lost->code == ErrorCode::kServiceUnavailable);
  CHECK(lost->content_type == "application/json");
  rapidjson::Document doc;
  doc.Parse(lost->body.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["error"]["code"].GetString()) == "service_unavailable");
  // The submitting request's id, which the poll repeats in X-Request-Id.
  CHECK(std::string(doc["error"]["request_id"].GetString()) == job.request_id);
  CHECK_THAT(doc["error"]["message"].GetString(), Catch::Contains("resubmit"));

  // Lost for good: a late finish from the vanished worker does not change the answer.
  CHECK(s.store->Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").code() == ErrorCode::kConflict);
  auto again = s.store->Get(job.job_id, owner);
  REQUIRE(again.ok());
  CHECK(again->code == ErrorCode::kServiceUnavailable);
  CHECK(again->body == lost->body);

  // A record without a request id names the job instead.
  core::JobRecord bare = NewJob(owner, clock.NowMs());
  bare.request_id.clear();
  REQUIRE(s.store->Create(bare).ok());
  clock.AdvanceMs(core::kJobHeartbeatTimeoutSeconds * 1000 + 1);
  auto bare_lost = s.store->Get(bare.job_id, owner);
  REQUIRE(bare_lost.ok());
  rapidjson::Document bare_doc;
  bare_doc.Parse(bare_lost->body.c_str());
  REQUIRE_FALSE(bare_doc.HasParseError());
  CHECK(std::string(bare_doc["error"]["request_id"].GetString()) == bare.job_id);
}

TEST_CASE("progress keeps a long job alive", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(s.store->Create(job).ok());
  for (int i = 0; i < 10; ++i) {
    clock.AdvanceMs(50'000);
    REQUIRE(s.store->UpdateProgress(job.job_id, i * 10, "step").ok());
  }
  auto running = s.store->Get(job.job_id, owner);
  REQUIRE(running.ok());
  CHECK(running->state == core::JobState::kRunning);
}

TEST_CASE("List returns the owner's newest jobs first, without bodies", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  const std::string other = Owner("other");
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    core::JobRecord job = NewJob(owner, clock.NowMs());
    REQUIRE(s.store->Create(job).ok());
    ids.push_back(job.job_id);
    REQUIRE(s.store->Create(NewJob(other, clock.NowMs())).ok());
    clock.AdvanceMs(1'000);
  }
  REQUIRE(s.store->Finish(ids[5], ErrorCode::kOk, "application/json", "{\"big\": true}").ok());

  auto all = s.store->List(owner, 50);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK((*all)[i].job_id == ids[5 - i]);
    CHECK((*all)[i].owner == owner);
    CHECK((*all)[i].body.empty());
  }
  CHECK((*all)[0].state == core::JobState::kCompleted);
  CHECK((*all)[0].code == ErrorCode::kOk);
  CHECK((*all)[1].state == core::JobState::kAccepted);

  auto two = s.store->List(owner, 2);
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].job_id == ids[5]);
  CHECK((*two)[1].job_id == ids[4]);

  auto none = s.store->List(Owner("nobody"), 50);
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto zero = s.store->List(owner, 0);
  REQUIRE(zero.ok());
  CHECK(zero->empty());
}

TEST_CASE("the per-owner index keeps only the newest 500 jobs", "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("busy");
  std::string first_id;
  std::string newest_id;
  for (int i = 0; i < 503; ++i) {
    core::JobRecord job = NewJob(owner, clock.NowMs());
    if (i == 0) first_id = job.job_id;
    newest_id = job.job_id;
    REQUIRE(s.store->Create(job).ok());
    clock.AdvanceMs(1);
  }
  auto listed = s.store->List(owner, 500);
  REQUIRE(listed.ok());
  CHECK(listed->size() == 500);
  CHECK(listed->front().job_id == newest_id);
  for (const auto& job : *listed) CHECK(job.job_id != first_id);
  // Dropped from the list, but the job itself is still there for its owner.
  CHECK(s.store->Get(first_id, owner).ok());
}

TEST_CASE("job identity: a case maps to its live job unless that job failed or was lost",
          "[jobs]") {
  const std::string kind = GENERATE(as<std::string>{}, "memory", "redis");
  INFO(kind);
  core::ManualClock clock;
  Stores s = MakeStore(kind, &clock);
  const std::string owner = Owner("acme");
  const std::string identity = "case-" + NewUuidV4();

  core::JobRecord first = NewJob(owner);
  auto created = s.store->CreateOrFind(first, identity);
  REQUIRE(created.ok());
  CHECK(*created == first.job_id);
  REQUIRE(s.store->Get(first.job_id, owner).ok());

  // The same case while it runs and once it succeeded: the first job, nothing created.
  core::JobRecord second = NewJob(owner);
  auto found = s.store->CreateOrFind(second, identity);
  REQUIRE(found.ok());
  CHECK(*found == first.job_id);
  CHECK(s.store->Get(second.job_id, owner).status().code() == ErrorCode::kNotFound);
  REQUIRE(s.store->UpdateProgress(first.job_id, 50, "half").ok());
  REQUIRE(s.store->Finish(first.job_id, ErrorCode::kOk, "application/json", "{}").ok());
  auto after_success = s.store->CreateOrFind(NewJob(owner), identity);
  REQUIRE(after_success.ok());
  CHECK(*after_success == first.job_id);

  // Another client with the same identity string gets its own job: identities are per owner.
  const std::string other = Owner("other");
  core::JobRecord theirs = NewJob(other);
  auto other_created = s.store->CreateOrFind(theirs, identity);
  REQUIRE(other_created.ok());
  CHECK(*other_created == theirs.job_id);

  // A different case is a different job.
  core::JobRecord different = NewJob(owner);
  auto distinct = s.store->CreateOrFind(different, identity + "-new-etag");
  REQUIRE(distinct.ok());
  CHECK(*distinct == different.job_id);

  // A failed job re-runs: the identity moves to the new job.
  const std::string failing = "case-" + NewUuidV4();
  core::JobRecord doomed = NewJob(owner);
  REQUIRE(s.store->CreateOrFind(doomed, failing).ok());
  REQUIRE(s.store->Finish(doomed.job_id, ErrorCode::kBadRequest, "application/json", "{}").ok());
  core::JobRecord rerun = NewJob(owner);
  auto rerun_id = s.store->CreateOrFind(rerun, failing);
  REQUIRE(rerun_id.ok());
  CHECK(*rerun_id == rerun.job_id);
  CHECK(*s.store->CreateOrFind(NewJob(owner), failing) == rerun.job_id);

  // A lost job (no heartbeat past the timeout) re-runs too.
  clock.AdvanceMs(core::kJobHeartbeatTimeoutSeconds * 1000 + 1);
  core::JobRecord replacement = NewJob(owner);
  auto replaced = s.store->CreateOrFind(replacement, failing);
  REQUIRE(replaced.ok());
  CHECK(*replaced == replacement.job_id);
}

TEST_CASE("job identity: the mapping ends with the job's retention", "[jobs]") {
  core::ManualClock clock;
  core::InMemoryJobStoreOptions options;
  options.retention_ms = 10'000;
  core::InMemoryJobStore store(&clock, options);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(store.CreateOrFind(job, "case").ok());
  REQUIRE(store.Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").ok());
  clock.AdvanceMs(10'001);
  core::JobRecord later = NewJob(owner);
  auto id = store.CreateOrFind(later, "case");
  REQUIRE(id.ok());
  CHECK(*id == later.job_id);
}

TEST_CASE("Redis: the identity key lives as long as the job's retention", "[jobs][redis]") {
  core::ManualClock clock;
  auto conn = Connect(SharedRedis().url());
  core::RedisJobStoreOptions options;
  options.retention_ms = 60'000;
  core::RedisJobStore store(conn, &clock, options);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(store.CreateOrFind(job, "case-ttl").ok());
  auto mapped = conn->Command({"GET", store.IdentityKey(owner, "case-ttl")});
  REQUIRE(mapped.ok());
  CHECK(mapped->str == job.job_id);
  auto ttl = conn->Command({"PTTL", store.IdentityKey(owner, "case-ttl")});
  REQUIRE(ttl.ok());
  CHECK(ttl->integer > 0);
  CHECK(ttl->integer <= 60'000);
  // Concurrent identical submissions: exactly one job is created.
  std::vector<std::string> answers(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < answers.size(); ++i) {
    threads.emplace_back([&, i] {
      auto c = Connect(SharedRedis().url());
      core::RedisJobStore replica(c, &clock, options);
      auto id = replica.CreateOrFind(NewJob(owner), "case-race");
      if (id.ok()) answers[i] = *id;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& a : answers) CHECK(a == answers.front());
  CHECK_FALSE(answers.front().empty());
}

TEST_CASE("in memory: retention runs from the last activity, then 410 for the owner only",
          "[jobs]") {
  core::ManualClock clock;
  core::InMemoryJobStore store(&clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(store.Create(job).ok());
  REQUIRE(store.Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").ok());

  clock.AdvanceMs(core::kJobRetentionSeconds * 1000 - 1);
  REQUIRE(store.Get(job.job_id, owner).ok());  // a poll is activity: retention restarts
  clock.AdvanceMs(core::kJobRetentionSeconds * 1000 - 1);
  REQUIRE(store.Get(job.job_id, owner).ok());

  clock.AdvanceMs(core::kJobRetentionSeconds * 1000);
  auto expired = store.Get(job.job_id, owner);
  REQUIRE_FALSE(expired.ok());
  CHECK(expired.status().code() == ErrorCode::kJobExpired);
  CHECK_THAT(expired.status().message(), Catch::Contains("24 h"));
  auto other = store.Get(job.job_id, Owner("intruder"));
  CHECK(other.status().code() == ErrorCode::kNotFound);
  CHECK(store.List(owner, 50)->empty());
  CHECK(store.UpdateProgress(job.job_id, 1, "x").code() == ErrorCode::kNotFound);
  CHECK(store.live_jobs() == 0);

  // After the 30-day tombstone the id is simply unknown.
  clock.AdvanceMs(31LL * 24 * 3600 * 1000);
  CHECK(store.Get(job.job_id, owner).status().code() == ErrorCode::kNotFound);
}

TEST_CASE("Redis: an expired job is 410 for its owner and 404 for others", "[jobs][redis]") {
  core::ManualClock clock;
  auto conn = Connect(SharedRedis().url());
  core::RedisJobStoreOptions options;
  options.retention_ms = 1'000;  // Redis's own TTL, so this test waits in real time
  core::RedisJobStore store(conn, &clock, options);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(store.Create(job).ok());
  REQUIRE(store.Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").ok());

  auto ttl = conn->Command({"PTTL", store.JobKey(job.job_id)});
  REQUIRE(ttl.ok());
  CHECK(ttl->integer > 0);
  CHECK(ttl->integer <= 1'000);
  auto seen_ttl = conn->Command({"PTTL", store.SeenKey(job.job_id)});
  REQUIRE(seen_ttl.ok());
  CHECK(seen_ttl->integer > 29LL * 24 * 3600 * 1000);
  auto index_ttl = conn->Command({"PTTL", store.IndexKey(owner)});
  REQUIRE(index_ttl.ok());
  CHECK(index_ttl->integer > 0);

  // Activity refreshes the TTL: poll every 300 ms for 1.2 s, the job stays.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(store.Get(job.job_id, owner).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1'300));
  auto expired = store.Get(job.job_id, owner);
  REQUIRE_FALSE(expired.ok());
  CHECK(expired.status().code() == ErrorCode::kJobExpired);
  CHECK(store.Get(job.job_id, Owner("intruder")).status().code() == ErrorCode::kNotFound);
  // A late update does not bring a half-record back.
  CHECK(store.UpdateProgress(job.job_id, 5, "late").code() == ErrorCode::kNotFound);
  CHECK(store.Finish(job.job_id, ErrorCode::kOk, "application/json", "{}").code() == ErrorCode::kNotFound);
  auto exists = conn->Command({"EXISTS", store.JobKey(job.job_id)});
  REQUIRE(exists.ok());
  CHECK(exists->integer == 0);
  auto listed = store.List(owner, 50);
  REQUIRE(listed.ok());
  CHECK(listed->empty());
  // The expired id was pruned from the index on the way.
  auto card = conn->Command({"ZCARD", store.IndexKey(owner)});
  REQUIRE(card.ok());
  CHECK(card->integer == 0);
}

TEST_CASE("Redis: two gateways see the same jobs", "[jobs][redis]") {
  core::ManualClock clock;
  core::RedisJobStore a(Connect(SharedRedis().url()), &clock);
  core::RedisJobStore b(Connect(SharedRedis().url()), &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  REQUIRE(a.Create(job).ok());
  REQUIRE(b.UpdateProgress(job.job_id, 40, "half").ok());
  REQUIRE(a.Finish(job.job_id, ErrorCode::kOk, "text/x-gff3", "##gff-version 3\n").ok());
  auto got = b.Get(job.job_id, owner);
  REQUIRE(got.ok());
  CHECK(got->state == core::JobState::kCompleted);
  CHECK(got->content_type == "text/x-gff3");
  CHECK(got->body == "##gff-version 3\n");
}

// Records as the release before wrote them: no "v", an HTTP status instead of a code.
std::vector<std::string> UnversionedRecord(const core::JobRecord& r, const std::string& state,
                                           const std::string& http_status, int64_t now_ms) {
  return {"HSET", "dnaserve:job:" + r.job_id, "job_id", r.job_id, "request_id", r.request_id,
          "owner", r.owner, "task", r.task, "mode", r.mode, "queued", "0", "state", state,
          "created_at_ms", std::to_string(now_ms), "updated_at_ms", std::to_string(now_ms),
          "progress_percent", "100", "progress_message", "", "http_status", http_status,
          "content_type", "application/json", "body", "{}", "body_encoding", ""};
}

TEST_CASE("Redis: records carry a format version and the release before's are read as written",
          "[jobs][redis][versions]") {
  core::ManualClock clock;
  auto connection = Connect(SharedRedis().url());
  core::RedisJobStore store(connection, &clock);
  const std::string owner = Owner("acme");

  core::JobRecord fresh = NewJob(owner);
  REQUIRE(store.Create(fresh).ok());
  auto version = connection->Command({"HGET", "dnaserve:job:" + fresh.job_id, "v"});
  REQUIRE(version.ok());
  CHECK(version->str == std::to_string(core::kJobRecordVersion));
  REQUIRE(store.Finish(fresh.job_id, ErrorCode::kModelNotFound, "application/json", "{}").ok());
  auto code = connection->Command({"HGET", "dnaserve:job:" + fresh.job_id, "code"});
  REQUIRE(code.ok());
  CHECK(code->str == "model_not_found");
  auto finished = store.Get(fresh.job_id, owner);
  REQUIRE(finished.ok());
  CHECK(finished->code == ErrorCode::kModelNotFound);
  CHECK_FALSE(finished->legacy_http_status.has_value());

  core::JobRecord refused = NewJob(owner);
  REQUIRE(connection->Command(UnversionedRecord(refused, "failed", "404", clock.NowMs())).ok());
  auto old_failed = store.Get(refused.job_id, owner);
  REQUIRE(old_failed.ok());
  CHECK(old_failed->format_version == 1);
  CHECK(old_failed->state == core::JobState::kFailed);
  REQUIRE(old_failed->legacy_http_status.has_value());
  CHECK(*old_failed->legacy_http_status == 404);
  CHECK(old_failed->code != ErrorCode::kOk);

  core::JobRecord done = NewJob(owner);
  REQUIRE(connection->Command(UnversionedRecord(done, "completed", "200", clock.NowMs())).ok());
  auto old_done = store.Get(done.job_id, owner);
  REQUIRE(old_done.ok());
  CHECK(old_done->state == core::JobState::kCompleted);
  CHECK(old_done->code == ErrorCode::kOk);
}

TEST_CASE("Redis: a record of a newer format is answered 503 and never rewritten",
          "[jobs][redis][versions]") {
  core::ManualClock clock;
  auto connection = Connect(SharedRedis().url());
  core::RedisJobStore store(connection, &clock);
  const std::string owner = Owner("acme");
  core::JobRecord job = NewJob(owner);
  // Running with a heartbeat long past the timeout: a record of this version would be marked lost.
  std::vector<std::string> hset = UnversionedRecord(job, "running", "0", clock.NowMs());
  hset.insert(hset.end(), {"v", std::to_string(core::kJobRecordVersion + 1)});
  REQUIRE(connection->Command(hset).ok());
  clock.AdvanceMs(3600 * 1000);

  auto got = store.Get(job.job_id, owner);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(got.status().retry_after_seconds().has_value());
  auto state = connection->Command({"HGET", "dnaserve:job:" + job.job_id, "state"});
  REQUIRE(state.ok());
  CHECK(state->str == "running");
}

TEST_CASE("Redis: Ping, a dead Redis and a restarted one", "[jobs][redis]") {
  auto server = testing::RedisServer::Start();
  REQUIRE(server.has_value());
  core::ManualClock clock;
  core::RedisJobStore store(Connect(server->url()), &clock);
  CHECK(store.Ping().ok());
  const std::string owner = Owner("acme");
  core::JobRecord before = NewJob(owner);
  REQUIRE(store.Create(before).ok());

  server->Stop();
  CHECK(store.Ping().code() == ErrorCode::kServiceUnavailable);
  CHECK(store.Create(NewJob(owner)).code() == ErrorCode::kServiceUnavailable);
  CHECK(store.Get(before.job_id, owner).status().code() == ErrorCode::kServiceUnavailable);
  CHECK(store.List(owner, 10).status().code() == ErrorCode::kServiceUnavailable);

  REQUIRE(server->Restart());
  bool back = false;
  for (int attempt = 0; attempt < 50 && !back; ++attempt) {
    back = store.Ping().ok();
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(back);
  core::JobRecord after = NewJob(owner);
  REQUIRE(store.Create(after).ok());
  CHECK(store.Get(after.job_id, owner).ok());
  // Persistence is off: the earlier job is gone without a trace.
  CHECK(store.Get(before.job_id, owner).status().code() == ErrorCode::kNotFound);
}

}  // namespace
}  // namespace dnaserve::core
