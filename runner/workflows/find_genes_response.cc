#include "runner/workflows/find_genes_response.h"

#include <cmath>

#include "core/render/json_writer.h"
#include "core/render/predict_data.h"

namespace dnaserve::runner {
namespace {

void WriteTimings(core::JsonWriter& w, const StageTimings& t) {
  w.StartObject();
  w.Field("cold_start", t.cold_start);
  w.Field("model_load_time_ms", t.cold_start ? t.model_load_time_ms : int64_t{0});
  w.Field("inference_time_ms", t.inference_time_ms);
  w.EndObject();
}

void WriteSummary(core::JsonWriter& w, const FindGenesResult& result) {
  int64_t padded = 0;
  int64_t scored = 0;
  double sum = 0;
  double best = 0;
  for (const auto& gene : result.genes) {
    if (gene.skipped) continue;
    if (gene.window.padded_bp() > 0) ++padded;
    if (!std::isfinite(gene.expression_log_tpm)) continue;
    best = scored == 0 ? gene.expression_log_tpm : std::max(best, gene.expression_log_tpm);
    sum += gene.expression_log_tpm;
    ++scored;
  }
  w.StartObject();
  w.Field("genes_found", static_cast<int64_t>(result.genes.size()));
  w.Field("genes_predicted", result.genes_predicted());
  w.Field("genes_skipped", result.genes_skipped());
  w.Field("genes_padded", padded);
  if (scored > 0) {
    w.Field("max_expression", best);
    w.Field("mean_expression", sum / static_cast<double>(scored));
  } else {
    w.NullField("max_expression");
    w.NullField("mean_expression");
  }
  w.EndObject();
}

void WriteGene(core::JsonWriter& w, const GeneExpression& gene) {
  w.StartObject();
  w.Field("gene_index", gene.gene_index);
  w.Field("gene_name", gene.gene_name);
  w.Field("strand", gene.strand);
  w.Field("tss_position", gene.tss_position);
  w.Field("centered_sequence_length", gene.window.region_end - gene.window.region_start);
  w.Field("padded_bp", gene.window.padded_bp());
  if (gene.skipped) {
    w.NullField("expression");
    w.NullField("expression_tpm");
  } else {
    w.Field("expression", gene.expression_log_tpm);
    w.Field("expression_tpm", core::ExpressionTpm(gene.expression_log_tpm));
  }
  w.Field("skipped", gene.skipped);
  if (gene.skipped) {
    w.Field("skip_reason", gene.skip_reason);
  } else {
    w.NullField("skip_reason");
  }
  w.EndObject();
}

}  // namespace

std::string RenderFindGenesJson(const core::ValidatedFindGenes& input, const FindGenesResult& result,
                                const core::ResponseIds& ids) {
  const FindGenesModels& models = result.models;
  const StageTimings& a = result.annotation_timings;
  const StageTimings& e = result.expression_timings;
  core::JsonWriter w;
  w.StartObject();

  w.Key("data");
  w.StartObject();
  w.Field("task", core::kFindGenesWorkflow);
  w.Field("annotation_model", models.annotation);
  w.Field("expression_model", models.expression);
  w.Key("input");
  w.StartObject();
  w.Field("sequence_name", input.sequence_name);
  w.Field("description", input.description);
  w.EndObject();
  w.Key("summary");
  WriteSummary(w, result);
  w.Key("annotation");
  core::WritePredictData(w, result.annotation_input, result.annotation);
  w.Key("expression_predictions");
  w.StartArray();
  for (const auto& gene : result.genes) WriteGene(w, gene);
  w.EndArray();
  w.EndObject();

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", core::kFindGenesWorkflow);
  w.Field("model", models.annotation + "+" + models.expression);
  w.Field("cold_start", a.cold_start || e.cold_start);
  w.Field("model_load_time_ms", (a.cold_start ? a.model_load_time_ms : int64_t{0}) +
                                    (e.cold_start ? e.model_load_time_ms : int64_t{0}));
  w.Field("inference_time_ms", a.inference_time_ms + e.inference_time_ms);
  w.Field("sequence_length", input.sequence_length);
  w.Field("annotation_model", models.annotation);
  w.Field("expression_model", models.expression);
  w.Key("annotation");
  WriteTimings(w, a);
  w.Key("expression");
  WriteTimings(w, e);
  w.Key("task_specific_counts");
  w.StartObject();
  w.Field("genes_found", static_cast<int64_t>(result.genes.size()));
  w.Field("genes_predicted", result.genes_predicted());
  w.Field("genes_skipped", result.genes_skipped());
  w.EndObject();
  w.Key("description_match");
  core::WriteDescriptionMatch(w, result.description_match ? &*result.description_match : nullptr);
  w.EndObject();

  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::runner
