#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include "core/render/error_envelope.h"
#include "gateway/http/error_response.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

TEST_CASE("every error code maps to the HTTP status of the Errors table", "[gateway]") {
  CHECK(HttpStatusFor(ErrorCode::kBadRequest) == 400);
  CHECK(HttpStatusFor(ErrorCode::kUnauthorized) == 401);
  CHECK(HttpStatusFor(ErrorCode::kForbidden) == 403);
  CHECK(HttpStatusFor(ErrorCode::kNotFound) == 404);
  CHECK(HttpStatusFor(ErrorCode::kModelNotFound) == 404);
  CHECK(HttpStatusFor(ErrorCode::kConflict) == 409);
  CHECK(HttpStatusFor(ErrorCode::kJobExpired) == 410);
  CHECK(HttpStatusFor(ErrorCode::kPayloadTooLarge) == 413);
  CHECK(HttpStatusFor(ErrorCode::kSyncTooLarge) == 413);
  CHECK(HttpStatusFor(ErrorCode::kUnsupportedFormat) == 415);
  CHECK(HttpStatusFor(ErrorCode::kValidationFailed) == 422);
  CHECK(HttpStatusFor(ErrorCode::kTaskNotSupportedByModel) == 422);
  CHECK(HttpStatusFor(ErrorCode::kTooManyRequests) == 429);
  CHECK(HttpStatusFor(ErrorCode::kInternal) == 500);
  CHECK(HttpStatusFor(ErrorCode::kModelLoading) == 503);
  CHECK(HttpStatusFor(ErrorCode::kServiceUnavailable) == 503);
  CHECK(HttpStatusFor(ErrorCode::kCancelled) == 503);
}

TEST_CASE("the envelope carries code, message, request_id and typed details", "[gateway]") {
  auto parse = [](const HttpResponse& r) {
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    REQUIRE_FALSE(d.HasParseError());
    return d;
  };

  SECTION("no details key when there are none") {
    auto r = ErrorResponse(NotFound("job not found"), "rid-1");
    auto d = parse(r);
    CHECK(r.status == 404);
    CHECK(std::string(d["error"]["code"].GetString()) == "not_found");
    CHECK(std::string(d["error"]["message"].GetString()) == "job not found");
    CHECK(std::string(d["error"]["request_id"].GetString()) == "rid-1");
    CHECK_FALSE(d["error"].HasMember("details"));
    CHECK(r.FindHeader("Retry-After") == nullptr);
  }
  SECTION("a cancelled call reaches a client as service_unavailable, not as an unlisted code") {
    auto r = ErrorResponse(Cancelled("the job was cancelled"), "rid-2");
    auto d = parse(r);
    CHECK(r.status == 503);
    CHECK(std::string(d["error"]["code"].GetString()) == "service_unavailable");
    CHECK(std::string(d["error"]["message"].GetString()) == "the job was cancelled");
  }
  SECTION("validation errors are {errors: [{loc, msg, type}]}") {
    auto d = parse(ErrorResponse(ValidationFailed({"body", "options", "x"}, "extra", "extra_forbidden"), "r"));
    const auto& e = d["error"]["details"]["errors"][0];
    CHECK(e["loc"].Size() == 3);
    CHECK(std::string(e["loc"][2].GetString()) == "x");
    CHECK(std::string(e["type"].GetString()) == "extra_forbidden");
  }
  SECTION("sync_too_large details") {
    auto d = parse(ErrorResponse(Status(ErrorCode::kSyncTooLarge, "m", SyncTooLargeDetails{250000, 200000}), "r"));
    CHECK(d["error"]["details"]["sequence_length"].GetInt() == 250000);
    CHECK(d["error"]["details"]["threshold"].GetInt() == 200000);
  }
  SECTION("record-cap details have no errors key") {
    RecordCapDetails cap{"splice", 20001, 20000, 90000, 0.001};
    auto d = parse(ErrorResponse(Status(ErrorCode::kValidationFailed, "m", cap), "r"));
    const auto& det = d["error"]["details"];
    CHECK_FALSE(det.HasMember("errors"));
    CHECK(det["record_count"].GetInt() == 20001);
    CHECK(det["threshold"].GetDouble() == Approx(0.001));
  }
  SECTION("model_not_found and task_not_supported details") {
    auto d1 = parse(ErrorResponse(Status(ErrorCode::kModelNotFound, "m", ModelNotFoundDetails{{"a", "b"}}), "r"));
    CHECK(d1["error"]["details"]["available_models"].Size() == 2);
    auto d2 = parse(ErrorResponse(Status(ErrorCode::kTaskNotSupportedByModel, "m", TaskNotSupportedDetails{"promoter", {"splice"}}), "r"));
    CHECK(std::string(d2["error"]["details"]["supported_tasks"][0].GetString()) == "splice");
  }
  SECTION("a retry hint becomes Retry-After") {
    Status s(ErrorCode::kTooManyRequests, "slow down");
    s.set_retry_after_seconds(7);
    auto r = ErrorResponse(s, "r");
    REQUIRE(r.FindHeader("Retry-After"));
    CHECK(*r.FindHeader("Retry-After") == "7");
  }
  SECTION("messages with quotes and control characters stay valid JSON") {
    parse(ErrorResponse(BadRequest("bad \"thing\"\n\t\x01"), "r"));
  }
}

TEST_CASE("a 500 never carries the server's own error text", "[gateway]") {
  auto r = ErrorResponse(Internal("model forward failed: shape [3, 7] at /usr/lib/x.so"), "rid-9");
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(r.status == 500);
  CHECK(std::string(d["error"]["code"].GetString()) == "internal_error");
  CHECK(std::string(d["error"]["message"].GetString()) == core::kInternalErrorMessage);
  CHECK(std::string(d["error"]["request_id"].GetString()) == "rid-9");
  CHECK(r.body.find("forward failed") == std::string::npos);
  CHECK(r.body.find("/usr/lib") == std::string::npos);
  // Other codes keep their message: it tells the client what to fix.
  auto bad = ErrorResponse(BadRequest("request body is not valid JSON"), "rid-10");
  CHECK(bad.body.find("request body is not valid JSON") != std::string::npos);
}
