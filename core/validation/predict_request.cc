#include "core/validation/predict_request.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "common/tss_window.h"
#include "core/validation/json_walk.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {
namespace {

namespace v1 = worker::v1;

// The table's entry for an option; the table is fixed, so a miss is a programming error that
// the unit tests exercise through every default.
const FieldSpec& OptionField(Task task, std::string_view name) {
  static const FieldSpec kMissing;
  const FieldSpec* f = PredictOptionsSchema(task).Find(name);
  return f != nullptr ? *f : kMissing;
}

double NumberOption(Task task, const CheckedObject& options, std::string_view name) {
  auto v = options.Number(name);
  return v ? *v : DefaultNumber(OptionField(task, name));
}

// A UCSC-style region label "chrom:start-end", 1-based inclusive, commas allowed in numbers.
struct RegionLabel {
  std::string chrom;
  int64_t start = 0;
  int64_t end = 0;
};

std::optional<int64_t> ParseGroupedNumber(std::string_view s) {
  if (s.empty() || s.front() == ',' || s.back() == ',') return std::nullopt;
  int64_t value = 0;
  bool any_digit = false;
  for (char c : s) {
    if (c == ',') continue;
    if (c < '0' || c > '9') return std::nullopt;
    if (value > 100000000000000) return std::nullopt;  // far beyond any genome coordinate
    value = value * 10 + (c - '0');
    any_digit = true;
  }
  if (!any_digit) return std::nullopt;
  return value;
}

std::optional<RegionLabel> ParseRegionLabel(std::string_view label) {
  size_t colon = label.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view chrom = label.substr(0, colon);
  for (char c : chrom) {
    if (static_cast<unsigned char>(c) <= ' ') return std::nullopt;  // no whitespace or controls
  }
  std::string_view range = label.substr(colon + 1);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto start = ParseGroupedNumber(range.substr(0, dash));
  auto end = ParseGroupedNumber(range.substr(dash + 1));
  if (!start || !end || *start < 1 || *end < *start) return std::nullopt;
  return RegionLabel{std::string(chrom), *start, *end};
}

void FillSpliceOptions(const CheckedObject& options, v1::SpliceOptions* out) {
  out->set_threshold(NumberOption(Task::kSplice, options, "threshold"));
  const std::vector<std::string>* given = options.Strings("site_types");
  std::vector<std::string> types =
      given ? *given : DefaultStrings(OptionField(Task::kSplice, "site_types"));
  for (const auto& t : types) {
    out->add_site_types(t == "donor" ? v1::SPLICE_SITE_TYPE_DONOR : v1::SPLICE_SITE_TYPE_ACCEPTOR);
  }
  out->set_max_sites(kSpliceMaxSites);
}

// Interval input names its outputs by the contig; a sequence_name would contradict it.
void UseIntervalNames(const CheckedObject& body, std::vector<FieldError>* errors,
                      ValidatedPredict* out) {
  if (body.Has("sequence_name")) {
    Report(errors, FieldError{{"body", "sequence_name"},
                              "sequence_name is not used with interval: outputs are named by "
                              "the interval's contig",
                              "value_error"});
  }
  out->sequence_name = out->interval->contig;
  out->sequence_length = out->interval->length();
  out->request.set_sequence_name(out->sequence_name);
}

// Annotation options, including the shift_coordinates / sequence_name cross-field rule.
void FillAnnotationOptions(const CheckedObject& body, const CheckedObject& options,
                           const std::string& sequence_name, std::vector<FieldError>* errors,
                           v1::AnnotationOptions* out) {
  constexpr Task kTask = Task::kAnnotation;
  auto batch = options.Integer("batch_size");
  out->set_batch_size(
      static_cast<int32_t>(batch ? *batch : DefaultInteger(OptionField(kTask, "batch_size"))));
  auto rc = options.Boolean("reverse_complement");
  out->set_reverse_complement(rc ? *rc : DefaultBoolean(OptionField(kTask, "reverse_complement")));
  if (body.Has("interval") && options.String("shift_coordinates") != nullptr) {
    Report(errors, IntervalShiftError());
    return;
  }
  ApplyShiftCoordinates(options.String("shift_coordinates"), sequence_name,
                        body.Failed("sequence_name"), errors, out);
}

// Expression: tss_index rules (reported at [body], as a model-level check) and the exact slice.
// `bases` is null for an interval, whose bases a runner cuts the window from
// (SliceExpressionWindow).
void ApplyExpressionWindow(const CheckedObject& body, const std::string* bases, int64_t length,
                           std::vector<FieldError>* errors, ValidatedPredict* out) {
  if (body.Failed("tss_index")) return;  // its type error is already at [body, tss_index]
  const int64_t half = kExpressionHalfWindowBp;
  std::optional<int64_t> tss = body.Integer("tss_index");
  if (!tss) {
    if (length != kExpressionWindowBp) {
      Report(errors, FieldError{{"body"},
                                "tss_index is required unless the sequence is exactly " +
                                    std::to_string(kExpressionWindowBp) +
                                    " bp; the submitted sequence is " + std::to_string(length) +
                                    " bp after whitespace removal",
                                "value_error"});
      return;
    }
    tss = kTssIndexInWindow;
  }
  if (*tss < half || *tss > length - half) {
    Report(errors,
           FieldError{{"body"},
                      "tss_index must satisfy " + std::to_string(half) +
                          " <= tss_index <= len(sequence) - " + std::to_string(half) +
                          " (= " + std::to_string(length - half) + " for this " +
                          std::to_string(length) + " bp sequence); got " + std::to_string(*tss),
                      "value_error"});
    return;
  }
  out->tss_index = *tss;
  // The request's sequence is already the gene's sense strand.
  const PlusStrandSpan window = TssWindowSpan(*tss, /*minus_strand=*/false);
  out->scored_start = window.start;
  out->scored_end = window.end;
  if (bases != nullptr) SliceExpressionWindow(*bases, out);
}

}  // namespace

