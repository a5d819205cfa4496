#include "runner/jobs/runner_jobs.h"

#include <atomic>
#include <chrono>

#include "common/log.h"
#include "common/s3_grants.h"
#include "gateway/handlers/job_start.h"
#include "gateway/handlers/predict_handler.h"
#include "gateway/http/error_response.h"
#include "gateway/render/predict_response.h"
#include "gateway/validation/find_genes_request.h"
#include "gateway/validation/variant_request.h"
#include "runner/workflows/backend_expression_scorer.h"
#include "runner/workflows/find_genes.h"
#include "runner/workflows/find_genes_response.h"
#include "runner/workflows/variant_interpretation.h"
#include "runner/workflows/variant_response.h"

namespace dnaserve::runner {
namespace {

using gateway::HttpResponse;
using gateway::Job;
using gateway::JobContext;
using gateway::QueuedJob;

class FindGenesJob : public Job {
 public:
  FindGenesJob(gateway::InferenceBackend* backend, gateway::ValidatedFindGenes input,
               gateway::FindGenesModels models)
      : backend_(backend), input_(std::move(input)), models_(std::move(models)) {}

  HttpResponse Run(const JobContext& context) override {
    auto result = gateway::RunFindGenes(input_, models_, *backend_, context);
    if (!result.ok()) return gateway::ErrorResponse(result.status(), context.call.request_id);
    HttpResponse response;
    response.body = gateway::RenderFindGenesJson(input_, *result,
                                                 {context.call.job_id, context.call.request_id});
    return response;
  }

 private:
  gateway::InferenceBackend* backend_;
  gateway::ValidatedFindGenes input_;
  gateway::FindGenesModels models_;
};

// An expression scorer that refuses once a job has made its allowance of model calls, so one
// job cannot occupy the expression workers without end.
class BoundedScorer : public variant::ExpressionScorer {
 public:
  BoundedScorer(variant::ExpressionScorer* inner, int64_t max_calls)
      : inner_(inner), max_calls_(max_calls) {}
  StatusOr<std::vector<double>> Score(const std::vector<variant::ScoreRequest>& batch,
                                      const std::atomic<bool>* cancelled) override {
    const auto n = static_cast<int64_t>(batch.size());
    const int64_t after = calls_.fetch_add(n) + n;
    if (max_calls_ > 0 && after > max_calls_) {
      return BadRequest("the job needs more than " + std::to_string(max_calls_) +
                        " model calls (the per-job limit); narrow it with options.genes, a "
                        "smaller options.window, fewer tissues or a smaller VCF");
    }
    return inner_->Score(batch, cancelled);
  }
  StatusOr<std::string> ModelId() override { return inner_->ModelId(); }
  int64_t CallAllowance() const override { return max_calls_; }
  // Not counted against the allowance: one call per tissue, made once per job.
  StatusOr<std::optional<variant::TissueMatch>> MatchTissue(
      std::string_view description, const std::atomic<bool>* cancelled) override {
    return inner_->MatchTissue(description, cancelled);
  }

 private:
  variant::ExpressionScorer* inner_;
  int64_t max_calls_;
  std::atomic<int64_t> calls_{0};
};

class VariantJob : public Job {
 public:
  VariantJob(const JobServices& services, gateway::VariantCase c)
      : services_(services), case_(std::move(c)) {}

  HttpResponse Run(const JobContext& context) override {
    const auto started = std::chrono::steady_clock::now();
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    const gateway::VariantResources& resources = *services_.variant;
    gateway::BackendExpressionScorer backend_scorer(services_.backend, services_.catalogue,
                                                    services_.executor,
                                                    resources.score_concurrency(), context.call);
    BoundedScorer scorer(&backend_scorer, services_.max_model_calls);
    auto result = gateway::RunVariantInterpretation(case_, resources, scorer, context);
    if (!result.ok()) {
      log::Info("variant_job_failed", {{"job_id", context.call.job_id},
                                       {"code", ErrorCodeName(result.status().code())},
                                       {"model_calls", backend_scorer.calls()},
                                       {"seconds", seconds()}});
      return gateway::ErrorResponse(result.status(), context.call.request_id);
    }
    const variant::AnnotationCounts& counts = result->annotation.counts;
    log::Info("variant_job_done", {{"job_id", context.call.job_id},
                                   {"variants_in", counts.variants_in},
                                   {"annotated", counts.annotated},
                                   {"associations", counts.associations},
                                   {"windows_scored", counts.windows_scored},
                                   {"model_calls", backend_scorer.calls()},
                                   {"output_bytes", result->output_bytes},
                                   {"seconds", seconds()}});
    if (counts.reference_mismatches > 0) {
      // REF disagreeing with the reference FASTA is the sign of a VCF on another build.
      log::Warn("variant_reference_mismatches",
                {{"job_id", context.call.job_id}, {"records", counts.reference_mismatches}});
    }
    const gateway::GenomeAssets* genome = resources.Genome(case_.request.genome_build);
    HttpResponse response;
    response.body = gateway::RenderVariantJson(case_, *result, genome->catalogue.info(),
                                               {context.call.job_id, context.call.request_id});
    return response;
  }

