// The response check the integration tests apply to every answer (tests/support/openapi_check.h),
// run against the real document: what the renderers write for every task and for the job and
// model resources is valid against the documented schemas, and an undocumented field, status,
// media type or route is caught.
#include "tests/support/openapi_check.h"

#include <catch2/catch.hpp>
#include <string>

#include "core/dispatch/model_catalogue.h"
#include "gateway/openapi/openapi.h"
#include "gateway/render/job_response.h"
#include "core/render/predict_response.h"
#include "tests/support/variant_data.h"

namespace dnaserve::gateway {
namespace {

namespace pb = worker::v1;
using testing::HttpResult;
using testing::OpenApiCheck;

const OpenApiCheck& Checker() {
  static const std::unique_ptr<OpenApiCheck> check = [] {
    std::string error;
    auto c = OpenApiCheck::FromDocument(BuildOpenApiDocument(core::ModelCatalogue(), "test"), &error);
    INFO(error);
    REQUIRE(c != nullptr);
    return c;
  }();
  return *check;
}

HttpResult Json(long status, std::string body) {
  HttpResult r;
  r.status = status;
  r.headers["content-type"] = "application/json";
  r.body = std::move(body);
  return r;
}

core::ValidatedPredict Input(Task task) {
  core::ValidatedPredict input;
  input.task = task;
  input.sequence_name = "chr20:10194847-10204045";
  input.sequence_length = 9198;
  input.request.set_model("m");
  input.request.mutable_promoter()->set_threshold(0.5);
  if (task == Task::kSplice) {
    input.request.mutable_splice()->set_threshold(0.5);
    input.request.mutable_splice()->add_site_types(pb::SPLICE_SITE_TYPE_DONOR);
  }
  if (task == Task::kChromatin) input.request.mutable_chromatin()->set_threshold(0.5);
  if (task == Task::kExpression) {
    input.tss_index = 4599;
    input.scored_start = 0;
    input.scored_end = 9198;
  }
  return input;
}

// A result with one item of every kind the task reports, so every item schema is exercised.
pb::PredictResult Result(Task task) {
  pb::PredictResult r;
  r.set_model("m");
  r.set_inference_time_ms(7);
  switch (task) {
    case Task::kPromoter: {
      auto* w = r.mutable_promoter()->add_windows();
      w->set_end(300);
      w->set_score(0.9);
      w->set_is_promoter(true);
      auto* region = r.mutable_promoter()->add_regions();
      region->set_end(300);
      region->set_score(0.9);
      (*r.mutable_formats())["bed"] = "chr\t0\t300\n";
      break;
    }
    case Task::kSplice: {
      r.mutable_splice()->add_windows()->set_tokens(50);
      auto* site = r.mutable_splice()->add_sites();
      site->set_type(pb::SPLICE_SITE_TYPE_DONOR);
      site->set_start(10);
      site->set_end(16);
      site->set_score(0.8);
      (*r.mutable_tracks())["donor"] = "x\t0\t1\t0.8\n";
      break;
    }
    case Task::kEnhancer: {
      auto* w = r.mutable_enhancer()->add_windows();
      w->set_end(249);
      w->set_dev(1.2);
      w->set_hk(-0.3);
      break;
    }
    case Task::kChromatin: {
      r.mutable_chromatin()->add_categories("DNase");
      r.mutable_chromatin()->set_features_total(919);
      auto* f = r.mutable_chromatin()->add_windows()->add_features();
      f->set_category("DNase");
      f->set_name("H1|DNase");
      f->set_probability(0.7);
      break;
    }
    case Task::kAnnotation: {
      auto* t = r.mutable_annotation()->add_transcripts();
      t->set_id("t0");
      t->set_strand("-");
      t->set_transcript_type("mRNA");
      auto* exon = t->add_exons();
      exon->set_start(5);
      exon->set_end(50);
      (*r.mutable_formats())["gff3"] = "##gff-version 3\n";
      break;
    }
    case Task::kExpression:
      r.mutable_expression()->set_expression_log_tpm(2.5);
      break;
  }
  return r;
}

std::string PredictPath(Task task) { return "/v1/tasks/" + std::string(TaskName(task)) + "/predict"; }

TEST_CASE("every task's rendered response is valid against its documented 200", "[openapi]") {
  for (Task task : kAllTasks) {
    INFO(TaskName(task));
    const std::string body = core::RenderPredictJson(Input(task), Result(task), {"job-1", "req-1"});
    CHECK(Checker().Check("POST", PredictPath(task), Json(200, body)) == "");
    // A completed poll returns the same body.
    CHECK(Checker().Check("GET", "/v1/tasks/jobs/job-1", Json(200, body)) == "");
  }
}

TEST_CASE("job and model renderings are valid against the documented bodies", "[openapi]") {
  CHECK(Checker().Check("POST", PredictPath(Task::kPromoter),
                        Json(202, RenderJobSubmitted("job-1", "promoter"))) == "");
  core::JobRecord job;
  job.job_id = "job-1";
  job.task = "annotation";
  job.mode = "async";
  job.state = core::JobState::kRunning;
  CHECK(Checker().Check("GET", "/v1/tasks/jobs/job-1", Json(202, RenderJobProgress(job, 1000))) ==
        "");
  CHECK(Checker().Check("GET", "/v1/tasks/jobs?limit=5", Json(200, RenderJobList({job}))) == "");
  pb::ModelInfo model;
  model.set_id("promoter-a");
  model.set_context_window_bp(300);
  CHECK(Checker().Check("GET", "/v1/tasks/promoter/models",
                        Json(200, RenderModelList(Task::kPromoter, {model}))) == "");
}

TEST_CASE("the merged document keeps no placeholder of the base", "[openapi]") {
  const std::string document = BuildOpenApiDocument(core::ModelCatalogue(), "test");
  CHECK(document.find("@MCP_") == std::string::npos);
  CHECK(document.find("predict_promoter") != std::string::npos);  // the MCP tool list
}

TEST_CASE("a field the document does not describe fails the check", "[openapi]") {
  CHECK(Checker().Check("GET", "/health", Json(200, R"({"status":"healthy","version":"v"})")) ==
        "");
  const std::string extra =
      Checker().Check("GET", "/health", Json(200, R"({"status":"healthy","version":"v","x":1})"));
  CHECK(extra.find("does not match") != std::string::npos);
  // A wrong type deep inside a task's data.
  std::string body = core::RenderPredictJson(Input(Task::kEnhancer), Result(Task::kEnhancer), {"j", "r"});
  const std::string dev = "\"dev\":1.2";
  REQUIRE(body.find(dev) != std::string::npos);
  body.replace(body.find(dev), dev.size(), "\"dev\":\"1.2\"");
  CHECK_FALSE(Checker().Check("POST", PredictPath(Task::kEnhancer), Json(200, body)).empty());
}

TEST_CASE("an undocumented status, media type or route fails the check", "[openapi]") {
  const std::string envelope =
      R"({"error":{"code":"not_found","message":"no such job","request_id":"r"}})";
  CHECK(Checker().Check("GET", "/v1/tasks/jobs/x", Json(404, envelope)) == "");
  CHECK(Checker().Check("GET", "/health", Json(418, envelope)).find("status not documented") !=
        std::string::npos);
  HttpResult html = Json(200, R"({"status":"healthy","version":"v"})");
  html.headers["content-type"] = "text/html";
  CHECK(Checker().Check("GET", "/health", html).find("Content-Type") != std::string::npos);
  // Unknown routes may only answer the router's 404 envelope.
  CHECK(Checker().Check("GET", "/v1/nowhere", Json(404, envelope)) == "");
  CHECK_FALSE(Checker().Check("GET", "/v1/nowhere", Json(200, "{}")).empty());
  CHECK_FALSE(Checker().Check("GET", "/v1/nowhere", Json(404, R"({"detail":"x"})")).empty());
  // An error envelope missing its request_id.
  CHECK_FALSE(
      Checker().Check("GET", "/v1/tasks/jobs/x", Json(404, R"({"error":{"code":"not_found",)"
                                                              R"("message":"m"}})"))
          .empty());
}

TEST_CASE("gzip-encoded job results are checked after inflating", "[openapi]") {
  const std::string body =
      core::RenderPredictJson(Input(Task::kExpression), Result(Task::kExpression), {"j", "r"});
  HttpResult r = Json(200, testing::GzipMember(body));
  r.headers["content-encoding"] = "gzip";
  CHECK(Checker().Check("GET", "/v1/tasks/jobs/j", r) == "");
  r.body = testing::GzipMember(body + "x");
  CHECK(Checker().Check("GET", "/v1/tasks/jobs/j", r).find("not JSON") != std::string::npos);
}

TEST_CASE("a response shared through $ref is checked like an inline one", "[openapi]") {
  // A small document whose 200 and 404 responses are references into components/responses.
  const std::string document = R"({
    "openapi": "3.1.0",
    "paths": {"/thing": {"get": {"responses": {
      "200": {"$ref": "#/components/responses/Thing"},
      "404": {"$ref": "#/components/responses/Alias"},
      "500": {"$ref": "#/components/responses/Loop"},
      "503": {"$ref": "https://example.org/elsewhere.json"}}}}},
    "components": {
      "schemas": {"ErrorEnvelope": {"type": "object"}},
      "responses": {
        "Thing": {"description": "a thing", "content": {"application/json": {"schema": {
          "type": "object", "required": ["n"], "additionalProperties": false,
          "properties": {"n": {"type": "integer"}}}}}},
        "Alias": {"$ref": "#/components/responses/Thing"},
        "Loop": {"$ref": "#/components/responses/Loop"}}}})";
  std::string error;
  const auto check = OpenApiCheck::FromDocument(document, &error);
  INFO(error);
  REQUIRE(check != nullptr);
  CHECK(check->Check("GET", "/thing", Json(200, R"({"n":1})")) == "");
  CHECK(check->Check("GET", "/thing", Json(200, R"({"n":"one"})")).find("does not match") !=
        std::string::npos);
  CHECK(check->Check("GET", "/thing", Json(404, R"({"n":2})")) == "");  // a chain of two
  CHECK(check->Check("GET", "/thing", Json(404, R"({"m":2})")).find("does not match") !=
        std::string::npos);
  CHECK(check->Check("GET", "/thing", Json(500, "{}")).find("do not end") != std::string::npos);
  CHECK(check->Check("GET", "/thing", Json(503, "{}")).find("outside the document") !=
        std::string::npos);
}

}  // namespace
}  // namespace dnaserve::gateway
