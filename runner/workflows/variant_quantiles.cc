#include "runner/workflows/variant_quantiles.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>

namespace dnaserve::runner {
namespace {

bool StringMember(const rapidjson::Value& v, const char* key, std::string* out) {
  if (!v.HasMember(key) || !v[key].IsString()) return false;
  *out = v[key].GetString();
  return true;
}

bool IntMember(const rapidjson::Value& v, const char* key, int64_t* out) {
  if (!v.HasMember(key) || !v[key].IsInt64()) return false;
  *out = v[key].GetInt64();
  return true;
}

}  // namespace

std::optional<double> QuantileOf(const std::vector<double>& sorted, double value) {
  if (sorted.empty()) return std::nullopt;
  // upper_bound: ties count as <= (a variant equal to every background value is at 1).
  const auto at_or_below = std::upper_bound(sorted.begin(), sorted.end(), value) - sorted.begin();
  return static_cast<double>(at_or_below) / static_cast<double>(sorted.size());
}

StatusOr<ShippedBackground> ParseShippedBackground(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Internal("the variant background is not a JSON object");
  }
  ShippedBackground b;
  if (!StringMember(doc, "model", &b.model) || !StringMember(doc, "scorer", &b.scorer) ||
      !StringMember(doc, "region", &b.region) || !IntMember(doc, "seed", &b.seed) ||
      !IntMember(doc, "snvs", &b.snvs) || !IntMember(doc, "distance", &b.distance) ||
      !doc.HasMember("statistics") || !doc["statistics"].IsObject()) {
    return Internal("the variant background lacks model, scorer, region, seed, snvs, distance "
                   "or statistics");
  }
  for (auto it = doc["statistics"].MemberBegin(); it != doc["statistics"].MemberEnd(); ++it) {
    if (!it->value.IsArray()) return Internal("a variant background statistic is not an array");
    std::vector<double> values;
    values.reserve(it->value.Size());
    for (const auto& v : it->value.GetArray()) {
      if (!v.IsNumber() || !std::isfinite(v.GetDouble())) {
        return Internal("a variant background value is not a finite number");
      }
      values.push_back(v.GetDouble());
    }
    if (static_cast<int64_t>(values.size()) != b.snvs) {
      return Internal("a variant background statistic does not hold one value per SNV");
    }
    // The worker sends them sorted; sorting again costs little and makes that no assumption.
    std::sort(values.begin(), values.end());
    b.statistics.emplace_back(it->name.GetString(), std::move(values));
  }
  return b;
}

std::optional<double> ScorerBackground::Quantile(const std::string& statistic,
                                                 double value) const {
  if (!available) return std::nullopt;
  for (const auto& [name, values] : statistics) {
    if (name == statistic) return QuantileOf(values, value);
  }
  return std::nullopt;
}

ScorerBackground BackgroundFor(const ShippedBackground* shipped, const std::string& model,
                               const std::string& scorer, std::optional<int64_t> distance) {
  ScorerBackground out;
  if (shipped == nullptr) {
    out.reason = "the package of " + model + " ships no variant background";
    return out;
  }
  if (shipped->scorer != scorer) {
    out.reason = "the variant background of " + model + " was made for the " + shipped->scorer +
                 " scorer, not " + scorer;
    return out;
  }
  if (distance && *distance != shipped->distance) {
    out.reason = "the variant background of " + model + " was scored at distance " +
                 std::to_string(shipped->distance) + "; this request used " +
                 std::to_string(*distance);
    return out;
  }
  out.available = true;
  out.seed = shipped->seed;
  out.snvs = shipped->snvs;
  out.distance = shipped->distance;
  out.region = shipped->region;
  out.statistics = shipped->statistics;
  return out;
}

StatusOr<std::shared_ptr<const ShippedBackground>> BackgroundCache::Get(
    const std::string& digest, const Fetch& fetch) {
  if (!digest.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_digest_.find(digest);
    if (it != by_digest_.end()) return it->second;
  }
  // Fetched outside the lock: two requests may both ask once; the answers are the same.
  std::shared_ptr<const ShippedBackground> background;
  auto json = fetch();
  if (json.ok()) {
    auto parsed = ParseShippedBackground(*json);
    if (!parsed.ok()) return parsed.status();
    background = std::make_shared<const ShippedBackground>(std::move(parsed).value());
  } else if (json.status().code() != ErrorCode::kNotFound) {
    return json.status();
  }
  // An empty digest (a worker older than digests) names no exact package: not kept.
  if (!digest.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    by_digest_.emplace(digest, background);
  }
  return background;
}

BackgroundCache& BackgroundCache::Shared() {
  static BackgroundCache* cache = new BackgroundCache();  // never destroyed: used until exit
  return *cache;
}

}  // namespace dnaserve::runner
