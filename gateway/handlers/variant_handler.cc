#include "gateway/handlers/variant_handler.h"

#include "common/s3_grants.h"
#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "gateway/handlers/job_start.h"

namespace dnaserve::gateway {
namespace {

// The caller's object-storage grants, decided here without the store (the gateway has no S3
// client): the input must be under an s3_read grant and the prefix the output is written into
// under an s3_write grant. Either refusal is the answer a missing object gets, so a client learns
// nothing about objects it may not use; the runner checks again before any store request.
Status CheckGrants(const Principal& principal, const std::string& uri) {
  auto parts = SplitS3Uri(uri);
  if (!parts.ok()) return parts.status();  // the form: the runner's words, no store involved
  if (!S3GrantsCover(principal.s3_read(), parts->bucket, parts->key)) {
    return S3ObjectUnreadable(uri);
  }
  const std::string output_prefix = S3ParentPrefix(uri);
  if (!S3GrantsCoverPrefix(principal.s3_write(), output_prefix)) {
    return S3PrefixUnwritable(output_prefix);
  }
  return Status::Ok();
}

// What the gateway can decide alone. A failure here creates no job.
StatusOr<JobStart> Admit(const RouteCall& call, bool async) {
  auto request = core::AdmitVariant(CallInputOf(call.request, async));
  if (!request.ok()) return request.status();
  if (!call.principal) return Internal("the variant route ran without an authenticated caller");
  if (Status granted = CheckGrants(*call.principal, request->uri); !granted.ok()) return granted;

  JobStart start;
  start.task = std::string(core::kVariantWorkflow);
  start.async = true;
  start.queued = QueuedFor("variant", core::VariantCommandFor(*request));
  // The grants travel with the job: the runner checks them again before any store request.
  start.queued->facts[std::string(kS3ReadFact)] = EncodeS3Grants(call.principal->s3_read());
  start.queued->facts[std::string(kS3WriteFact)] = EncodeS3Grants(call.principal->s3_write());
  start.runner_admits = true;
  return start;
}

}  // namespace

RouteHandler MakeVariantHandler(const GatewayServices& services) {
  return MakeJobRoute(services, [](const RouteCall& call, bool async) { return Admit(call, async); });
}

}  // namespace dnaserve::gateway
