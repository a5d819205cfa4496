#include "gateway/handlers/job_file_handler.h"

#include "common/ids.h"
#include "gateway/http/error_response.h"

namespace dnaserve::gateway {
namespace {

// The files jobs publish, and their media types.
const char* PublishedMediaType(const std::string& name) {
  if (name == "annotated.vcf.gz") return "application/gzip";
  return nullptr;
}

}  // namespace

RouteHandler MakeGetJobFileHandler(const GatewayServices& services) {
  core::JobStore* jobs = services.jobs;
  return [jobs](RouteCall call, Responder respond) {
    const std::string& job_id = call.params["job_id"];
    const std::string& name = call.params["name"];
    const char* media_type = PublishedMediaType(name);
    // Same answer for malformed, unknown and foreign ids: ownership is never revealed.
    if (!IsUuid(job_id) || media_type == nullptr) {
      respond(ErrorResponse(NotFound("job file not found"), call.request.request_id));
      return;
    }
    auto job = jobs->Get(job_id, call.principal->client_id);
    if (!job.ok()) {
      respond(ErrorResponse(job.status(), call.request.request_id));
      return;
    }
    if (job->state != core::JobState::kCompleted) {
      respond(ErrorResponse(NotFound("job " + job_id + " has no file " + name +
                                     " (it is " + std::string(core::JobStateName(job->state)) +
                                     "; poll /v1/tasks/jobs/" + job_id + ")"),
                            call.request.request_id));
      return;
    }
    auto bytes = jobs->GetFile(job_id, name);
    if (!bytes.ok()) {
      respond(ErrorResponse(bytes.status(), call.request.request_id));
      return;
    }
    HttpResponse response;
    response.content_type = media_type;
    response.body = std::move(bytes).value();
    response.SetHeader("Content-Disposition", "attachment; filename=\"" + name + "\"");
    response.SetHeader("X-Job-Id", job_id);
    respond(std::move(response));
  };
}

}  // namespace dnaserve::gateway
