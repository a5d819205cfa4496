#include "core/validation/variant_score_request.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>

#include "core/validation/json_walk.h"

namespace dnaserve::core {
namespace {

// Positions are read from at most this many digits: far beyond any contig (the runner checks
// the real length), and no overflow.
constexpr size_t kMaxPositionDigits = 12;
constexpr size_t kMaxVariantStringBytes = 512;

void Fail(RequestedVariant* v, std::string code, std::string message) {
  if (!v->problem) v->problem = VariantProblem{std::move(code), std::move(message)};
}

// At most `limit` parts, the last one taking the rest (a breakend ALT holds ':' itself).
std::vector<std::string_view> Split(std::string_view text, char separator, size_t limit) {
  std::vector<std::string_view> parts;
  size_t from = 0;
  while (true) {
    const size_t at =
        parts.size() + 1 == limit ? std::string_view::npos : text.find(separator, from);
    parts.push_back(text.substr(from, at == std::string_view::npos ? std::string_view::npos
                                                                     : at - from));
    if (at == std::string_view::npos) return parts;
    from = at + 1;
  }
}

std::optional<int64_t> ParsePosition(std::string_view digits) {
  if (digits.empty() || digits.size() > kMaxPositionDigits) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool IsSymbolic(const std::string& allele) {
  return allele == "*" || allele == "." || allele.find_first_of("<>[]") != std::string::npos;
}

std::string Canonical(const RequestedVariant& v) {
  return v.contig + ":" + std::to_string(v.position) + ":" + v.ref + ":" + v.alt;
}

void ReadObjectVariant(const rapidjson::Value& item, const std::string& assembly,
                       RequestedVariant* v) {
  v->assembly = assembly;
  std::string unknown;
  for (auto m = item.MemberBegin(); m != item.MemberEnd(); ++m) {
    const std::string_view key(m->name.GetString(), m->name.GetStringLength());
    if (key != "assembly" && key != "contig" && key != "position" && key != "ref" &&
        key != "alt") {
      unknown = std::string(key);
    }
  }
  bool too_long = false;
  // Kept to kMaxVariantStringBytes: the fields are echoed in the result (a 10 MB "ref" must not
  // come back 100 times).
  auto string_field = [&](const char* name, std::string* out) {
    auto it = item.FindMember(name);
    if (it == item.MemberEnd() || !it->value.IsString() || it->value.GetStringLength() == 0) {
      return false;
    }
    const size_t length = std::min<size_t>(it->value.GetStringLength(), kMaxVariantStringBytes);
    too_long = too_long || it->value.GetStringLength() > kMaxVariantStringBytes;
    *out = std::string(it->value.GetString(), length);
    return true;
  };
  std::string ref, alt;
  const bool has_contig = string_field("contig", &v->contig);
  const bool has_ref = string_field("ref", &ref);
  const bool has_alt = string_field("alt", &alt);
  std::string own_assembly;
  if (item.HasMember("assembly")) {
    if (!string_field("assembly", &own_assembly)) {
      Fail(v, "invalid_variant", "'assembly' must be a non-empty string such as \"GRCh37\"");
    } else {
      v->assembly = own_assembly;
    }
  }
  auto position = item.FindMember("position");
  const bool has_position = position != item.MemberEnd() && position->value.IsInt64() &&
                            position->value.GetInt64() >= 1;
  if (has_position) v->position = position->value.GetInt64();
  v->ref = Upper(ref);
  v->alt = Upper(alt);
  v->input = Canonical(*v);
  if (!unknown.empty()) {
    Fail(v, "invalid_variant",
         "unknown field '" + unknown.substr(0, 64) + "'; a variant object has assembly, contig, "
         "position, ref and alt");
  } else if (too_long) {
    Fail(v, "invalid_variant", "a variant's fields are at most 512 characters each");
  } else if (!has_contig || !has_ref || !has_alt) {
    Fail(v, "invalid_variant",
         "a variant object needs non-empty strings 'contig', 'ref' and 'alt'");
  } else if (!has_position) {
    Fail(v, "invalid_variant", "'position' must be an integer >= 1 (1-based, of REF's first base)");
  }
}

void ReadVariant(const rapidjson::Value& item, const std::string& assembly, RequestedVariant* v) {
  if (item.IsString()) {
    v->assembly = assembly;
    ParseVariantString(std::string_view(item.GetString(), item.GetStringLength()), v);
  } else if (item.IsObject()) {
    ReadObjectVariant(item, assembly, v);
  } else {
    Fail(v, "invalid_variant",
         "a variant is a string \"chr20:5753600:A:G\" or an object {contig, position, ref, alt}");
    return;
  }
  CheckAlleles(v);
}

// One integer option of `scorer`, checked against [low, high]; `*out` set when it passes.
void ReadIntegerOption(const rapidjson::Value& value, const std::string& scorer,
                       const std::string& option, int64_t low, int64_t high, const char* unit,
                       int64_t* out, std::vector<FieldError>* errors) {
  if (!value.IsInt64() || value.IsBool()) {
    Report(errors, {{"body", "scorers", scorer, option}, "Input should be a valid integer",
                    "int_type"});
  } else if (value.GetInt64() < low || value.GetInt64() > high) {
    Report(errors, {{"body", "scorers", scorer, option},
                    "Input should be between " + std::to_string(low) + " and " +
                        std::to_string(high) + " (" + unit + ")",
                    value.GetInt64() < low ? "greater_than_equal" : "less_than_equal"});
  } else {
    *out = value.GetInt64();
  }
}

// expression's `contexts`: 1-16 non-empty strings, each named by id, CURIE or free text.
void ReadContexts(const rapidjson::Value& value, ValidatedVariantScore* out,
                  std::vector<FieldError>* errors) {
  const std::vector<std::string> path = {"body", "scorers", "expression", "contexts"};
  if (!value.IsArray()) {
    Report(errors, {path, "Input should be a valid list of contexts (\"E066\", "
                          "\"UBERON:0002107\" or free text such as \"liver\")", "list_type"});
    return;
  }
  if (value.Empty() || value.Size() > kMaxExpressionContexts) {
    Report(errors, {path, "List should have 1 to " + std::to_string(kMaxExpressionContexts) +
                              " items", value.Empty() ? "too_short" : "too_long"});
    return;
  }
  for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
    const rapidjson::Value& item = value[i];
    if (!item.IsString() || item.GetStringLength() == 0 ||
        item.GetStringLength() > kMaxContextTextBytes) {
      std::vector<std::string> at = path;
      at.push_back(std::to_string(i));
      Report(errors, {at, "Input should be a non-empty string of at most " +
                              std::to_string(kMaxContextTextBytes) + " characters",
                      "string_type"});
      continue;
    }
    out->expression_contexts.emplace_back(item.GetString(), item.GetStringLength());
  }
}

// The options one scorer takes, read into `out`; anything else is extra_forbidden.
void ReadScorerOptions(const std::string& name, const rapidjson::Value& options,
                       ValidatedVariantScore* out, std::vector<FieldError>* errors) {
  const char* takes = name == "splice"       ? "'distance'"
                      : name == "expression" ? "'contexts' and 'window'"
                      : name == "chromatin"  ? "'top'"
                                             : "'distance'";
  for (auto o = options.MemberBegin(); o != options.MemberEnd(); ++o) {
    const std::string option(o->name.GetString(), o->name.GetStringLength());
    const rapidjson::Value& v = o->value;
    if (name == "splice" && option == "distance") {
      ReadIntegerOption(v, name, option, 0, kMaxSpliceDistance, "bp on each side of the variant",
                        &out->splice_distance, errors);
    } else if (name == "expression" && option == "contexts") {
      ReadContexts(v, out, errors);
    } else if (name == "expression" && option == "window") {
      ReadIntegerOption(v, name, option, 0, kMaxExpressionWindow,
                        "bp between a gene's TSS and REF", &out->expression_window, errors);
    } else if (name == "chromatin" && option == "top") {
      ReadIntegerOption(v, name, option, 1, kMaxChromatinTop, "features reported",
                        &out->chromatin_top, errors);
    } else if (name == "promoter" && option == "distance") {
      ReadIntegerOption(v, name, option, 0, kMaxPromoterDistance,
                        "bp between the variant and a scored window's centre",
                        &out->promoter_distance, errors);
    } else {
      Report(errors, {{"body", "scorers", name, option},
                      "Extra inputs are not permitted (the " + name + " scorer takes " + takes +
                          ")",
                      "extra_forbidden"});
    }
  }
  if (name == "expression" && !options.HasMember("contexts")) {
    Report(errors, {{"body", "scorers", "expression", "contexts"},
                    "Field required: the contexts to score, e.g. [\"E066\", \"UBERON:0002107\", "
                    "\"liver\"]",
                    "missing"});
  }
}

// `scorers`: an object of scorer name -> options object (null: the defaults). Absent: the
// splice scorer with its defaults.
void ReadScorers(const rapidjson::Document& doc, ValidatedVariantScore* out,
                 std::vector<FieldError>* errors) {
  auto it = doc.FindMember("scorers");
  if (it == doc.MemberEnd()) {
    out->splice = true;
    return;
  }
  const rapidjson::Value& scorers = it->value;
  if (!scorers.IsObject()) {
    Report(errors, {{"body", "scorers"},
                    "Input should be an object of scorer name -> options, e.g. {\"splice\": "
                    "{\"distance\": 50}}",
                    "model_type"});
    return;
  }
  if (scorers.MemberCount() == 0) {
    Report(errors, {{"body", "scorers"},
                    std::string("name at least one scorer; scorers are: ") + kScorerNames,
                    "too_short"});
    return;
  }
  for (auto m = scorers.MemberBegin(); m != scorers.MemberEnd(); ++m) {
    const std::string name(m->name.GetString(), m->name.GetStringLength());
    bool* asked = name == "splice"       ? &out->splice
                  : name == "expression" ? &out->expression
                  : name == "chromatin"  ? &out->chromatin
                  : name == "promoter"   ? &out->promoter
                                         : nullptr;
    if (asked == nullptr) {
      Report(errors, {{"body", "scorers", name},
                      "unknown scorer '" + name + "'; scorers are: " + kScorerNames,
                      "extra_forbidden"});
      continue;
    }
    *asked = true;
    const rapidjson::Value& options = m->value;
    if (options.IsNull() && name != "expression") continue;
    if (!options.IsObject()) {
      Report(errors, {{"body", "scorers", name},
                      name == "expression"
                          ? "Input should be an object with 'contexts', e.g. {\"contexts\": "
                            "[\"E066\"]}"
                          : "Input should be an object",
                      "model_type"});
      continue;
    }
    ReadScorerOptions(name, options, out, errors);
  }
}

}  // namespace

void ParseVariantString(std::string_view text, RequestedVariant* out) {
  out->input = std::string(text.substr(0, kMaxVariantStringBytes));
  if (text.size() > kMaxVariantStringBytes) {
    Fail(out, "invalid_variant", "a variant string is at most 512 characters");
    return;
  }
  // "contig:pos:ref:alt"; with no ':' at all, VCF-lookup style "contig-pos-ref-alt".
  std::vector<std::string_view> parts =
      Split(text, text.find(':') != std::string_view::npos ? ':' : '-', 4);
  if (parts.size() != 4 || parts[0].empty()) {
    Fail(out, "invalid_variant",
         "expected \"contig:position:REF:ALT\" (or \"contig-position-REF-ALT\"), e.g. "
         "\"chr20:5753600:A:G\"");
    return;
  }
  auto position = ParsePosition(parts[1]);
  if (!position || *position < 1) {
    Fail(out, "invalid_variant",
         "the position '" + std::string(parts[1].substr(0, 32)) +
             "' is not a 1-based integer >= 1");
    return;
  }
  out->contig = std::string(parts[0]);
  out->position = *position;
  out->ref = Upper(parts[2]);
  out->alt = Upper(parts[3]);
}

void CheckAlleles(RequestedVariant* v) {
  if (v->problem) return;
  v->ref = Upper(v->ref);
  v->alt = Upper(v->alt);
  if (v->ref.empty() || v->alt.empty()) {
    Fail(v, "invalid_variant", "REF and ALT must each be at least one base");
    return;
  }
  if (v->alt.find(',') != std::string::npos) {
    Fail(v, "unsupported_allele",
         "one ALT allele per variant: split multi-allelic records (bcftools norm -m -any)");
    return;
  }
  if (IsSymbolic(v->ref) || IsSymbolic(v->alt)) {
    Fail(v, "unsupported_allele",
         "symbolic, breakend, missing and '*' alleles are not scored; give the bases");
    return;
  }
  auto bases_only = [](const std::string& allele) {
    return allele.find_first_not_of("ACGTN") == std::string::npos;
  };
  if (!bases_only(v->ref) || !bases_only(v->alt)) {
    Fail(v, "invalid_variant", "alleles are made of A, C, G, T and N");
    return;
  }
  if (v->ref == v->alt) {
    Fail(v, "invalid_variant", "ALT equals REF: not a variant");
    return;
  }
  const auto ref_len = static_cast<int64_t>(v->ref.size());
  const auto alt_len = static_cast<int64_t>(v->alt.size());
  if (std::max(ref_len, alt_len) - 1 > kMaxScoredIndelBp) {
    Fail(v, "indel_too_long",
         "insertions and deletions of at most " + std::to_string(kMaxScoredIndelBp) +
             " bp are scored; this one changes " +
             std::to_string(std::max(ref_len, alt_len) - 1) + " bp");
    return;
  }
  if (ref_len > 1 && alt_len > 1) {
    Fail(v, "unsupported_variant",
         "SpliceAI's convention scores SNVs, insertions and deletions (REF or ALT a single "
         "base); split MNVs and complex changes (bcftools norm -a --atom-overlaps .)");
  }
}

StatusOr<ValidatedVariantScore> ValidateVariantScoreBody(std::string_view body) {
  rapidjson::Document doc;
  DNASERVE_RETURN_IF_ERROR(ParseJsonBody(body, &doc));
  std::vector<FieldError> errors;
  if (!doc.IsObject()) {
    return ValidationFailedStatus({{{"body"}, "Input should be a valid dictionary", "model_type"}});
  }
  for (auto m = doc.MemberBegin(); m != doc.MemberEnd(); ++m) {
    const std::string key(m->name.GetString(), m->name.GetStringLength());
    if (key != "variants" && key != "scorers" && key != "assembly") {
      Report(&errors, {{"body", key}, "Extra inputs are not permitted", "extra_forbidden"});
    }
  }
  std::string assembly(kDefaultScoreAssembly);
  if (auto a = doc.FindMember("assembly"); a != doc.MemberEnd()) {
    if (!a->value.IsString() || a->value.GetStringLength() == 0 ||
        a->value.GetStringLength() > 64) {
      Report(&errors, {{"body", "assembly"}, "Input should be an assembly name such as \"GRCh37\"",
                       "string_type"});
    } else {
      assembly.assign(a->value.GetString(), a->value.GetStringLength());
    }
  }
  ValidatedVariantScore out;
  ReadScorers(doc, &out, &errors);

  auto variants = doc.FindMember("variants");
  if (variants == doc.MemberEnd()) {
    Report(&errors, {{"body", "variants"}, "Field required", "missing"});
  } else if (!variants->value.IsArray()) {
    Report(&errors, {{"body", "variants"},
                     "Input should be a valid list of variants (\"chr20:5753600:A:G\" or "
                     "{contig, position, ref, alt})",
                     "list_type"});
  } else if (variants->value.Empty()) {
    Report(&errors, {{"body", "variants"}, "List should have at least 1 item", "too_short"});
  } else if (variants->value.Size() > kMaxBatchScoreVariants) {
    Report(&errors, {{"body", "variants"},
                     "List should have at most " + std::to_string(kMaxBatchScoreVariants) +
                         " items (got " + std::to_string(variants->value.Size()) +
                         ", the most one job scores); send larger sets in several jobs",
                     "too_long"});
  }
  if (!errors.empty()) return ValidationFailedStatus(std::move(errors));

  for (const rapidjson::Value& item : variants->value.GetArray()) {
    RequestedVariant v;
    ReadVariant(item, assembly, &v);
    out.variants.push_back(std::move(v));
  }
  return out;
}

}  // namespace dnaserve::core