 private:
  JobServices services_;
  gateway::VariantCase case_;
};

// The gateway-side request a queued job was admitted from.
gateway::RouteCall CallFor(const QueuedJob& queued) {
  gateway::RouteCall call;
  call.request.method = "POST";
  call.request.body = queued.body;
  call.request.request_id = queued.request_id;
  if (!queued.format.empty()) call.request.query["format"] = queued.format;
  if (!queued.accept.empty()) call.request.headers["accept"] = queued.accept;
  call.params["task"] = queued.task;
  call.job_id = queued.job_id;
  call.principal = gateway::Principal{queued.client_id, queued.rate_per_minute,
                                      queued.max_concurrency};
  return call;
}

StatusOr<gateway::VariantCase> VariantCaseFor(const QueuedJob& queued,
                                              const JobServices& services) {
  if (services.variant == nullptr) {
    return Unavailable("the genomic-variant-interpretation workflow is not set up on this runner");
  }
  auto request = gateway::ValidateVariantBody(queued.body);
  if (!request.ok()) return request.status();
  // The grants its gateway queued with the job (none when absent: such a job reads nothing).
  gateway::S3Access access;
  access.client_id = queued.client_id;
  access.grants.read = DecodeS3Grants(queued.Fact(std::string(kS3ReadFact)));
  access.grants.write = DecodeS3Grants(queued.Fact(std::string(kS3WriteFact)));
  return gateway::AdmitVariantCase(std::move(request).value(), *services.variant, queued.job_id,
                                   std::move(access));
}

StatusOr<std::unique_ptr<Job>> BuildPredict(const QueuedJob& queued, const JobServices& services) {
  gateway::GatewayServices here;  // no queue: the admission builds the work to run in place
  here.backend = services.backend;
  here.catalogue = services.catalogue;
  auto start = gateway::AdmitPredict(CallFor(queued), here, queued.mode == "async");
  if (!start.ok()) return start.status();
  if (!start->work) return Internal("the predict admission built no work");
  return std::move(start->work);
}

StatusOr<std::unique_ptr<Job>> BuildFindGenes(const QueuedJob& queued,
                                              const JobServices& services) {
  auto input = gateway::ValidateFindGenesBody(queued.body);
  if (!input.ok()) return input.status();
  gateway::FindGenesModels models{queued.Fact("annotation_model"),
                                  queued.Fact("expression_model")};
  return std::unique_ptr<Job>(
      new FindGenesJob(services.backend, std::move(input).value(), std::move(models)));
}

StatusOr<std::unique_ptr<Job>> BuildVariant(const QueuedJob& queued, const JobServices& services) {
  auto c = VariantCaseFor(queued, services);
  if (!c.ok()) return c.status();
  const std::string accepted_etag = queued.Fact("etag");
  if (c->object.etag != accepted_etag) {
    return BadRequest("the input object " + c->request.uri +
                      " was replaced after the job was accepted (ETag " + accepted_etag +
                      ", now " + c->object.etag + "); resubmit to annotate the new version");
  }
  return std::unique_ptr<Job>(new VariantJob(services, std::move(c).value()));
}

}  // namespace

StatusOr<std::unique_ptr<Job>> BuildJob(const QueuedJob& queued, const JobServices& services) {
  if (queued.kind == "predict") return BuildPredict(queued, services);
  if (queued.kind == "find_genes") return BuildFindGenes(queued, services);
  if (queued.kind == "variant") return BuildVariant(queued, services);
  return Internal("unknown queued job kind '" + queued.kind + "'");
}

std::string AdmitVariant(const QueuedJob& queued, const JobServices& services,
                         gateway::JobStore* jobs, gateway::RedisJobQueue* queue) {
  auto refuse = [&](const Status& status) {
    HttpResponse refused = gateway::ErrorResponse(status, queued.request_id);
    return gateway::FormatAdmissionVerdict(refused.status, queued.job_id, refused.body);
  };
  auto c = VariantCaseFor(queued, services);
  if (!c.ok()) return refuse(c.status());

  gateway::JobRecord record;
  record.job_id = queued.job_id;
  record.request_id = queued.request_id;
  record.owner = queued.client_id;
  record.task = std::string(gateway::kVariantWorkflow);
  record.mode = "async";
  record.queued = true;
  record.state = gateway::JobState::kAccepted;
  auto standing = jobs->CreateOrFind(record, gateway::VariantCaseIdentity(queued.client_id, *c));
  if (!standing.ok()) return refuse(standing.status());
  if (*standing != queued.job_id) {
    // The same case is running or done: no second run.
    return gateway::FormatAdmissionVerdict(202, *standing, "");
  }
  QueuedJob job = queued;
  job.facts["etag"] = c->object.etag;
  if (Status queued_ok = queue->Enqueue(job); !queued_ok.ok()) {
    HttpResponse refused = gateway::ErrorResponse(queued_ok, queued.request_id);
    jobs->Finish(queued.job_id, refused.status, refused.content_type, refused.body);
    return gateway::FormatAdmissionVerdict(refused.status, queued.job_id, refused.body);
  }
  return gateway::FormatAdmissionVerdict(202, queued.job_id, "");
}

}  // namespace dnaserve::runner
