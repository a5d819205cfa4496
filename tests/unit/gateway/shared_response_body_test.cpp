// One buffer for a sync job's reply and its stored result (BENCHMARKS.md J): the response's
// body is the job result's own bytes, which the after-reply store then reads, not a copy of
// them; the HTTP server writes a shared body as it writes an owned one and lets go of it once
// written; ResponseBody's copies and Share() move or share, never copy, the bytes.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "core/dispatch/executor.h"
#include "gateway/handlers/job_runner.h"
#include "gateway/server/http_server.h"
#include "tests/support/in_memory_job_store.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

namespace {

// Larger than the server's piece-by-piece threshold (1 MiB), so the reply takes that path too.
std::string LargeJson() {
  std::string body = "{\"data\":{\"features\":[";
  for (int i = 0; body.size() < (2u << 20); ++i) {
    body += (i ? ",{\"i\":" : "{\"i\":") + std::to_string(i) + "}";
  }
  return body + "]},\"meta\":{}}";
}

// Remembers where the body it was asked to store lives, and a copy of it to compare.
class PointerRecordingJobStore : public core::InMemoryJobStore {
 public:
  using core::InMemoryJobStore::InMemoryJobStore;
  Status Finish(const std::string& job_id, ErrorCode code, const std::string& content_type,
                const std::string& body) override {
    finished_bytes = body;
    finished_data = body.data();
    Status status = core::InMemoryJobStore::Finish(job_id, code, content_type, body);
    finished.set_value();
    return status;
  }
  std::string finished_bytes;
  const char* finished_data = nullptr;
  std::promise<void> finished;
};

class LargeAnswerJob : public core::Job {
 public:
  StatusOr<core::JobOutput> Run(const core::JobContext&) override {
    core::JobOutput out;
    out.body = LargeJson();
    return out;
  }
};

class NoQuota : public core::QuotaStore {
 public:
  core::QuotaDecision Admit(const Principal&, const std::string&, int64_t) override { return {}; }
  core::RateLimitInfo Peek(const Principal&) override { return {}; }
  void Release(const Principal&, const std::string&) override {}
  void Renew(const Principal&, const std::string&, int64_t) override {}
};

}  // namespace

TEST_CASE("a sync job's reply and its stored result are one buffer", "[jobs][memory]") {
  core::ManualClock clock;
  PointerRecordingJobStore jobs{&clock};
  NoQuota quotas;
  core::Executor executor{1, 2};
  JobRunner runner{&jobs, &executor, std::chrono::seconds(1)};
  runner.Start();

  const std::string id = "00000000-0000-4000-8000-000000000001";
  core::JobRecord record;
  record.job_id = id;
  record.request_id = "req-1";
  record.owner = "alice";
  record.task = "test";
  record.mode = "sync";
  REQUIRE(jobs.Create(record).ok());
  JobSubmission submission;
  submission.job_id = id;
  submission.request_id = record.request_id;
  submission.lease = std::make_shared<QuotaLease>(&quotas, Principal{"alice"}, id);
  submission.work = std::make_unique<LargeAnswerJob>();
  std::promise<HttpResponse> answered;
  REQUIRE(runner.Submit(std::move(submission),
                        [&](HttpResponse r) { answered.set_value(std::move(r)); }));

  auto reply = answered.get_future();
  REQUIRE(reply.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  // Kept until the end: the buffer stays alive, so its address cannot be reused by a copy.
  const HttpResponse response = reply.get();
  REQUIRE(jobs.finished.get_future().wait_for(std::chrono::seconds(20)) ==
          std::future_status::ready);
  runner.Stop();
  executor.Shutdown();

  CHECK(response.status == 200);
  CHECK(response.body == LargeJson());
  CHECK(jobs.finished_bytes == LargeJson());
  // The point: the store read the very bytes the client was answered from. With a copy (the
  // response owning `result->body` duplicated) the addresses differ and the body is not shared.
  CHECK(response.body.shared());
  CHECK(static_cast<const void*>(response.body.data()) ==
        static_cast<const void*>(jobs.finished_data));
}

TEST_CASE("a response body shares or moves its bytes, never copies them", "[gateway][memory]") {
  const std::string text = LargeJson();
  SECTION("shared bytes: copies of the response and Share() hand out the same buffer") {
    auto bytes = std::make_shared<const std::string>(text);
    HttpResponse response;
    response.body = ResponseBody::Shared(bytes);
    CHECK(bytes.use_count() == 2);
    HttpResponse copy = response;
    CHECK(copy.body.data() == bytes->data());
    CHECK(bytes.use_count() == 3);
    std::shared_ptr<const std::string> taken = std::move(response.body).Share();
    CHECK(taken == bytes);
    CHECK(response.body.empty());
    CHECK(bytes.use_count() == 3);  // moved from the response to `taken`
  }
  SECTION("owned bytes: Share() moves them into the shared buffer") {
    std::string owned = text;
    const char* where = owned.data();
    ResponseBody body = std::move(owned);
    CHECK(body.data() == where);
    CHECK_FALSE(body.shared());
    std::shared_ptr<const std::string> taken = std::move(body).Share();
    CHECK(taken->data() == where);
    CHECK(*taken == text);
    CHECK(body.empty());
  }
  SECTION("a null shared buffer reads as an empty body") {
    ResponseBody body = ResponseBody::Shared(nullptr);
    CHECK(body.empty());
    CHECK(body == "");
    CHECK(std::move(body).Share()->empty());
  }
}

TEST_CASE("the server writes a shared body byte for byte and then lets go of it",
          "[gateway][http][memory]") {
  const auto bytes = std::make_shared<const std::string>(LargeJson());
  const auto small = std::make_shared<const std::string>("{\"small\":true}");
  HttpServerOptions options;
  options.port = 0;
  options.drain_timeout = std::chrono::seconds(5);
  HttpServer server(options, [&](gateway::HttpRequest request, Responder respond) {
    HttpResponse response;
    response.body = ResponseBody::Shared(request.path == "/small" ? small : bytes);
    respond(std::move(response));
  });
  REQUIRE(server.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());

  auto large = testing::HttpRequest("GET", url + "/large", {}, "");
  REQUIRE(large.status == 200);
  CHECK(large.body == *bytes);
  CHECK(large.Header("content-length") ==
        std::optional<std::string>(std::to_string(bytes->size())));
  auto little = testing::HttpRequest("GET", url + "/small", {}, "");
  REQUIRE(little.status == 200);
  CHECK(little.body == *small);

  // The piece writer drops its reference on the reactor thread once the last piece is queued:
  // waited for (bounded), not timed.
  for (int i = 0; i < 500 && (bytes.use_count() > 1 || small.use_count() > 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(bytes.use_count() == 1);
  CHECK(small.use_count() == 1);
  server.Stop();
}
