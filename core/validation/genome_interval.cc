#include "core/validation/genome_interval.h"

#include <utility>

#include "core/validation/json_walk.h"

namespace dnaserve::core {
namespace {

constexpr int64_t kMaxAssemblyLength = 64;

// Digits with optional thousands commas ("5,750,001"); no sign, no empty groups.
std::optional<int64_t> ParseCoordinate(std::string_view s) {
  if (s.empty() || s.front() == ',' || s.back() == ',') return std::nullopt;
  int64_t value = 0;
  bool digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ',') {
      if (s[i - 1] == ',') return std::nullopt;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    if (value > 1000000000000) return std::nullopt;  // far beyond any contig
    value = value * 10 + (c - '0');
    digit = true;
  }
  if (!digit) return std::nullopt;
  return value;
}

bool ValidContigName(std::string_view contig) {
  if (contig.empty() || contig.size() > static_cast<size_t>(kMaxNameLength)) return false;
  for (char c : contig) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u >= 0x7f || c == ':') return false;  // no whitespace, controls or colons
  }
  return true;
}

std::string Clip(std::string_view s) {
  constexpr size_t kMax = 64;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

std::string Bp(int64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + " bp";
}

FieldError Error(std::vector<std::string> loc, std::string msg) {
  return FieldError{std::move(loc), std::move(msg), "value_error"};
}

ObjectSpec MakeIntervalSchema() {
  ObjectSpec o;
  o.title = "GenomeInterval";
  o.description =
      "A stretch of a reference genome the service holds (GET /v1/genomes), sent instead of "
      "sequence. Either region, or contig with start and end. Coordinates are 1-based and "
      "inclusive, as in samtools regions and VCF: chr20:5,750,001-5,760,000 is 10,000 bp "
      "starting at the 5,750,001st base. Every output position (JSON, BED, bedGraph, GFF3) is "
      "then on the contig's plus-strand coordinates, in each field's own convention (JSON and "
      "BED 0-based half-open, GFF3 1-based inclusive), with the contig as named here as the "
      "sequence id; meta.interval echoes the interval. strand '-' analyses the reverse "
      "complement of the stretch and maps every position back to plus-strand coordinates: a "
      "feature found on the analysed strand is reported on '-', one on its opposite strand on "
      "'+'; JSON lists keep the analysed order (5'->3' on '-', so descending positions), text "
      "tracks are sorted by position. Unknown assembly or contig, or an interval beyond the "
      "contig's end, is 422 validation_failed at [body, interval, ...], checked against the "
      "reference.";
  FieldSpec assembly;
  assembly.name = "assembly";
  assembly.nullable = true;
  assembly.max_length = kMaxAssemblyLength;
  assembly.default_value = std::string(kDefaultIntervalAssembly);
  assembly.description = "Assembly name as GET /v1/genomes lists it (any case). Omitted or null -> "
                         "GRCh37, the service's default genome.";
  o.fields.push_back(std::move(assembly));
  FieldSpec contig;
  contig.name = "contig";
  contig.nullable = true;
  contig.max_length = kMaxNameLength;
  contig.description =
      "Contig name or one of its aliases (GET /v1/genomes): chr20, 20 and NC_000020.10 are the "
      "same GRCh37 contig. Output tracks use the name as given.";
  o.fields.push_back(std::move(contig));
  for (const char* name : {"start", "end"}) {
    FieldSpec f;
    f.name = name;
    f.type = FieldType::kInteger;
    f.nullable = true;
    f.minimum = 1;
    f.description = std::string(name) == "start"
                        ? "First base, 1-based inclusive (>= 1, <= end)."
                        : "Last base, 1-based inclusive (<= the contig's length).";
    o.fields.push_back(std::move(f));
  }
  FieldSpec strand;
  strand.name = "strand";
  strand.nullable = true;
  strand.accepted_values = {"+", "-"};
  strand.exact_values = true;
  strand.default_value = std::string("+");
  strand.description = "+ (default): analyse the stretch as the reference reads it; -: analyse "
                       "its reverse complement (positions still reported on '+' coordinates).";
  o.fields.push_back(std::move(strand));
  FieldSpec region;
  region.name = "region";
  region.nullable = true;
  region.max_length = kMaxNameLength + 32;
  region.pattern = "^[^\\s:]+:[0-9][0-9,]*-[0-9][0-9,]*$";
  region.description =
      "samtools-style region contig:start-end, 1-based inclusive, commas allowed in the numbers "
      "(chr20:5,750,001-5,760,000); instead of contig, start and end.";
  o.fields.push_back(std::move(region));
  return o;
}

}  // namespace

std::string GenomeInterval::Label() const {
  return contig + ":" + std::to_string(start) + "-" + std::to_string(end);
}