FieldError IntervalShiftError() {
  return FieldError{{"body", "options", "shift_coordinates"},
                    "shift_coordinates is not used with interval: outputs already are in genome "
                    "coordinates on the interval's contig",
                    "value_error"};
}

void SliceExpressionWindow(const std::string& bases, ValidatedPredict* out) {
  out->request.set_sequence(bases.substr(static_cast<size_t>(out->scored_start),
                                         static_cast<size_t>(kExpressionWindowBp)));
}

void ApplyShiftCoordinates(const std::string* shift, const std::string& sequence_name,
                           bool sequence_name_failed, std::vector<FieldError>* errors,
                           v1::AnnotationOptions* out) {
  out->set_coordinate_offset(0);
  out->set_seqid(sequence_name);
  // The tables admit only the supported value ("UCSC", any case), so a present value means
  // "shift by the region label".
  if (shift == nullptr || sequence_name_failed) return;
  auto label = ParseRegionLabel(sequence_name);
  if (!label) {
    Report(errors,
           FieldError{
               {"body", "sequence_name"},
               "with options.shift_coordinates '" + *shift +
                   "', sequence_name must be a region label chrom:start-end (1-based, inclusive; "
                   "commas allowed in the numbers), e.g. chr1:1,000,001-1,250,000; got '" +
                   sequence_name + "'",
               "value_error"});
    return;
  }
  out->set_coordinate_offset(label->start - 1);
  out->set_seqid(label->chrom);
}

StatusOr<ValidatedPredict> ValidatePredictBody(Task task, std::string_view body) {
  rapidjson::Document doc;
  DNASERVE_RETURN_IF_ERROR(ParseJsonBody(body, &doc));

  std::vector<FieldError> errors;
  CheckedObject checked;
  CheckObject(PredictRequestSchema(task), doc, {"body"}, &errors, &checked);

  ValidatedPredict out;
  out.task = task;
  const std::string* name = checked.String("sequence_name");
  out.sequence_name =
      name ? *name : DefaultString(*PredictRequestSchema(task).Find("sequence_name"));
  if (const std::string* model = checked.String("model")) out.requested_model = *model;
  out.request.set_sequence_name(out.sequence_name);

  const std::string* bases = checked.String("sequence");
  if (bases != nullptr) {
    out.sequence_length = static_cast<int64_t>(bases->size());
    if (task != Task::kExpression) out.request.set_sequence(*bases);
  }
  // A body that is not an object already has its one error.
  if (doc.IsObject()) out.interval = ReadInterval(checked, MinSequenceBp(task), &errors);
  if (out.interval) UseIntervalNames(checked, &errors, &out);

  const CheckedObject no_options;  // options omitted or null: every option takes its default
  const CheckedObject* given = checked.Object("options");
  const CheckedObject& options = given ? *given : no_options;
  switch (task) {
    case Task::kPromoter:
      out.request.mutable_promoter()->set_threshold(NumberOption(task, options, "threshold"));
      break;
    case Task::kSplice:
      FillSpliceOptions(options, out.request.mutable_splice());
      break;
    case Task::kEnhancer:
      out.request.mutable_enhancer();
      break;
    case Task::kChromatin:
      out.request.mutable_chromatin()->set_threshold(NumberOption(task, options, "threshold"));
      break;
    case Task::kAnnotation:
      FillAnnotationOptions(checked, options, out.sequence_name, &errors,
                            out.request.mutable_annotation());
      break;
    case Task::kExpression: {
      const std::string* description = options.String("description");
      out.request.mutable_expression()->set_description(description ? *description : "");
      // Cross-field rules run only on a valid sequence, as a model-level validator would.
      if (bases != nullptr) {
        ApplyExpressionWindow(checked, bases, out.sequence_length, &errors, &out);
      } else if (out.interval) {
        ApplyExpressionWindow(checked, nullptr, out.sequence_length, &errors, &out);
      }
      break;
    }
  }

  if (!errors.empty()) return ValidationFailedStatus(std::move(errors));
  return out;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Echoed client input is kept short in messages.
std::string Clip(std::string_view s) {
  constexpr size_t kMax = 64;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

// The formats one operation offers, and its name for messages.
struct Offer {
  std::string_view operation;
  const std::vector<OutputFormat>& formats;
};

bool Supports(const Offer& offer, OutputFormat format) {
  return std::find(offer.formats.begin(), offer.formats.end(), format) != offer.formats.end();
}

std::string SupportedList(const Offer& offer, bool with_media_types) {
  std::string out;
  for (OutputFormat f : offer.formats) {
    if (!out.empty()) out += ", ";
    out += FormatName(f);
    if (with_media_types) out += " (" + std::string(FormatMediaType(f)) + ")";
  }
  return out;
}

Status Unsupported(std::string message) {
  return Status(ErrorCode::kUnsupportedFormat, std::move(message));
}

Status FormatNotSupported(const Offer& offer, std::string_view format) {
  return Unsupported("format '" + Clip(format) + "' is not supported for " +
                     std::string(offer.operation) + "; supported: " + SupportedList(offer, false));
}

// The format a concrete media type names, if any.
std::optional<OutputFormat> FormatOfMediaType(std::string_view type) {
  if (type == "application/json") return OutputFormat::kJson;
  if (type == "text/x-bed" || type == "text/bed") return OutputFormat::kBed;
  if (type == "text/x-bedgraph" || type == "text/bedgraph") return OutputFormat::kBedGraph;
  if (type == "text/x-gff3" || type == "text/gff3") return OutputFormat::kGff3;
  return std::nullopt;
}

struct MediaRange {
  std::string type;  // lower-cased, parameters removed
  double q = 1.0;
};

std::vector<MediaRange> ParseAccept(std::string_view header) {
  std::vector<MediaRange> out;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    size_t semi = item.find(';');
    MediaRange range;
    range.type = Lower(Trim(item.substr(0, semi)));
    if (range.type.empty()) continue;
    bool valid = true;
    while (semi != std::string_view::npos) {
      item = item.substr(semi + 1);
      semi = item.find(';');
      std::string param = Lower(Trim(item.substr(0, semi)));
      if (param.rfind("q=", 0) == 0) {
        const std::string value = param.substr(2);
        char* end = nullptr;
        double q = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || !(q >= 0.0 && q <= 1.0)) {
          valid = false;
        } else {
          range.q = q;
        }
      }
    }
    if (valid) out.push_back(std::move(range));
  }
  // Highest preference first; equal q keeps the client's order.
  std::stable_sort(out.begin(), out.end(),
                   [](const MediaRange& a, const MediaRange& b) { return a.q > b.q; });
  return out;
}

}  // namespace

