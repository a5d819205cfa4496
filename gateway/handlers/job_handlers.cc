#include "gateway/render/job_response.h"
#include "gateway/handlers/job_handlers.h"

#include <chrono>
#include <cstdlib>

#include "common/ids.h"
#include "gateway/http/accept_encoding.h"
#include "gateway/http/error_response.h"
#include "core/jobs/job_store_common.h"
#include "core/jobs/result_codec.h"
#include "core/render/predict_response.h"

namespace dnaserve::gateway {
namespace {

constexpr int kDefaultJobListLimit = 50;
constexpr int kMaxJobListLimit = 500;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `limit` must be an integer 1-500; anything else is a 422 at [query, limit].
StatusOr<int> ParseLimit(const std::optional<std::string>& raw) {
  if (!raw) return kDefaultJobListLimit;
  const std::string& s = *raw;
  bool digits = !s.empty() && s.size() <= 6 &&
                s.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) {
    return ValidationFailed({"query", "limit"}, "limit must be an integer between 1 and 500",
                            "int_parsing");
  }
  int value = std::atoi(s.c_str());
  if (value < 1 || value > kMaxJobListLimit) {
    return ValidationFailed({"query", "limit"},
                            "limit must be between 1 and 500; got " + std::to_string(value),
                            value < 1 ? "greater_than_equal" : "less_than_equal");
  }
  return value;
}

}  // namespace

RouteHandler MakeListJobsHandler(const GatewayServices& services) {
  core::JobStore* jobs = services.jobs;
  return [jobs](RouteCall call, Responder respond) {
    auto limit = ParseLimit(call.request.Query("limit"));
    if (!limit.ok()) {
      respond(ErrorResponse(limit.status(), call.request.request_id));
      return;
    }
    auto listed = jobs->List(call.principal->client_id, *limit);
    if (!listed.ok()) {
      respond(ErrorResponse(listed.status(), call.request.request_id));
      return;
    }
    HttpResponse response;
    response.body = RenderJobList(*listed);
    respond(std::move(response));
  };
}

RouteHandler MakeGetJobHandler(const GatewayServices& services) {
  core::JobStore* jobs = services.jobs;
  return [jobs](RouteCall call, Responder respond) {
    const std::string& job_id = call.params["job_id"];
    // Same answer for malformed, unknown and foreign ids: ownership is never revealed.
    if (!IsUuid(job_id)) {
      respond(ErrorResponse(NotFound("job not found"), call.request.request_id));
      return;
    }
    auto job = jobs->GetStored(job_id, call.principal->client_id);
    if (!job.ok()) {
      respond(ErrorResponse(job.status(), call.request.request_id));
      return;
    }
    HttpResponse response;
    if (job->state == core::JobState::kAccepted || job->state == core::JobState::kRunning) {
      response.status = 202;
      response.body = RenderJobProgress(*job, NowMs());
    } else {
      // The stored response: the body a sync call returned, or its error envelope. Kept as
      // gzip when large; a client accepting gzip gets those bytes as they are, any other the
      // decompressed body. Either way the representation depends on Accept-Encoding.
      response.status = HttpStatusFor(*job);
      response.content_type = job->content_type.empty() ? "application/json" : job->content_type;
      if (job->body_encoding == core::kGzipEncoding &&
          AcceptsGzip(call.request.Header("accept-encoding"))) {
        response.body = std::move(job->body);
        response.SetHeader("Content-Encoding", "gzip");
      } else {
        auto body = core::DecodeStored(std::move(job->body), job->body_encoding);
        if (!body.ok()) {
          respond(ErrorResponse(body.status(), call.request.request_id));
          return;
        }
        response.body = std::move(body).value();
      }
      response.SetHeader("Vary", "Accept-Encoding");
      if (!job->request_id.empty()) response.SetHeader("X-Request-Id", job->request_id);
    }
    response.SetHeader("X-Job-Id", job_id);
    respond(std::move(response));
  };
}

}  // namespace dnaserve::gateway
