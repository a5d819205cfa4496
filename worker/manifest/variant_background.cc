#include "worker/manifest/variant_background.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/file_text.h"

namespace dnaserve::worker {
namespace {

constexpr const char* kKeys[] = {"file", "scorer", "seed", "snvs", "region", "distance"};
constexpr int64_t kMaxSnvs = 1000000;  // a "small file": far above any background we ship

// As manifest.cc words a package it refuses.
Status Invalid(const std::string& message) {
  return Status(ErrorCode::kInternal, "manifest.json: " + message);
}

Status Wrong(const std::string& key, const std::string& expected) {
  return Invalid("'variant_background." + key + "' must be " + expected);
}

Status ReadString(const rapidjson::Value& v, const char* key, std::string* out) {
  if (!v.HasMember(key)) return Invalid("missing required field 'variant_background." +
                                        std::string(key) + "'");
  const auto& s = v[key];
  if (!s.IsString() || s.GetStringLength() == 0) return Wrong(key, "a non-empty string");
  *out = std::string(s.GetString(), s.GetStringLength());
  return Status::Ok();
}

Status ReadInt(const rapidjson::Value& v, const char* key, int64_t min, int64_t* out) {
  if (!v.HasMember(key)) return Invalid("missing required field 'variant_background." +
                                        std::string(key) + "'");
  const auto& n = v[key];
  if (!n.IsInt64() || n.GetInt64() < min || n.GetInt64() > kMaxSnvs * 1000) {
    return Wrong(key, "an integer >= " + std::to_string(min));
  }
  *out = n.GetInt64();
  return Status::Ok();
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) out.push_back(field);
  return out;
}

}  // namespace

StatusOr<VariantBackground> ParseVariantBackgroundEntry(const rapidjson::Value& doc) {
  if (!doc.IsObject()) return Invalid("'variant_background' must be an object");
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return name == k; })) {
      return Invalid("unknown field 'variant_background." + name + "'");
    }
  }
  VariantBackground b;
  DNASERVE_RETURN_IF_ERROR(ReadString(doc, "file", &b.file));
  if (b.file.find('/') != std::string::npos) return Wrong("file", "a plain file name");
  DNASERVE_RETURN_IF_ERROR(ReadString(doc, "scorer", &b.scorer));
  DNASERVE_RETURN_IF_ERROR(ReadString(doc, "region", &b.region));
  DNASERVE_RETURN_IF_ERROR(ReadInt(doc, "seed", 0, &b.seed));
  DNASERVE_RETURN_IF_ERROR(ReadInt(doc, "snvs", 1, &b.snvs));
  if (b.snvs > kMaxSnvs) return Wrong("snvs", "at most " + std::to_string(kMaxSnvs));
  DNASERVE_RETURN_IF_ERROR(ReadInt(doc, "distance", 0, &b.distance));
  return b;
}

Status LoadVariantBackgroundTable(const std::string& path, VariantBackground* background) {
  const std::string where = "variant_background '" + background->file + "'";
  auto text = ReadFileText(path);
  if (!text) return Invalid(where + " is missing from the package or unreadable");
  std::istringstream in(*text);
  std::string line;
  if (!std::getline(in, line)) return Invalid(where + " is empty");
  const std::vector<std::string> header = SplitTabs(line);
  if (header.size() < 2 || header[0] != "variant") {
    return Invalid(where + ": the header must be 'variant' then one statistic name per column");
  }
  background->statistics.clear();
  for (size_t c = 1; c < header.size(); ++c) background->statistics.push_back({header[c], {}});
  int64_t rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++rows;
    const std::vector<std::string> fields = SplitTabs(line);
    if (fields.size() != header.size()) {
      return Invalid(where + ": row " + std::to_string(rows) + " has " +
                     std::to_string(fields.size()) + " fields, the header " +
                     std::to_string(header.size()));
    }
    for (size_t c = 1; c < fields.size(); ++c) {
      char* end = nullptr;
      const double value = std::strtod(fields[c].c_str(), &end);
      if (fields[c].empty() || *end != '\0' || !std::isfinite(value)) {
        return Invalid(where + ": row " + std::to_string(rows) + " column '" + header[c] +
                       "' is not a finite number");
      }
      background->statistics[c - 1].second.push_back(value);
    }
  }
  if (rows != background->snvs) {
    return Invalid(where + " has " + std::to_string(rows) + " rows; the manifest says snvs " +
                   std::to_string(background->snvs));
  }
  for (auto& [name, values] : background->statistics) std::sort(values.begin(), values.end());
  return Status::Ok();
}

std::string VariantBackgroundJson(const VariantBackground& b, const std::string& model,
                                  const std::string& package_digest) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("model");
  w.String(model.c_str());
  w.Key("package_digest");
  w.String(package_digest.c_str());
  w.Key("file");
  w.String(b.file.c_str());
  w.Key("scorer");
  w.String(b.scorer.c_str());
  w.Key("seed");
  w.Int64(b.seed);
  w.Key("snvs");
  w.Int64(b.snvs);
  w.Key("region");
  w.String(b.region.c_str());
  w.Key("distance");
  w.Int64(b.distance);
  w.Key("statistics");
  w.StartObject();
  for (const auto& [name, values] : b.statistics) {
    w.Key(name.c_str());
    w.StartArray();
    for (double v : values) w.Double(v);  // finite: LoadVariantBackgroundTable checked
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

StatusOr<std::optional<VariantBackground>> LoadPackageBackground(
    const std::string& package_dir, const std::string& manifest_text) {
  rapidjson::Document doc;
  doc.Parse(manifest_text.c_str());
  if (doc.HasParseError() || !doc.IsObject()) return Invalid("not a JSON object");
  if (!doc.HasMember("variant_background")) return std::optional<VariantBackground>();
  auto background = ParseVariantBackgroundEntry(doc["variant_background"]);
  if (!background.ok()) return background.status();
  DNASERVE_RETURN_IF_ERROR(
      LoadVariantBackgroundTable(package_dir + "/" + background->file, &*background));
  return std::optional<VariantBackground>(std::move(background).value());
}

}  // namespace dnaserve::worker
