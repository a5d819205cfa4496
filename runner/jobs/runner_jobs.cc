#include "runner/jobs/runner_jobs.h"

#include <atomic>
#include <chrono>

#include "common/log.h"
#include "common/s3_grants.h"
#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/admission/predict_job.h"
#include "core/jobs/admission_verdict.h"
#include "dnaserve/jobs/v1/command.pb.h"
#include "runner/workflows/backend_expression_scorer.h"
#include "runner/workflows/find_genes.h"
#include "runner/workflows/find_genes_response.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/variant_answers.h"
#include "runner/workflows/ism.h"
#include "runner/workflows/variant_interpretation.h"
#include "runner/workflows/variant_response.h"
#include "runner/workflows/variant_score_batch.h"
#include "runner/workflows/variant_score_response.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {
namespace {

using core::Job;
using core::JobContext;
using core::JobOutput;
using core::QueuedJob;

class FindGenesJob : public Job {
 public:
  FindGenesJob(core::InferenceBackend* backend, core::AdmittedFindGenes admitted)
      : backend_(backend), admitted_(std::move(admitted)) {}

  StatusOr<JobOutput> Run(const JobContext& context) override {
    const FindGenesModels models{admitted_.annotation_model, admitted_.expression_model};
    auto result = RunFindGenes(admitted_.input, models, *backend_, context);
    if (!result.ok()) return result.status();
    JobOutput output;
    output.body = RenderFindGenesJson(admitted_.input, *result,
                                      {context.call.job_id, context.call.request_id});
    return output;
  }

 private:
  core::InferenceBackend* backend_;
  core::AdmittedFindGenes admitted_;
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
  VariantJob(const JobServices& services, VariantCase c)
      : services_(services), case_(std::move(c)) {}

  StatusOr<JobOutput> Run(const JobContext& context) override {
    const auto started = std::chrono::steady_clock::now();
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    const VariantResources& resources = *services_.variant;
    BackendExpressionScorer backend_scorer(services_.backend, services_.catalogue,
                                                    services_.executor,
                                                    resources.score_concurrency(), context.call);
    BoundedScorer scorer(&backend_scorer, services_.max_model_calls);
    auto result = RunVariantInterpretation(case_, resources, scorer, context);
    if (!result.ok()) {
      log::Info("variant_job_failed", {{"job_id", context.call.job_id},
                                       {"code", ErrorCodeName(result.status().code())},
                                       {"model_calls", backend_scorer.calls()},
                                       {"seconds", seconds()}});
      return result.status();
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
    const GenomeAssets* genome = resources.Genome(case_.request.genome_build);
    JobOutput output;
    output.body = RenderVariantJson(case_, *result, genome->catalogue.info(),
                                    {context.call.job_id, context.call.request_id});
    return output;
  }

 private:
  JobServices services_;
  VariantCase case_;
};

// The reference genomes of the variant workflow's resources (GRCh37 when configured).
class ResourceReferences : public ReferenceLookup {
 public:
  explicit ResourceReferences(const VariantResources* resources) : resources_(resources) {}
  const variant::ReferenceGenome* Find(const std::string& assembly) const override {
    const GenomeAssets* genome = resources_ ? resources_->Genome(assembly) : nullptr;
    return genome ? genome->reference.get() : nullptr;
  }
  std::vector<std::string> Names() const override {
    std::vector<std::string> names;
    if (Find(std::string(core::kGrch37))) names.emplace_back(core::kGrch37);
    return names;
  }

 private:
  const VariantResources* resources_;
};

// POST /v1/variants/score (variant_scoring.h).
class VariantScoreJob : public Job {
 public:
  VariantScoreJob(const JobServices& services, core::AdmittedVariantScore admitted)
      : services_(services), admitted_(std::move(admitted)) {}

  StatusOr<JobOutput> Run(const JobContext& context) override {
    ResourceReferences references(services_.variant);
    if (references.Names().empty()) {
      return Unavailable("variant scoring needs a reference genome, and this runner holds none "
                         "(DNASERVE_GRCH37_FASTA with DNASERVE_GRCH37_CATALOGUE)");
    }
    const GenomeAssets* grch37 = services_.variant->Genome(core::kGrch37);
    ScoringServices scoring{&references,        services_.catalogue,
                            services_.backend,  grch37 ? &grch37->catalogue : nullptr,
                            services_.executor, services_.variant->score_concurrency()};
    CachedVariantAnswers answers(services_.answer_cache);
    if (services_.answer_cache && services_.answer_cache->enabled()) scoring.answers = &answers;
    // A batch job's chunks recall and keep answers as a sync request does: a chunk's checkpoint
    // holds its results whether computed or recalled (the same bytes), so a resumed job and a
    // cold one write the same annotated VCF.
    if (admitted_.batch) return RunBatch(scoring, context);
    auto result = ScoreVariants(admitted_, scoring, context);
    answers.Flush();
    if (!result.ok()) return result.status();
    JobOutput output;
    output.body = RenderVariantScoreJson(admitted_.input, *result,
                                         std::string(core::kDefaultScoreAssembly),
                                         {context.call.job_id, context.call.request_id});
    return output;
  }

 private:
  StatusOr<JobOutput> RunBatch(const ScoringServices& scoring, const JobContext& context) {
    if (services_.jobs == nullptr) {
      return Unavailable("this runner cannot keep a batch job's files; resubmit");
    }
    return RunVariantScoreBatch(admitted_, {scoring, services_.jobs, services_.variant->work_dir()},
                                context);
  }

