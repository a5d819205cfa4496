// The six tasks end to end: gateway -> gRPC -> worker -> LibTorch, jobs in Redis.
#include <catch2/catch.hpp>

#include <thread>

#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

std::string Str(const rapidjson::Value& v, const char* key) {
  REQUIRE(v.HasMember(key));
  REQUIRE(v[key].IsString());
  return v[key].GetString();
}

// Polls a job until it leaves the running states (202) or the timeout passes.
HttpResult PollUntilDone(const Service& svc, const std::string& job_id, const std::string& key) {
  HttpResult r;
  for (int i = 0; i < 600; ++i) {
    r = svc.Get("/v1/tasks/jobs/" + job_id, key);
    if (r.status != 202) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

}  // namespace

TEST_CASE("every task answers synchronously with the full envelope", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;

  for (std::string task : {"promoter", "splice", "enhancer", "chromatin", "annotation",
                           "expression"}) {
    DYNAMIC_SECTION(task) {
      auto r = svc->Post("/v1/tasks/" + task + "/predict", MinimalBody(task), key);
      INFO(r.body.substr(0, 1000));
      REQUIRE(r.status == 200);
      auto doc = ParseJson(r.body);
      const auto& data = (*doc)["data"];
      const auto& meta = (*doc)["meta"];
      CHECK(Str(data, "task") == task);
      CHECK(Str(meta, "task") == task);
      CHECK(Str(meta, "model") == Str(data, "model"));
      CHECK(Str(data["input"], "sequence_name") == "sequence");
      CHECK(data.HasMember("summary"));
      CHECK(data.HasMember("formats"));
      CHECK(meta["cold_start"].IsBool());
      CHECK(meta["model_load_time_ms"].IsInt64());
      CHECK(meta["inference_time_ms"].IsInt64());
      CHECK(Str(meta["task_specific_counts"], "task") == task);
      // Headers agree with the body.
      REQUIRE(r.Header("x-job-id"));
      CHECK(*r.Header("x-job-id") == Str(meta, "job_id"));
      CHECK(*r.Header("x-request-id") == Str(meta, "request_id"));
      CHECK(r.Header("ratelimit-limit"));
      CHECK(r.Header("ratelimit-remaining"));
      CHECK(r.Header("ratelimit-reset"));
      CHECK(r.Header("ratelimit-policy"));
      // A sync call is a job too: polling it returns the same body (stored just after the
      // reply, so a poll at once may still find it running).
      auto poll = PollUntilDone(*svc, Str(meta, "job_id"), key);
      CHECK(poll.status == 200);
      CHECK(poll.body == r.body);
      CHECK(*poll.Header("x-request-id") == Str(meta, "request_id"));

      if (task == "expression") {
        CHECK(meta["sequence_length"].GetInt() == 9198);
        CHECK(meta["task_specific_counts"]["tss_index"].GetInt() == 4599);
        CHECK(data["input"]["scored_window"][0].GetInt() == 0);
        CHECK(data["input"]["scored_window"][1].GetInt() == 9198);
        CHECK_FALSE(data["input"].HasMember("sequence_length"));
        CHECK(Str(data["prediction"], "unit").size() > 0);
      } else {
        CHECK(meta["task_specific_counts"].HasMember("windows_processed"));
      }
    }
  }
}

TEST_CASE("text formats come back as tracks", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;

  SECTION("annotation gff3 via Accept") {
    auto r = svc->Post("/v1/tasks/annotation/predict", MinimalBody("annotation"), key,
                       {"Accept: text/x-gff3"});
    REQUIRE(r.status == 200);
    CHECK(r.Header("content-type")->find("gff3") != std::string::npos);
    CHECK(r.body.rfind("##gff-version 3", 0) == 0);
  }
  SECTION("promoter bedgraph via ?format=") {
    auto r = svc->Post("/v1/tasks/promoter/predict?format=bedgraph", MinimalBody("promoter"), key);
    REQUIRE(r.status == 200);
    CHECK(r.body.find("sequence\t") != std::string::npos);
  }
  SECTION("an unsupported format is 415, never a silent JSON fallback") {
    auto r = svc->Post("/v1/tasks/enhancer/predict?format=gff3", MinimalBody("enhancer"), key);
    REQUIRE(r.status == 415);
    auto doc = ParseJson(r.body);
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "unsupported_format");
    CHECK(std::string((*doc)["error"]["message"].GetString()).find("bedgraph") !=
          std::string::npos);
  }
  SECTION("a text format with respond-async is 400") {
    auto r = svc->Post("/v1/tasks/splice/predict?format=bed", MinimalBody("splice"), key,
                       {"Prefer: respond-async"});
    REQUIRE(r.status == 400);
    CHECK(std::string((*ParseJson(r.body))["error"]["code"].GetString()) == "bad_request");
  }
}