StatusOr<OutputFormat> NegotiateFormat(Task task, const std::optional<std::string>& query_format,
                                       const std::optional<std::string>& accept) {
  return NegotiateFormat(TaskName(task), SupportedFormats(task), query_format, accept);
}

StatusOr<OutputFormat> NegotiateFormat(std::string_view operation,
                                       const std::vector<OutputFormat>& supported,
                                       const std::optional<std::string>& query_format,
                                       const std::optional<std::string>& accept) {
  const Offer offer{operation, supported};
  if (query_format) {
    auto format = FormatFromName(Lower(*query_format));
    if (!format || !Supports(offer, *format)) return FormatNotSupported(offer, *query_format);
    return *format;
  }
  if (!accept) return OutputFormat::kJson;
  std::vector<MediaRange> ranges = ParseAccept(*accept);
  if (ranges.empty()) return OutputFormat::kJson;  // empty header: no preference

  // q=0 on a concrete type excludes that format even where a wildcard would match it.
  std::set<OutputFormat> excluded;
  for (const auto& r : ranges) {
    auto f = FormatOfMediaType(r.type);
    if (f && r.q == 0.0) excluded.insert(*f);
  }
  std::optional<OutputFormat> first_known_unsupported;
  std::optional<std::string> first_unknown;
  for (const auto& r : ranges) {
    if (r.q == 0.0) continue;
    std::vector<OutputFormat> candidates;
    if (auto f = FormatOfMediaType(r.type)) {
      candidates.push_back(*f);
      if (!Supports(offer, *f) && !first_known_unsupported) first_known_unsupported = *f;
    } else if (r.type == "*/*") {
      candidates = supported;
    } else if (r.type == "application/*") {
      candidates.push_back(OutputFormat::kJson);
    } else if (r.type == "text/*") {
      for (OutputFormat f : supported) {
        if (f != OutputFormat::kJson) candidates.push_back(f);
      }
    } else if (!first_unknown) {
      first_unknown = r.type;
    }
    for (OutputFormat f : candidates) {
      if (Supports(offer, f) && excluded.count(f) == 0) return f;
    }
  }
  if (first_known_unsupported) {
    return FormatNotSupported(offer, FormatName(*first_known_unsupported));
  }
  return Unsupported("Accept '" + Clip(*accept) + "' names no format available for " +
                     std::string(operation) + "; supported: " + SupportedList(offer, true));
}

}  // namespace dnaserve::core
