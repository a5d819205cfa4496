#include "gateway/handlers/variant_score_handler.h"

#include <utility>

#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/jobs/job_queue.h"
#include "core/validation/variant_score_vcf.h"

namespace dnaserve::gateway {
namespace {

// A JSON body (up to 100 variants answered now, more as a job) or a VCF body (always a job).
StatusOr<core::AdmittedVariantScore> Admit(const RouteCall& call, bool async,
                                           const core::ModelCatalogue& catalogue) {
  const auto content_type = call.request.Header("content-type");
  if (content_type && core::IsVcfContentType(*content_type)) {
    core::VcfScoreCall vcf;
    vcf.body = call.request.body;
    vcf.scorers = call.request.Query("scorers");
    vcf.assembly = call.request.Query("assembly");
    return core::AdmitVariantScoreVcf(vcf, catalogue);
  }
  return core::AdmitVariantScore(CallInputOf(call.request, async), catalogue);
}

}  // namespace

RouteHandler MakeVariantScoreHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(s, [s](const RouteCall& call, bool async) -> StatusOr<JobStart> {
    auto admitted = Admit(call, async, *s.catalogue);
    if (!admitted.ok()) return admitted.status();
    JobStart start;
    start.task = std::string(core::kVariantScoreTask);
    start.async = admitted->batch;  // a batch is a job to poll, whatever Prefer said
    start.queued = QueuedFor(std::string(core::kVariantScoreKind),
                             core::VariantScoreCommandFor(*admitted));
    start.queued->command_version = core::VariantScoreEntryVersion(*admitted);
    return start;
  });
}

}  // namespace dnaserve::gateway
