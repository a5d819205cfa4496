#include "runner/workflows/interval_job.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "common/sequence.h"
#include "common/text.h"
#include "common/tss_window.h"
#include "core/admission/interval_commands.h"
#include "core/admission/predict_job.h"
#include "core/render/json_writer.h"
#include "core/validation/json_walk.h"
#include "core/validation/variant_request.h"
#include "runner/genome/contig_name.h"
#include "runner/workflows/find_genes.h"
#include "runner/workflows/find_genes_response.h"
#include "runner/workflows/interval_answers.h"
#include "runner/workflows/interval_coordinates.h"
#include "runner/workflows/interval_edges.h"

namespace dnaserve::runner {
namespace {

Status IntervalError(const char* field, std::string message) {
  return core::ValidationFailedStatus(
      {FieldError{{"body", "interval", field}, std::move(message), "value_error"}});
}

class IntervalJob : public core::Job {
 public:
  IntervalJob(core::InferenceBackend* backend, const VariantResources* resources,
              IntervalAnswerServices answers,
              std::variant<core::AdmittedPredict, core::AdmittedFindGenes> admitted)
      : backend_(backend),
        resources_(resources),
        answers_(answers),
        admitted_(std::move(admitted)) {}

  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    const core::GenomeInterval& interval =
        std::holds_alternative<core::AdmittedPredict>(admitted_)
            ? *std::get<core::AdmittedPredict>(admitted_).input.interval
            : *std::get<core::AdmittedFindGenes>(admitted_).input.interval;
    auto resolved = ResolveInterval(interval, resources_);
    if (!resolved.ok()) return resolved.status();
    const variant::ReferenceGenome& reference = *resources_->Genome(core::kGrch37)->reference;
    const IntervalFrame frame = IntervalFrame::Of(interval);
    const std::string echo = IntervalEcho(*resolved);
    // Every worker call goes through the answer cache (interval_answers.h): the answer is
    // public, the bases being the reference's.
    IntervalAnswerBackend backend(backend_, answers_.cache, answers_.catalogue,
                                  PlaceOf(*resolved), answers_.max_answer_bytes);
    StatusOr<core::JobOutput> output = [&]() -> StatusOr<core::JobOutput> {
      if (auto* predict = std::get_if<core::AdmittedPredict>(&admitted_)) {
        if (predict->input.task != Task::kExpression) {
          return RunFlankedPredict(backend, std::move(*predict), *resolved, reference, frame,
                                   echo, context);
        }
        auto bases = PredictBases(*resolved, reference, predict->input);
        if (!bases.ok()) return bases.status();
        return RunPredict(backend, std::move(*predict), std::move(bases).value(), frame, echo,
                          context);
      }
      auto flanks = IntervalFlanks(*resolved, reference);
      if (!flanks.ok()) return flanks.status();
      return RunFindGenes(backend, std::move(std::get<core::AdmittedFindGenes>(admitted_)),
                          std::move(flanks).value(), frame, echo, context);
    }();
    if (output.ok() && output->content_type == "application/json") {
      output->body = WithMetaCached(std::move(output->body), backend.all_cached());
    }
    return output;
  }

 private:
  static IntervalPlace PlaceOf(const ResolvedInterval& resolved) {
    return IntervalPlace{resolved.assembly,       resolved.interval.contig,
                         resolved.reference_contig, resolved.interval.start,
                         resolved.interval.end,    resolved.interval.strand};
  }

  // What the worker sees: expression scores its 9,198 bp window alone, read from the reference
  // around the TSS (it may reach past the interval: the TSS was given as a genome position near
  // an edge); every other task the interval's bases (RunFlankedPredict widens them).
  static StatusOr<std::string> PredictBases(const ResolvedInterval& resolved,
                                            const variant::ReferenceGenome& reference,
                                            const core::ValidatedPredict& input) {
    if (input.task == Task::kExpression) {
      return AnalysedSpanBases(resolved, reference, input.scored_start, input.scored_end);
    }
    return IntervalBases(resolved, reference);
  }

