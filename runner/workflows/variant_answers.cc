#include "runner/workflows/variant_answers.h"

#include <rapidjson/document.h>

#include <cstdlib>

#include "common/version.h"
#include "runner/genome/contig_name.h"
#include "runner/workflows/variant_quantile_json.h"
#include "runner/workflows/variant_score_response.h"

namespace dnaserve::runner {
namespace {

// Length-prefixed, so no field can end early and pass its tail off as the next field.
void Add(std::string* material, std::string_view field) {
  *material += std::to_string(field.size());
  *material += ':';
  *material += field;
  *material += ';';
}
void Add(std::string* material, int64_t field) { Add(material, std::to_string(field)); }

void AddModel(std::string* material, std::string_view scorer, const std::string& model,
              const std::string& digest) {
  Add(material, scorer);
  Add(material, model);
  Add(material, digest);
}

// What an entry holds, one line each (JsonWriter's text has no raw newline): the scorer-level
// figure the result carries with it (chromatin's features_total; 0 for the others), the
// rendered result, and its `quantiles` entry (empty when the result had none).
std::string EntryValue(int64_t figure, const std::string& json, const std::string& quantile) {
  return std::to_string(figure) + "\n" + json + "\n" + quantile;
}

bool ReadsBack(const std::string& json, bool container) {
  rapidjson::Document doc;  // an entry that does not read back is a miss, never a broken body
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.data(), json.size());
  return !doc.HasParseError() && (!container || doc.IsObject() || doc.IsArray());
}

bool ParseEntry(const std::string& value, int64_t* figure, std::string* json,
                std::string* quantile) {
  const size_t first = value.find('\n');
  const size_t second = first == std::string::npos ? first : value.find('\n', first + 1);
  if (first == 0 || second == std::string::npos) return false;
  char* end = nullptr;
  const std::string head = value.substr(0, first);
  *figure = std::strtoll(head.c_str(), &end, 10);
  if (end == nullptr || *end != '\0') return false;
  *json = value.substr(first + 1, second - first - 1);
  *quantile = value.substr(second + 1);
  return ReadsBack(*json, true) && (quantile->empty() || ReadsBack(*quantile, false));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> VariantAnswerKeys(
    const core::RequestedVariant& v, const VariantScoreResult& result) {
  std::string base;
  Add(&base, kVariantAnswerFormat);
  Add(&base, ServiceVersion());
  Add(&base, v.assembly);
  Add(&base, variant::AssemblyContigKey(v.assembly, v.contig));
  Add(&base, v.position);
  Add(&base, v.ref);
  Add(&base, v.alt);
  std::vector<std::pair<std::string, std::string>> out;
  if (result.splice) {
    const SpliceScorerInfo& s = *result.splice;
    if (s.package_digest.empty()) return {};
    std::string m = base;
    AddModel(&m, "splice", s.model, s.package_digest);
    Add(&m, s.distance);
    Add(&m, s.flank_bp);
    out.emplace_back("splice", std::move(m));
  }
  if (result.expression) {
    const ExpressionScorerInfo& e = *result.expression;
    if (e.model.package_digest.empty()) return {};
    std::string m = base;
    AddModel(&m, "expression", e.model.model, e.model.package_digest);
    Add(&m, e.window);
    Add(&m, e.catalogue_build);
    Add(&m, e.catalogue_md5);
    Add(&m, static_cast<int64_t>(e.contexts.size()));
    for (const ExpressionContext& c : e.contexts) Add(&m, c.requested);
    out.emplace_back("expression", std::move(m));
  }
  if (result.chromatin) {
    const ChromatinScorerInfo& c = *result.chromatin;
    if (c.model.package_digest.empty()) return {};
    std::string m = base;
    AddModel(&m, "chromatin", c.model.model, c.model.package_digest);
    Add(&m, c.top);
    out.emplace_back("chromatin", std::move(m));
  }
  if (result.promoter) {
    const PromoterScorerInfo& p = *result.promoter;
    if (p.model.package_digest.empty()) return {};
    std::string m = base;
    AddModel(&m, "promoter", p.model.model, p.model.package_digest);
    Add(&m, p.distance);
    Add(&m, p.step);
    out.emplace_back("promoter", std::move(m));
  }
  return out;
}

void CachedVariantAnswers::Recall(VariantScoreResult* result) {
  // One lookup for the whole request: every scorer of every checked variant.
  std::vector<std::string> materials;
  std::vector<std::pair<size_t, size_t>> spans;  // per variant: first material, count
  for (const ScoredVariant& s : result->variants) {
    if (s.problem) {
      spans.emplace_back(materials.size(), 0);
      continue;
    }
    auto keys = VariantAnswerKeys(s.variant, *result);
    spans.emplace_back(materials.size(), keys.size());
    for (auto& [scorer, material] : keys) materials.push_back(std::move(material));
  }
  if (materials.empty()) return;
  const auto values = cache_->Lookup(materials);
  for (size_t i = 0; i < result->variants.size(); ++i) {
    ScoredVariant& s = result->variants[i];
    const auto [first, count] = spans[i];
    if (count == 0) continue;
    auto keys = VariantAnswerKeys(s.variant, *result);
    std::vector<std::pair<std::string, std::string>> recalled, quantiles;
    int64_t features_total = 0;
    for (size_t k = 0; k < count; ++k) {
      const auto& value = values[first + k];
      int64_t figure = 0;
      std::string json, quantile;
      if (!value || !ParseEntry(*value, &figure, &json, &quantile)) break;
      if (keys[k].first == "chromatin") features_total = figure;
      recalled.emplace_back(keys[k].first, std::move(json));
      if (!quantile.empty()) quantiles.emplace_back(keys[k].first, std::move(quantile));
    }
    if (recalled.size() != count) continue;  // one scorer missing: the variant is scored
    s.recalled = std::move(recalled);
    s.recalled_quantiles = std::move(quantiles);
    if (result->chromatin && result->chromatin->features_total == 0) {
      result->chromatin->features_total = features_total;
    }
  }
}

void CachedVariantAnswers::Remember(const ScoredVariant& scored,
                                    const VariantScoreResult& result) {
  auto keys = VariantAnswerKeys(scored.variant, result);
  auto rendered = RenderScorerResults(scored, result);
  // Every scorer asked for must have rendered; otherwise keep nothing (a partial set is never
  // served anyway).
  if (keys.empty() || rendered.size() != keys.size()) return;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (rendered[k].first != keys[k].first) return;
  }
  const auto quantiles = RenderQuantileEntries(scored, result);
  for (size_t k = 0; k < keys.size(); ++k) {
    const int64_t figure =
        keys[k].first == "chromatin" && result.chromatin ? result.chromatin->features_total : 0;
    std::string quantile;
    for (const auto& [scorer, json] : quantiles) {
      if (scorer == keys[k].first) quantile = json;
    }
    pending_.emplace_back(std::move(keys[k].second),
                          EntryValue(figure, rendered[k].second, quantile));
  }
  if (pending_.size() >= kVariantAnswerBatch) Flush();
}

void CachedVariantAnswers::Flush() {
  if (pending_.empty()) return;
  cache_->Store(pending_);
  pending_.clear();
}

}  // namespace dnaserve::runner
