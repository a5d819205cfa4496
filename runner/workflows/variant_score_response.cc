#include "runner/workflows/variant_score_response.h"

#include <cmath>

#include "core/render/json_writer.h"

namespace dnaserve::runner {
namespace {

void WriteValue(core::JsonWriter& w, std::string_view key, const SpliceDeltaValue& v) {
  w.Key(key);
  w.StartObject();
  w.Field("score", RoundScore(v.score));
  w.Field("position", v.offset);
  w.Field("ref", RoundScore(v.ref));
  w.Field("alt", RoundScore(v.alt));
  w.EndObject();
}

void WriteStrand(core::JsonWriter& w, std::string_view key, const SpliceDelta& d) {
  w.Key(key);
  w.StartObject();
  WriteValue(w, "acceptor_gain", d.acceptor_gain);
  WriteValue(w, "acceptor_loss", d.acceptor_loss);
  WriteValue(w, "donor_gain", d.donor_gain);
  WriteValue(w, "donor_loss", d.donor_loss);
  w.EndObject();
}

void WriteSplice(core::JsonWriter& w, const SpliceDelta& plus, const SpliceDelta& minus) {
  // Compared after rounding, so the choice never rests on a difference nobody can see.
  const bool use_minus = RoundScore(minus.Max()) > RoundScore(plus.Max());
  const SpliceDelta& d = use_minus ? minus : plus;
  w.Key("splice");
  w.StartObject();
  w.Field("strand", use_minus ? "-" : "+");
  w.Field("DS_AG", RoundScore(d.acceptor_gain.score));
  w.Field("DS_AL", RoundScore(d.acceptor_loss.score));
  w.Field("DS_DG", RoundScore(d.donor_gain.score));
  w.Field("DS_DL", RoundScore(d.donor_loss.score));
  w.Field("DP_AG", d.acceptor_gain.offset);
  w.Field("DP_AL", d.acceptor_loss.offset);
  w.Field("DP_DG", d.donor_gain.offset);
  w.Field("DP_DL", d.donor_loss.offset);
  w.Field("DS_max", RoundScore(d.Max()));
  WriteStrand(w, "plus", plus);
  WriteStrand(w, "minus", minus);
  w.EndObject();
}

void WriteResult(core::JsonWriter& w, size_t index, const ScoredVariant& s) {
  const core::RequestedVariant& v = s.variant;
  w.StartObject();
  w.Field("index", static_cast<int64_t>(index));
  w.Field("input", v.input);
  w.Key("variant");
  w.StartObject();
  w.Field("assembly", v.assembly);
  w.Field("contig", v.contig);
  w.Field("position", v.position);
  w.Field("ref", v.ref);
  w.Field("alt", v.alt);
  w.EndObject();
  if (s.problem) {
    w.Key("error");
    w.StartObject();
    w.Field("code", s.problem->code);
    w.Field("message", s.problem->message);
    w.EndObject();
  } else if (s.splice_plus && s.splice_minus) {
    WriteSplice(w, *s.splice_plus, *s.splice_minus);
  }
  w.EndObject();
}

}  // namespace

double RoundScore(double value) {
  const double rounded = std::round(value * 1e4) / 1e4;
  return rounded == 0.0 ? 0.0 : rounded;
}

std::string RenderVariantScoreJson(const core::ValidatedVariantScore& request,
                                   const VariantScoreResult& result, const std::string& assembly,
                                   const core::ResponseIds& ids) {
  (void)request;
  int64_t errors = 0;
  for (const auto& s : result.variants) errors += s.problem ? 1 : 0;
  const auto total = static_cast<int64_t>(result.variants.size());
  core::JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("task", core::kVariantScoreTask);
  w.Field("assembly", assembly);
  w.Key("scorers");
  w.StartObject();
  if (result.splice) {
    w.Key("splice");
    w.StartObject();
    w.Field("model", result.splice->model);
    w.Field("package_digest", result.splice->package_digest);
    w.Field("distance", result.splice->distance);
    w.Field("flank_bp", result.splice->flank_bp);
    w.Field("strands", "both");
    w.EndObject();
  }
  w.EndObject();
  w.Key("counts");
  w.StartObject();
  w.Field("variants", total);
  w.Field("scored", total - errors);
  w.Field("errors", errors);
  w.EndObject();
  w.Key("results");
  w.StartArray();
  for (size_t i = 0; i < result.variants.size(); ++i) WriteResult(w, i, result.variants[i]);
  w.EndArray();
  w.EndObject();

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", core::kVariantScoreTask);
  w.Field("model", result.splice ? result.splice->model : std::string());
  w.Field("package_digest", result.splice ? result.splice->package_digest : std::string());
  w.Field("cold_start", result.cold_start);
  w.Field("model_load_time_ms", result.model_load_time_ms);
  w.Field("inference_time_ms", result.inference_time_ms);
  w.Field("model_calls", result.model_calls);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::runner