TEST_CASE("async jobs run to completion and are owner-scoped", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string alice = svc->keys().alice;
  const std::string bob = svc->keys().bob;

  auto submit = svc->Post("/v1/tasks/chromatin/predict", MinimalBody("chromatin", 5000), alice,
                          {"Prefer: respond-async"});
  REQUIRE(submit.status == 202);
  auto doc = ParseJson(submit.body);
  std::string job_id = (*doc)["data"]["job_id"].GetString();
  CHECK(std::string((*doc)["data"]["status"].GetString()) == "accepted");
  CHECK(std::string((*doc)["data"]["links"]["result"].GetString()) == "/v1/tasks/jobs/" + job_id);
  CHECK(std::string((*doc)["meta"]["mode"].GetString()) == "async");
  CHECK(std::string((*doc)["meta"]["task"].GetString()) == "chromatin");
  CHECK(*submit.Header("x-job-id") == job_id);
  CHECK(*submit.Header("content-location") == "/v1/tasks/jobs/" + job_id);

  // Another client cannot see it, not even that it exists.
  auto foreign = svc->Get("/v1/tasks/jobs/" + job_id, bob);
  CHECK(foreign.status == 404);
  CHECK(std::string((*ParseJson(foreign.body))["error"]["code"].GetString()) == "not_found");

  auto done = PollUntilDone(*svc, job_id, alice);
  REQUIRE(done.status == 200);
  auto result = ParseJson(done.body);
  CHECK(std::string((*result)["meta"]["job_id"].GetString()) == job_id);
  CHECK(std::string((*result)["data"]["task"].GetString()) == "chromatin");
  CHECK((*result)["meta"]["sequence_length"].GetInt() == 5000);

  auto list = svc->Get("/v1/tasks/jobs?limit=500", alice);
  REQUIRE(list.status == 200);
  auto jobs = ParseJson(list.body);
  bool found = false;
  for (const auto& job : (*jobs)["jobs"].GetArray()) {
    if (std::string(job["job_id"].GetString()) == job_id) found = true;
  }
  CHECK(found);
  CHECK((*jobs)["count"].GetInt() == static_cast<int>((*jobs)["jobs"].Size()));

  auto bob_list = ParseJson(svc->Get("/v1/tasks/jobs", bob).body);
  for (const auto& job : (*bob_list)["jobs"].GetArray()) {
    CHECK(std::string(job["job_id"].GetString()) != job_id);
  }
  CHECK(svc->Get("/v1/tasks/jobs?limit=0", alice).status == 422);
  CHECK(svc->Get("/v1/tasks/jobs?limit=501", alice).status == 422);
  CHECK(svc->Get("/v1/tasks/jobs?limit=abc", alice).status == 422);
  CHECK(svc->Get("/v1/tasks/jobs/not-a-uuid", alice).status == 404);
  CHECK(svc->Get("/v1/tasks/jobs/00000000-0000-4000-8000-000000000000", alice).status == 404);
}

TEST_CASE("a failed async job polls as its natural error", "[integration]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;
  // Threshold 0 makes every token a site: far past the 20,000-site cap.
  std::string body = "{\"sequence\": \"" + RandomDna(80000) + "\", \"options\": {\"threshold\": 0}}";

  SECTION("sync") {
    auto r = svc->Post("/v1/tasks/splice/predict", body, key);
    REQUIRE(r.status == 422);
    auto doc = ParseJson(r.body);
    const auto& details = (*doc)["error"]["details"];
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "validation_failed");
    CHECK(std::string(details["task"].GetString()) == "splice");
    CHECK(details["record_count"].GetInt() > 20000);
    CHECK(details["maximum_records"].GetInt() == 20000);
    CHECK(details["sequence_length"].GetInt() == 80000);
    CHECK(details["threshold"].GetDouble() == 0.0);
    CHECK_FALSE(details.HasMember("errors"));
  }
  SECTION("async") {
    auto submit = svc->Post("/v1/tasks/splice/predict", body, key, {"Prefer: respond-async"});
    REQUIRE(submit.status == 202);
    auto job_id = std::string((*ParseJson(submit.body))["data"]["job_id"].GetString());
    auto done = PollUntilDone(*svc, job_id, key);
    CHECK(done.status == 422);
    CHECK(std::string((*ParseJson(done.body))["error"]["code"].GetString()) ==
          "validation_failed");
  }
}

TEST_CASE("expression: meta.description_match names the training context a description matched",
          "[integration][description_match]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;
  auto post = [&](const std::string& description) {
    const std::string body = "{\"sequence\": \"" + RandomDna(9198) +
                             "\", \"options\": {\"description\": \"" + description + "\"}}";
    auto r = svc->Post("/v1/tasks/expression/predict", body, key);
    INFO(r.body.substr(0, 1000));
    REQUIRE(r.status == 200);
    return r.body;
  };
  {
    auto doc = ParseJson(post("liver"));
    const auto& match = (*doc)["meta"]["description_match"];
    REQUIRE(match.IsObject());
    CHECK(match["matched"].GetBool());
    REQUIRE(match["contexts"].IsArray());
    REQUIRE(match["contexts"].Size() == 3);
    CHECK(Str(match["contexts"][0], "id") == "E066");
    CHECK(Str(match["contexts"][0], "name") == "Liver");
    CHECK(match["contexts"][0]["similarity"].GetDouble() == Approx(1.0));
    // Best first.
    CHECK(match["contexts"][1]["similarity"].GetDouble() <=
          match["contexts"][0]["similarity"].GetDouble());
  }
  {
    auto doc = ParseJson(post("qwzx kcdj vbnm"));
    const auto& match = (*doc)["meta"]["description_match"];
    REQUIRE(match.IsObject());
    CHECK_FALSE(match["matched"].GetBool());
    CHECK(match["contexts"][0]["similarity"].GetDouble() < 0.4);
    // Flagged, not refused: the prediction is still there.
    CHECK((*doc)["data"]["prediction"]["expression_log_tpm"].IsNumber());
  }
}