  JobServices services_;
  core::AdmittedVariantScore admitted_;
};

// The command a queue entry carries. An entry written by the release before commands carried
// the HTTP request instead: it is admitted here with the gateway's own code (core/admission),
// as that release's runners did, so no job is lost across an upgrade.
StatusOr<jobs::v1::JobCommand> CommandOf(const QueuedJob& queued, const JobServices& services) {
  jobs::v1::JobCommand command;
  if (!queued.command.empty()) {
    if (!command.ParseFromString(queued.command)) {
      return Internal("the queued job's command cannot be read");
    }
    return command;
  }
  const QueuedJob::Request& legacy = queued.legacy_request;
  core::CallInput call;
  call.body = legacy.body;
  if (!legacy.format.empty()) call.query_format = legacy.format;
  if (!legacy.accept.empty()) call.accept = legacy.accept;
  call.async = queued.mode == "async";
  if (queued.kind == "predict") {
    auto admitted = core::AdmitPredict(legacy.task, call, *services.catalogue);
    if (!admitted.ok()) return admitted.status();
    return core::PredictCommandFor(std::move(admitted).value());
  }
  if (queued.kind == "find_genes") {
    auto input = core::ValidateFindGenesBody(legacy.body);
    if (!input.ok()) return input.status();
    // That release resolved the models at admission and queued them as facts.
    return core::FindGenesCommandFor(core::AdmittedFindGenes{
        std::move(input).value(), queued.Fact("annotation_model"), queued.Fact("expression_model")});
  }
  if (queued.kind == "variant") {
    auto request = core::ValidateVariantBody(legacy.body);
    if (!request.ok()) return request.status();
    return core::VariantCommandFor(*request);
  }
  return Internal("unknown queued job kind '" + queued.kind + "'");
}

StatusOr<VariantCase> VariantCaseFor(const QueuedJob& queued, const JobServices& services,
                                     const jobs::v1::VariantCommand& command) {
  if (services.variant == nullptr) {
    return Unavailable("the genomic-variant-interpretation workflow is not set up on this runner");
  }
  // The grants its gateway queued with the job (none when absent: such a job reads nothing).
  S3Access access;
  access.client_id = queued.client_id;
  access.grants.read = DecodeS3Grants(queued.Fact(std::string(kS3ReadFact)));
  access.grants.write = DecodeS3Grants(queued.Fact(std::string(kS3WriteFact)));
  return AdmitVariantCase(core::VariantFromCommand(command), *services.variant, queued.job_id,
                          std::move(access));
}

StatusOr<std::unique_ptr<Job>> BuildVariant(const QueuedJob& queued, const JobServices& services,
                                            const jobs::v1::VariantCommand& command) {
  auto c = VariantCaseFor(queued, services, command);
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
  auto command = CommandOf(queued, services);
  if (!command.ok()) return command.status();
  switch (command->kind_case()) {
    case jobs::v1::JobCommand::kPredict: {
      auto admitted = core::PredictFromCommand(std::move(*command->mutable_predict()));
      if (!admitted.ok()) return admitted.status();
      return core::MakePredictJob(services.backend, std::move(admitted).value());
    }
    case jobs::v1::JobCommand::kFindGenes:
      return std::unique_ptr<Job>(new FindGenesJob(
          services.backend, core::FindGenesFromCommand(std::move(*command->mutable_find_genes()))));
    case jobs::v1::JobCommand::kVariant:
      return BuildVariant(queued, services, command->variant());
    case jobs::v1::JobCommand::kVariantScore:
      return std::unique_ptr<Job>(new VariantScoreJob(
          services, core::VariantScoreFromCommand(command->variant_score())));
    case jobs::v1::JobCommand::kInterval:
      return BuildIntervalJob(std::move(*command->mutable_interval()), services.backend,
                              services.variant, {services.answer_cache, services.catalogue,
                               services.interval_answer_max_bytes});
    case jobs::v1::JobCommand::kIsm:
      return BuildIsmJob(command->ism(), services.backend, services.catalogue, services.variant);
    case jobs::v1::JobCommand::KIND_NOT_SET:
      break;
  }
  return BadRequest("the queued job's command is of a kind this release does not know");
}

std::string AdmitVariant(const QueuedJob& queued, const JobServices& services,
                         core::JobStore* jobs, core::RedisJobQueue* queue) {
  auto refuse = [&](const Status& status) {
    return core::RefusedVerdict(queued.job_id, status, queued.request_id);
  };
  auto command = CommandOf(queued, services);
  if (!command.ok()) return refuse(command.status());
  if (!command->has_variant()) return refuse(Internal("a variant admission without its request"));
  auto c = VariantCaseFor(queued, services, command->variant());
  if (!c.ok()) return refuse(c.status());

  core::JobRecord record;
  record.job_id = queued.job_id;
  record.request_id = queued.request_id;
  record.owner = queued.client_id;
  record.task = std::string(core::kVariantWorkflow);
  record.mode = "async";
  record.queued = true;
  record.state = core::JobState::kAccepted;
  auto standing = jobs->CreateOrFind(record, VariantCaseIdentity(queued.client_id, *c));
  if (!standing.ok()) return refuse(standing.status());
  if (*standing != queued.job_id) {
    // The same case is running or done: no second run.
    return core::AcceptedVerdict(*standing);
  }
  QueuedJob job = queued;
  job.facts["etag"] = c->object.etag;
  // An admission entry of the release before carried the request: the job carries the command.
  if (job.command.empty()) job.command = command->SerializeAsString();
  job.legacy_request = {};
  if (Status queued_ok = queue->Enqueue(job); !queued_ok.ok()) {
    (void)jobs->Fail(queued.job_id, queued_ok, queued.request_id);
    return refuse(queued_ok);
  }
  return core::AcceptedVerdict(queued.job_id);
}

}  // namespace dnaserve::runner
