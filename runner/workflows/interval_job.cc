#include "runner/workflows/interval_job.h"

#include <utility>
#include <variant>

#include "common/sequence.h"
#include "common/text.h"
#include "core/admission/interval_commands.h"
#include "core/admission/predict_job.h"
#include "core/render/json_writer.h"
#include "core/validation/json_walk.h"
#include "core/validation/variant_request.h"
#include "runner/genome/contig_name.h"
#include "runner/workflows/find_genes.h"
#include "runner/workflows/find_genes_response.h"
#include "runner/workflows/interval_coordinates.h"

namespace dnaserve::runner {
namespace {

Status IntervalError(const char* field, std::string message) {
  return core::ValidationFailedStatus(
      {FieldError{{"body", "interval", field}, std::move(message), "value_error"}});
}

class IntervalJob : public core::Job {
 public:
  IntervalJob(core::InferenceBackend* backend, const VariantResources* resources,
              std::variant<core::AdmittedPredict, core::AdmittedFindGenes> admitted)
      : backend_(backend), resources_(resources), admitted_(std::move(admitted)) {}

  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    const core::GenomeInterval& interval =
        std::holds_alternative<core::AdmittedPredict>(admitted_)
            ? *std::get<core::AdmittedPredict>(admitted_).input.interval
            : *std::get<core::AdmittedFindGenes>(admitted_).input.interval;
    auto resolved = ResolveInterval(interval, resources_);
    if (!resolved.ok()) return resolved.status();
    auto bases = IntervalBases(*resolved, *resources_->Genome(core::kGrch37)->reference);
    if (!bases.ok()) return bases.status();
    const IntervalFrame frame = IntervalFrame::Of(interval);
    const std::string echo = IntervalEcho(*resolved);
    if (auto* predict = std::get_if<core::AdmittedPredict>(&admitted_)) {
      return RunPredict(std::move(*predict), std::move(bases).value(), frame, echo, context);
    }
    return RunFindGenes(std::move(std::get<core::AdmittedFindGenes>(admitted_)),
                        std::move(bases).value(), frame, echo, context);
  }

 private:
  StatusOr<core::JobOutput> RunPredict(core::AdmittedPredict admitted, std::string bases,
                                       const IntervalFrame& frame, const std::string& echo,
                                       const core::JobContext& context) {
    const Task task = admitted.input.task;
    const OutputFormat format = admitted.format;
    if (task == Task::kExpression) {
      core::SliceExpressionWindow(bases, &admitted.input);
    } else {
      admitted.input.request.set_sequence(std::move(bases));
    }
    auto output = core::MakePredictJob(backend_, std::move(admitted))->Run(context);
    if (!output.ok()) return output.status();
    if (format == OutputFormat::kJson) {
      auto mapped = MapPredictJson(task, output->body, frame, echo);
      if (!mapped.ok()) return mapped.status();
      output->body = std::move(mapped).value();
    } else {
      output->body = MapTrackText(format, output->body, frame);
    }
    return output;
  }

  StatusOr<core::JobOutput> RunFindGenes(core::AdmittedFindGenes admitted, std::string bases,
                                         const IntervalFrame& frame, const std::string& echo,
                                         const core::JobContext& context) {
    admitted.input.sequence = std::move(bases);
    const FindGenesModels models{admitted.annotation_model, admitted.expression_model};
    auto result = runner::RunFindGenes(admitted.input, models, *backend_, context);
    if (!result.ok()) return result.status();
    const std::string body = RenderFindGenesJson(admitted.input, *result,
                                                 {context.call.job_id, context.call.request_id});
    auto mapped = MapFindGenesJson(body, frame, echo);
    if (!mapped.ok()) return mapped.status();
    core::JobOutput output;
    output.body = std::move(mapped).value();
    return output;
  }

  core::InferenceBackend* backend_;
  const VariantResources* resources_;
  std::variant<core::AdmittedPredict, core::AdmittedFindGenes> admitted_;
};

}  // namespace

StatusOr<ResolvedInterval> ResolveInterval(const core::GenomeInterval& interval,
                                           const VariantResources* resources) {
  const GenomeAssets* genome = resources ? resources->Genome(core::kGrch37) : nullptr;
  if (genome == nullptr || !genome->reference) {
    return Unavailable("interval input needs a reference genome, and this runner holds none "
                       "(DNASERVE_GRCH37_FASTA with DNASERVE_GRCH37_CATALOGUE)");
  }
  if (!EqualsIgnoringAsciiCase(interval.assembly, core::kGrch37)) {
    return IntervalError("assembly", "assembly '" + interval.assembly +
                                         "' is not held by this service; held: " +
                                         std::string(core::kGrch37) + " (GET /v1/genomes)");
  }
  ResolvedInterval out;
  out.interval = interval;
  out.assembly = std::string(core::kGrch37);
  const variant::ReferenceGenome& reference = *genome->reference;
  const std::string key = variant::AssemblyContigKey(out.assembly, interval.contig);
  auto length = reference.ContigLength(key);
  if (!length) {
    return IntervalError("contig", "contig '" + interval.contig + "' is not in " + out.assembly +
                                       "; GET /v1/genomes lists its contigs and their aliases");
  }
  for (const auto& contig : reference.Contigs()) {
    if (variant::ContigKey(contig.name) == key) out.reference_contig = contig.name;
  }
  out.contig_length = *length;
  if (interval.end > *length) {
    return IntervalError("end", "the interval " + interval.Label() + " ends past the last base of " +
                                    out.assembly + " " + out.reference_contig + " (" +
                                    GroupedThousands(*length) + " bp)");
  }
  return out;
}

StatusOr<std::string> IntervalBases(const ResolvedInterval& resolved,
                                    const variant::ReferenceGenome& reference) {
  auto bases = reference.Fetch(resolved.reference_contig, resolved.interval.start - 1,
                               resolved.interval.end);
  if (!bases.ok()) return bases.status();
  if (resolved.interval.strand == '-') return ReverseComplement(*bases);
  return bases;
}

void WriteIntervalEcho(core::JsonWriter& w, const ResolvedInterval& resolved) {
  w.StartObject();
  w.Field("assembly", resolved.assembly);
  w.Field("contig", resolved.interval.contig);
  w.Field("reference_contig", resolved.reference_contig);
  w.Field("start", resolved.interval.start);
  w.Field("end", resolved.interval.end);
  w.Field("strand", std::string(1, resolved.interval.strand));
  w.Field("length", resolved.interval.length());
  w.EndObject();
}

std::string IntervalEcho(const ResolvedInterval& resolved) {
  core::JsonWriter w;
  WriteIntervalEcho(w, resolved);
  return w.Take();
}

StatusOr<std::unique_ptr<core::Job>> BuildIntervalJob(jobs::v1::IntervalCommand command,
                                                      core::InferenceBackend* backend,
                                                      const VariantResources* resources) {
  auto admitted = core::FromIntervalCommand(std::move(command));
  if (!admitted.ok()) return admitted.status();
  return std::unique_ptr<core::Job>(
      new IntervalJob(backend, resources, std::move(admitted).value()));
}

}  // namespace dnaserve::runner
