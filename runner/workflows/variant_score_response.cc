#include "runner/workflows/variant_score_response.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <rapidjson/document.h>

#include "core/render/json_writer.h"
#include "runner/variant/annotation_engine.h"
#include "runner/workflows/variant_quantile_json.h"

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

void WriteExpression(core::JsonWriter& w, const std::vector<ExpressionGene>& genes,
                     const ExpressionScorerInfo& info) {
  w.Key("expression");
  w.StartArray();
  for (const ExpressionGene& g : genes) {
    w.StartObject();
    w.Field("gene_symbol", g.site.gene_symbol);
    w.Field("gene_id", g.site.gene_id);
    w.Field("transcript_id", g.site.transcript_id);
    w.Field("tss", g.site.tss + 1);
    w.Field("strand", std::string(1, variant::StrandChar(g.site.strand)));
    w.Field("tss_distance", g.tss_distance);
    w.Key("contexts");
    w.StartArray();
    for (size_t c = 0; c < info.contexts.size(); ++c) {
      const double ref = g.ref_log_tpm[c];
      const double alt = g.alt_log_tpm[c];
      w.StartObject();
      w.Field("context", info.contexts[c].requested);
      w.Field("ref_log_tpm", WorkflowPrecision(ref));
      w.Field("alt_log_tpm", WorkflowPrecision(alt));
      w.Field("ref_tpm", WorkflowPrecision(std::max(0.0, std::expm1(ref))));
      w.Field("alt_tpm", WorkflowPrecision(std::max(0.0, std::expm1(alt))));
      w.Field("log2_fold_change", WorkflowPrecision(variant::Log2FoldChange(alt, ref)));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteChromatin(core::JsonWriter& w, const std::vector<ChromatinDelta>& features) {
  w.Key("chromatin");
  w.StartArray();
  for (const ChromatinDelta& f : features) {
    w.StartObject();
    w.Field("index", static_cast<int64_t>(f.index));
    w.Field("name", f.name);
    w.Field("category", f.category);
    w.Field("ref", RoundScore(f.ref));
    w.Field("alt", RoundScore(f.alt));
    w.Field("delta", RoundScore(f.alt - f.ref));
    w.EndObject();
  }
  w.EndArray();
}

void WritePromoter(core::JsonWriter& w, const PromoterDelta& p) {
  w.Key("promoter");
  w.StartObject();
  w.Field("ref", RoundScore(p.ref));
  w.Field("alt", RoundScore(p.alt));
  w.Field("delta", RoundScore(p.alt - p.ref));
  w.Field("ref_offset", p.ref_offset);
  w.Field("alt_offset", p.alt_offset);
  w.Field("windows", p.windows);
  w.EndObject();
}

void WriteModel(core::JsonWriter& w, const ScorerModel& m) {
  w.Field("model", m.model);
  w.Field("package_digest", m.package_digest);
  w.Field("window_bp", m.window_bp);
}

void WriteScorers(core::JsonWriter& w, const VariantScoreResult& result) {
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
  if (result.expression) {
    const ExpressionScorerInfo& e = *result.expression;
    w.Key("expression");
    w.StartObject();
    WriteModel(w, e.model);
    w.Field("window", e.window);
    w.Field("gene_annotation_md5", e.catalogue_md5);
    w.Field("fold_change", variant::kFoldChangeDefinition);
    w.Key("contexts");
    w.StartArray();
    for (const ExpressionContext& c : e.contexts) {
      w.StartObject();
      w.Field("requested", c.requested);
      w.Field("matched", c.matched);
      if (c.matched) {
        w.Field("id", c.id);
        w.Field("name", c.name);
      }
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  if (result.chromatin) {
    w.Key("chromatin");
    w.StartObject();
    WriteModel(w, result.chromatin->model);
    w.Field("top", result.chromatin->top);
    w.Field("features_total", result.chromatin->features_total);
    w.EndObject();
  }
  if (result.promoter) {
    w.Key("promoter");
    w.StartObject();
    WriteModel(w, result.promoter->model);
    w.Field("distance", result.promoter->distance);
    w.Field("step", result.promoter->step);
    w.EndObject();
  }
  w.EndObject();
}

// The model meta names: the first scorer's, in the order splice, expression, chromatin,
// promoter (data.scorers names every one).
const ScorerModel* FirstOtherModel(const VariantScoreResult& result) {
  if (result.expression) return &result.expression->model;
  if (result.chromatin) return &result.chromatin->model;
  if (result.promoter) return &result.promoter->model;
  return nullptr;
}

// A value as JsonWriter wrote it, written again: read at full precision, each double is the one
// written, so its shortest form is the same text (the answer cache's entries: the same bytes).
void WriteValue(core::JsonWriter& w, const rapidjson::Value& v) {
  if (v.IsObject()) {
    w.StartObject();
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      w.Key(std::string_view(m->name.GetString(), m->name.GetStringLength()));
      WriteValue(w, m->value);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (const auto& e : v.GetArray()) WriteValue(w, e);
    w.EndArray();
  } else if (v.IsString()) {
    w.String(std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsBool()) {
    w.Bool(v.GetBool());
  } else if (v.IsInt64()) {
    w.Int(v.GetInt64());
  } else if (v.IsNumber()) {
    w.Double(v.GetDouble());
  } else {
    w.Null();
  }
}

void WriteRecalled(core::JsonWriter& w, const std::string& json) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    w.Null();  // never: entries are checked when read (variant_answers.cc)
    return;
  }
  WriteValue(w, doc);
}

// meta.cached: every scored variant's answer came from the answer cache (false when none was
// scored); meta.cached_results: the indices of the results that did.
void WriteCached(core::JsonWriter& w, const VariantScoreResult& result) {
  bool any_scored = false, all_recalled = true;
  w.Key("cached_results");
  w.StartArray();
  for (size_t i = 0; i < result.variants.size(); ++i) {
    const ScoredVariant& s = result.variants[i];
    if (s.problem) continue;
    any_scored = true;
    if (s.recalled.empty()) {
      all_recalled = false;
    } else {
      w.Int(static_cast<int64_t>(i));
    }
  }
  w.EndArray();
  w.Field("cached", any_scored && all_recalled);
}

void WriteResult(core::JsonWriter& w, size_t index, const ScoredVariant& s,
                 const VariantScoreResult& result) {
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
  } else if (!s.recalled.empty()) {
    for (const auto& [scorer, json] : s.recalled) {
      w.Key(scorer);
      WriteRecalled(w, json);
    }
    w.Key("quantiles");  // as WriteVariantQuantiles wrote them when computed
    w.StartObject();
    for (const auto& [scorer, json] : s.recalled_quantiles) {
      w.Key(scorer);
      WriteRecalled(w, json);
    }
    w.EndObject();
  } else {
    if (s.splice_plus && s.splice_minus) WriteSplice(w, *s.splice_plus, *s.splice_minus);
    if (s.expression && result.expression) WriteExpression(w, *s.expression, *result.expression);
    if (s.chromatin) WriteChromatin(w, *s.chromatin);
    if (s.promoter) WritePromoter(w, *s.promoter);
    WriteVariantQuantiles(w, s, result);
  }
  w.EndObject();
}

// One scorer's entry of a result ("splice": {...}) on its own; the object, without its key.
template <typename WriteEntry>
std::string EntryJson(std::string_view scorer, WriteEntry write) {
  core::JsonWriter w;
  w.StartObject();
  write(w);
  w.EndObject();
  std::string text = w.Take();
  const size_t prefix = scorer.size() + 4;  // {"<scorer>":
  return text.substr(prefix, text.size() - prefix - 1);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RenderScorerResults(
    const ScoredVariant& s, const VariantScoreResult& result) {
  std::vector<std::pair<std::string, std::string>> out;
  if (s.problem) return out;
  if (s.splice_plus && s.splice_minus) {
    out.emplace_back("splice", EntryJson("splice", [&](core::JsonWriter& w) {
                       WriteSplice(w, *s.splice_plus, *s.splice_minus);
                     }));
  }
  if (s.expression && result.expression) {
    out.emplace_back("expression", EntryJson("expression", [&](core::JsonWriter& w) {
                       WriteExpression(w, *s.expression, *result.expression);
                     }));
  }
  if (s.chromatin) {
    out.emplace_back("chromatin", EntryJson("chromatin", [&](core::JsonWriter& w) {
                       WriteChromatin(w, *s.chromatin);
                     }));
  }
  if (s.promoter) {
    out.emplace_back("promoter", EntryJson("promoter", [&](core::JsonWriter& w) {
                       WritePromoter(w, *s.promoter);
                     }));
  }
  return out;
}

double WorkflowPrecision(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.5g", value == 0.0 ? 0.0 : value);
  return std::strtod(text, nullptr);
}

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
  WriteScorers(w, result);
  WriteVariantBackgrounds(w, result);
  w.Key("counts");
  w.StartObject();
  w.Field("variants", total);
  w.Field("scored", total - errors);
  w.Field("errors", errors);
  w.EndObject();
  w.Key("results");
  w.StartArray();
  for (size_t i = 0; i < result.variants.size(); ++i) {
    WriteResult(w, i, result.variants[i], result);
  }
  w.EndArray();
  w.EndObject();

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", core::kVariantScoreTask);
  const ScorerModel* other = FirstOtherModel(result);
  w.Field("model", result.splice ? result.splice->model : other ? other->model : std::string());
  w.Field("package_digest", result.splice ? result.splice->package_digest
                            : other       ? other->package_digest
                                          : std::string());
  w.Field("cold_start", result.cold_start);
  w.Field("model_load_time_ms", result.model_load_time_ms);
  w.Field("inference_time_ms", result.inference_time_ms);
  w.Field("model_calls", result.model_calls);
  WriteCached(w, result);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::runner