  // Every task but expression is sent the interval with the model's context of reference on
  // each side, and its answer is cut back to the interval (interval_edges.h).
  StatusOr<core::JobOutput> RunFlankedPredict(core::InferenceBackend& backend,
                                              core::AdmittedPredict admitted,
                                              const ResolvedInterval& resolved,
                                              const variant::ReferenceGenome& reference,
                                              const IntervalFrame& frame, const std::string& echo,
                                              const core::JobContext& context) {
    const Task task = admitted.input.task;
    const int64_t context_bp =
        ModelContextBp(task, admitted.input.request.model(), answers_.catalogue, backend_);
    auto flanks = IntervalFlanks(resolved, reference, context_bp);
    if (!flanks.ok()) return flanks.status();
    const int64_t length = resolved.interval.length();
    std::string bases = flanks->bases.substr(static_cast<size_t>(flanks->before),
                                             static_cast<size_t>(length));
    FlankedIntervalBackend flanked(&backend, std::move(flanks->bases), flanks->before, length);
    return RunPredict(flanked, std::move(admitted), std::move(bases), frame, echo, context);
  }

  StatusOr<core::JobOutput> RunPredict(core::InferenceBackend& backend,
                                       core::AdmittedPredict admitted, std::string bases,
                                       const IntervalFrame& frame, const std::string& echo,
                                       const core::JobContext& context) {
    const Task task = admitted.input.task;
    const OutputFormat format = admitted.format;
    admitted.input.request.set_sequence(std::move(bases));
    auto output = core::MakePredictJob(&backend, std::move(admitted))->Run(context);
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

  StatusOr<core::JobOutput> RunFindGenes(core::InferenceBackend& backend,
                                         core::AdmittedFindGenes admitted, RegionFlanks flanks,
                                         const IntervalFrame& frame, const std::string& echo,
                                         const core::JobContext& context) {
    admitted.input.sequence = flanks.bases.substr(static_cast<size_t>(flanks.before),
                                                  static_cast<size_t>(admitted.input.sequence_length));
    const FindGenesModels models{admitted.annotation_model, admitted.expression_model};
    auto result = runner::RunFindGenes(admitted.input, models, backend, context, &flanks);
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
  IntervalAnswerServices answers_;
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

StatusOr<std::string> AnalysedSpanBases(const ResolvedInterval& resolved,
                                        const variant::ReferenceGenome& reference, int64_t a,
                                        int64_t b) {
  const auto [start, end] = IntervalFrame::Of(resolved.interval).Span(a, b);
  auto bases = reference.Fetch(resolved.reference_contig, start, end);
  if (!bases.ok()) return bases.status();
  if (resolved.interval.strand == '-') return ReverseComplement(*bases);
  return bases;
}

StatusOr<RegionFlanks> IntervalFlanks(const ResolvedInterval& resolved,
                                      const variant::ReferenceGenome& reference) {
  // One base more than either side of a TSS window needs (tss_window.h's drawing).
  return IntervalFlanks(resolved, reference, kExpressionHalfWindowBp + 1);
}

StatusOr<RegionFlanks> IntervalFlanks(const ResolvedInterval& resolved,
                                      const variant::ReferenceGenome& reference,
                                      int64_t flank_bp) {
  const int64_t flank = std::max<int64_t>(0, flank_bp);
  const IntervalFrame frame = IntervalFrame::Of(resolved.interval);
  // The flanks in the analysed orientation: on '-' the one before the region is the contig's
  // stretch after the interval.
  const int64_t room_before_on_contig = std::min(flank, frame.begin);
  const int64_t room_after_on_contig = std::min(flank, resolved.contig_length - frame.end);
  RegionFlanks out;
  out.before = frame.minus ? room_after_on_contig : room_before_on_contig;
  const int64_t after = frame.minus ? room_before_on_contig : room_after_on_contig;
  const int64_t length = resolved.interval.length();
  auto bases = AnalysedSpanBases(resolved, reference, -out.before, length + after);
  if (!bases.ok()) return bases.status();
  out.bases = std::move(bases).value();
  return out;
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
                                                      const VariantResources* resources,
                                                      IntervalAnswerServices answers) {
  auto admitted = core::FromIntervalCommand(std::move(command));
  if (!admitted.ok()) return admitted.status();
  return std::unique_ptr<core::Job>(
      new IntervalJob(backend, resources, answers, std::move(admitted).value()));
}

}  // namespace dnaserve::runner
