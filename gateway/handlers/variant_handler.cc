#include "gateway/handlers/variant_handler.h"

#include <chrono>

#include "common/log.h"
#include "gateway/handlers/job_start.h"
#include "gateway/http/error_response.h"
#include "gateway/render/variant_response.h"
#include "gateway/validation/predict_request.h"
#include "gateway/validation/variant_request.h"
#include "gateway/workflows/backend_expression_scorer.h"
#include "gateway/workflows/variant_interpretation.h"

namespace dnaserve::gateway {
namespace {

constexpr std::string_view kOperation = "genomic-variant-interpretation";

class VariantJob : public Job {
 public:
  VariantJob(const GatewayServices& services, VariantCase c)
      : services_(services), case_(std::move(c)) {}

  HttpResponse Run(const JobContext& context) override {
    const auto started = std::chrono::steady_clock::now();
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    const VariantResources& resources = *services_.variant;
    BackendExpressionScorer scorer(services_.backend, services_.catalogue, services_.executor,
                                   resources.score_concurrency(), context.call);
    auto result = RunVariantInterpretation(case_, resources, scorer, context);
    if (!result.ok()) {
      log::Info("variant_job_failed", {{"job_id", context.call.job_id},
                                       {"code", ErrorCodeName(result.status().code())},
                                       {"model_calls", scorer.calls()},
                                       {"seconds", seconds()}});
      return ErrorResponse(result.status(), context.call.request_id);
    }
    const variant::AnnotationCounts& counts = result->annotation.counts;
    log::Info("variant_job_done", {{"job_id", context.call.job_id},
                                   {"variants_in", counts.variants_in},
                                   {"annotated", counts.annotated},
                                   {"associations", counts.associations},
                                   {"windows_scored", counts.windows_scored},
                                   {"model_calls", scorer.calls()},
                                   {"output_bytes", result->output_bytes},
                                   {"seconds", seconds()}});
    if (counts.reference_mismatches > 0) {
      // REF disagreeing with the reference FASTA is the sign of a VCF on another build.
      log::Warn("variant_reference_mismatches",
                {{"job_id", context.call.job_id}, {"records", counts.reference_mismatches}});
    }
    const GenomeAssets* genome = resources.Genome(case_.request.genome_build);
    HttpResponse response;
    response.body = RenderVariantJson(case_, *result, genome->catalogue.info(),
                                      {context.call.job_id, context.call.request_id});
    return response;
  }

 private:
  GatewayServices services_;
  VariantCase case_;
};

// Everything decided before a job exists. A failure here creates no job.
StatusOr<JobStart> Admit(const RouteCall& call, const GatewayServices& services, bool async) {
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
  if (services.variant == nullptr) {
    return Unavailable("the genomic-variant-interpretation workflow is not set up on this gateway");
  }
  auto c = AdmitVariantCase(std::move(request).value(), *services.variant, call.job_id);
  if (!c.ok()) return c.status();

  JobStart start;
  start.task = std::string(kVariantWorkflow);
  start.async = true;
  start.identity = VariantCaseIdentity(call.principal->client_id, *c);
  start.work = std::make_unique<VariantJob>(services, std::move(c).value());
  return start;
}

}  // namespace

RouteHandler MakeVariantHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(
      s, [s](const RouteCall& call, bool async) { return Admit(call, s, async); },
      AdmissionThread::kExecutor);
}

}  // namespace dnaserve::gateway
