#include "gateway/handlers/variant_handler.h"

#include "gateway/handlers/job_start.h"
#include "gateway/validation/predict_request.h"
#include "gateway/validation/variant_request.h"

namespace dnaserve::gateway {
namespace {

constexpr std::string_view kOperation = "genomic-variant-interpretation";

// What the gateway can decide alone. A failure here creates no job.
StatusOr<JobStart> Admit(const RouteCall& call, bool async) {
  const HttpRequest& req = call.request;
  if (!async) {
    return BadRequest(
        "genomic-variant-interpretation runs only asynchronously: send the request with the "
        "header 'Prefer: respond-async' and poll the job");
  }
  static const std::vector<OutputFormat> kJsonOnly = {OutputFormat::kJson};
  auto format = NegotiateFormat(kOperation, kJsonOnly, req.Query("format"), req.Header("accept"));
  if (!format.ok()) return format.status();
  auto request = ValidateVariantBody(req.body);
  if (!request.ok()) return request.status();

  JobStart start;
  start.task = std::string(kVariantWorkflow);
  start.async = true;
  start.queued = QueuedFromCall(call, "variant");
  start.runner_admits = true;
  return start;
}

}  // namespace

RouteHandler MakeVariantHandler(const GatewayServices& services) {
  return MakeJobRoute(services, [](const RouteCall& call, bool async) { return Admit(call, async); });
}

}  // namespace dnaserve::gateway
