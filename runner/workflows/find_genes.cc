#include "runner/workflows/find_genes.h"

#include <algorithm>

namespace dnaserve::runner {
namespace {

namespace pb = worker::v1;

constexpr double kAnnotationShare = 50.0;  // percent of the progress bar

// The same status with the stage named in front of its message (code, details and Retry-After
// are what the client acts on, so they are kept).
Status InStage(const Status& status, const std::string& stage) {
  Status out(status.code(), stage + ": " + status.message(), status.details());
  if (status.retry_after_seconds()) out.set_retry_after_seconds(*status.retry_after_seconds());
  return out;
}

Status Cancelled() { return Unavailable("the job was cancelled"); }

core::ValidatedPredict AnnotationStageInput(const core::ValidatedFindGenes& input, const std::string& model) {
  core::ValidatedPredict stage;
  stage.task = Task::kAnnotation;
  stage.request.set_model(model);
  stage.request.set_sequence(input.sequence);
  stage.request.set_sequence_name(input.sequence_name);
  *stage.request.mutable_annotation() = input.annotation;
  // The response embeds the stage's JSON data, formats (GFF3, BED) included.
  stage.request.set_result_format(pb::RESULT_FORMAT_JSON);
  stage.sequence_name = input.sequence_name;
  stage.sequence_length = input.sequence_length;
  return stage;
}

}  // namespace

void StageTimings::Add(const pb::PredictResult& result) {
  if (result.cold_start()) {
    cold_start = true;
    model_load_time_ms += std::max<int64_t>(0, result.model_load_time_ms());
  }
  inference_time_ms += std::max<int64_t>(0, result.inference_time_ms());
}

int64_t FindGenesResult::genes_predicted() const {
  return std::count_if(genes.begin(), genes.end(), [](const auto& g) { return !g.skipped; });
}

int64_t FindGenesResult::genes_skipped() const {
  return std::count_if(genes.begin(), genes.end(), [](const auto& g) { return g.skipped; });
}

StatusOr<FindGenesResult> RunFindGenes(const core::ValidatedFindGenes& input,
                                       const FindGenesModels& models, core::InferenceBackend& backend,
                                       const core::JobContext& context) {
  FindGenesResult out;
  out.models = models;
  out.annotation_input = AnnotationStageInput(input, models.annotation);

  // ---- annotation stage
  if (context.Cancelled()) return Cancelled();
  context.Progress(0, "annotation: running");
  auto on_progress = [&](const pb::Progress& p) {
    if (p.windows_total() <= 0) return;
    context.Progress(kAnnotationShare * p.windows_done() / p.windows_total(),
                     "annotation: processed " + std::to_string(p.windows_done()) + " of " +
                         std::to_string(p.windows_total()) + " windows");
  };
  auto annotated =
      backend.Predict(Task::kAnnotation, out.annotation_input.request, context.call, on_progress);
  out.annotation_input.request.clear_sequence();  // not needed again; the region is in `input`
  if (!annotated.ok()) return InStage(annotated.status(), "annotation stage");
  out.annotation = std::move(annotated).value();
  if (!out.annotation.model().empty()) out.models.annotation = out.annotation.model();
  out.annotation_timings.Add(out.annotation);

  // ---- expression stage, one gene (transcript) at a time
  const auto& transcripts = out.annotation.annotation().transcripts();
  const int total = transcripts.size();
  const int64_t offset = input.annotation.coordinate_offset();
  context.Progress(kAnnotationShare, "expression: " + std::to_string(total) + " genes found");
  pb::PredictRequest request;
  request.set_model(models.expression);
  request.mutable_expression()->set_description(input.description);
  request.set_result_format(pb::RESULT_FORMAT_JSON);  // the numbers only: expression has no text
  for (int i = 0; i < total; ++i) {
    const pb::Transcript& t = transcripts[i];
    GeneExpression gene;
    gene.gene_index = i;
    gene.gene_name = t.id();
    gene.strand = t.strand();
    gene.tss_position = t.tss_position();
    const char strand = t.strand().size() == 1 ? t.strand()[0] : '?';
    gene.window = PlanTssWindow(input.sequence_length, offset, t.tss_position(), strand);
    if (gene.window.usable) {
      if (context.Cancelled()) return Cancelled();
      request.set_sequence(CutTssWindow(input.sequence, gene.window, strand));
      request.set_sequence_name(t.id());
      auto predicted = backend.Predict(Task::kExpression, request, context.call, nullptr);
      if (!predicted.ok()) {
        return InStage(predicted.status(), "expression stage (gene " + t.id() + ")");
      }
      if (!predicted->model().empty()) out.models.expression = predicted->model();
      out.expression_timings.Add(*predicted);
      gene.expression_log_tpm = predicted->expression().expression_log_tpm();
      if (!out.description_match && predicted->expression().has_description_match()) {
        out.description_match = predicted->expression().description_match();
      }
    } else {
      gene.skipped = true;
      gene.skip_reason = gene.window.skip_reason;
    }
    out.genes.push_back(std::move(gene));
    context.Progress(kAnnotationShare + (100.0 - kAnnotationShare) * (i + 1) / total,
                     "expression: " + std::to_string(i + 1) + " of " + std::to_string(total) +
                         " genes");
  }
  if (total == 0) context.Progress(100, "no genes found");
  return out;
}

}  // namespace dnaserve::runner
