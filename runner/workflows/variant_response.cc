#include "runner/workflows/variant_response.h"

#include "core/render/json_writer.h"

namespace dnaserve::runner {
namespace {

void WriteObjectRef(core::JsonWriter& w, std::string_view key, const std::string& uri) {
  w.Key(key);
  w.StartObject();
  w.Field("type", core::kS3ObjectInput);
  w.Field("uri", uri);
  w.EndObject();
}

void WriteCounts(core::JsonWriter& w, const variant::AnnotationCounts& counts) {
  w.Key("counts");
  w.StartObject();
  w.Field("variants_in", counts.variants_in);
  w.Field("annotated", counts.annotated);
  w.Field("not_run", counts.not_run);
  w.Field("annotated_alleles", counts.annotated_alleles);
  w.Field("associations", counts.associations);
  w.Key("not_run_reasons");
  w.StartObject();
  for (const auto& [reason, count] : counts.not_run_reasons) {
    if (count > 0) w.Field(reason, count);
  }
  w.EndObject();
  w.Field("skipped_alleles", counts.skipped_alleles);
  w.EndObject();
}

void WriteStrings(core::JsonWriter& w, std::string_view key, const std::vector<std::string>& values) {
  w.Key(key);
  w.StartArray();
  for (const auto& v : values) w.String(v);
  w.EndArray();
}

}  // namespace

std::string RenderVariantJson(const VariantCase& c, const VariantRunResult& result,
                              const variant::CatalogueInfo& catalogue, const core::ResponseIds& ids) {
  core::JsonWriter w;
  w.StartObject();

  w.Key("data");
  w.StartObject();
  w.Field("task", core::kVariantWorkflow);
  w.Field("status", "ok");
  WriteObjectRef(w, "output", result.output.ToString());
  if (c.request.client_ref) {
    w.Field("client_ref", *c.request.client_ref);
  } else {
    w.NullField("client_ref");
  }
  WriteCounts(w, result.annotation.counts);
  w.EndObject();

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", core::kVariantWorkflow);
  w.Field("genome_build", c.request.genome_build);
  WriteObjectRef(w, "input", c.request.uri);
  w.Key("gene_annotation");
  w.StartObject();
  w.Field("build", catalogue.build);
  w.Field("md5", catalogue.md5);
  w.Field("start_sites", catalogue.start_sites);
  w.Field("transcripts", catalogue.transcripts);
  w.EndObject();
  w.Key("options_applied");
  w.StartObject();
  w.Field("window", c.request.window);
  WriteStrings(w, "tissues", c.request.tissues);
  if (c.panel) {
    WriteStrings(w, "genes", c.panel->gene_ids);
  } else {
    w.NullField("genes");
  }
  w.EndObject();
  // Values are model output only when this is present and the VCF has ##GEXModel: both come
  // from the same AnnotateResult::model, set only when something was scored.
  if (result.annotation.model) w.Field("model", *result.annotation.model);
  w.EndObject();

  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::runner