std::optional<GenomeInterval> ParseRegionString(std::string_view text, std::string* why) {
  const std::string example = " (e.g. chr20:5,750,001-5,760,000)";
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    *why = "region '" + Clip(text) + "' is not contig:start-end" + example;
    return std::nullopt;
  }
  GenomeInterval out;
  out.contig = std::string(text.substr(0, colon));
  if (!ValidContigName(out.contig)) {
    *why = "region '" + Clip(text) + "' has no valid contig name before the ':'" + example;
    return std::nullopt;
  }
  const std::string_view range = text.substr(colon + 1);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos) {
    *why = "region '" + Clip(text) + "' needs both start and end (contig:start-end)" + example;
    return std::nullopt;
  }
  auto start = ParseCoordinate(range.substr(0, dash));
  auto end = ParseCoordinate(range.substr(dash + 1));
  if (!start || !end) {
    *why = "region '" + Clip(text) + "': start and end must be whole numbers (commas allowed "
           "between groups of digits)" + example;
    return std::nullopt;
  }
  if (*start < 1) {
    *why = "region '" + Clip(text) + "': start is 1-based and must be >= 1";
    return std::nullopt;
  }
  if (*start > *end) {
    *why = "region '" + Clip(text) + "': start " + std::to_string(*start) + " is after end " +
           std::to_string(*end);
    return std::nullopt;
  }
  out.start = *start;
  out.end = *end;
  out.region = std::string(text);
  return out;
}

const ObjectSpec& GenomeIntervalSchema() {
  static const ObjectSpec schema = MakeIntervalSchema();
  return schema;
}

FieldSpec IntervalField(const std::string& strand_rule) {
  FieldSpec f;
  f.name = "interval";
  f.type = FieldType::kObject;
  f.nullable = true;
  f.object = &GenomeIntervalSchema();
  f.description =
      "Instead of sequence: a stretch of a reference genome the service holds (GenomeInterval), "
      "read by the service; exactly one of sequence and interval. Same length bounds as "
      "sequence, measured on end - start + 1. Outputs are then in genome coordinates on the "
      "named contig and meta.interval echoes it. " +
      strand_rule;
  return f;
}

std::optional<GenomeInterval> ReadInterval(const CheckedObject& body, int64_t min_bp,
                                           std::vector<FieldError>* errors) {
  const bool has_sequence = body.Has("sequence") || body.Failed("sequence");
  const bool has_interval = body.Has("interval") || body.Failed("interval");
  if (has_sequence && has_interval) {
    Report(errors, Error({"body"}, "send exactly one of sequence and interval, not both"));
    return std::nullopt;
  }
  if (!has_sequence && !has_interval) {
    Report(errors, FieldError{{"body", "sequence"},
                              "send exactly one of sequence (the bases) and interval (a stretch "
                              "of a reference genome, e.g. {\"region\": \"chr20:5,750,001-"
                              "5,760,000\"})",
                              "missing"});
    return std::nullopt;
  }
  if (!has_interval || body.Failed("interval")) return std::nullopt;
  const CheckedObject& in = *body.Object("interval");
  const std::vector<std::string> at = {"body", "interval"};
  auto loc = [&](const char* field) {
    std::vector<std::string> l = at;
    l.emplace_back(field);
    return l;
  };

  GenomeInterval out;
  const std::string* region = in.String("region");
  const bool any_field = in.Has("contig") || in.Has("start") || in.Has("end");
  if (region != nullptr) {
    if (any_field) {
      Report(errors, Error(at, "give either region or contig, start and end, not both"));
      return std::nullopt;
    }
    std::string why;
    auto parsed = ParseRegionString(*region, &why);
    if (!parsed) {
      Report(errors, Error(loc("region"), why));
      return std::nullopt;
    }
    out = std::move(*parsed);
  } else {
    const std::string* contig = in.String("contig");
    auto start = in.Integer("start");
    auto end = in.Integer("end");
    if (contig == nullptr || !start || !end) {
      Report(errors, FieldError{at,
                                "an interval needs region, or contig, start and end (1-based, "
                                "inclusive)",
                                "missing"});
      return std::nullopt;
    }
    if (!ValidContigName(*contig)) {
      Report(errors, Error(loc("contig"), "contig '" + Clip(*contig) +
                                              "' is not a contig name (no whitespace or ':')"));
      return std::nullopt;
    }
    if (*start > *end) {
      Report(errors, Error(at, "start " + std::to_string(*start) + " is after end " +
                                   std::to_string(*end) + " (both 1-based, inclusive)"));
      return std::nullopt;
    }
    out.contig = *contig;
    out.start = *start;
    out.end = *end;
  }
  const std::string* assembly = in.String("assembly");
  out.assembly = assembly ? *assembly : std::string(kDefaultIntervalAssembly);
  const std::string* strand = in.String("strand");
  out.strand = strand && *strand == "-" ? '-' : '+';

  if (out.length() < min_bp || out.length() > kMaxSequenceBp) {
    Report(errors, Error(at, "the interval " + out.Label() + " is " + Bp(out.length()) +
                                 "; it must be " + Bp(min_bp) + " to " + Bp(kMaxSequenceBp)));
    return std::nullopt;
  }
  return out;
}

}  // namespace dnaserve::core
