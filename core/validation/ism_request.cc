#include "core/validation/ism_request.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <utility>
#include <vector>

#include "core/validation/json_walk.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {
namespace {

const std::vector<std::string> kWindowLoc = {"body", "window"};

FieldError WindowError(std::string message, const char* type = "value_error") {
  return FieldError{kWindowLoc, std::move(message), type};
}

ObjectSpec MakeWindowSpec() {
  ObjectSpec spec;
  spec.title = "IsmWindow";
  for (const char* name : {"start", "end"}) {
    FieldSpec f;
    f.name = name;
    f.type = FieldType::kInteger;
    f.required = true;
    f.minimum = 1;
    f.description = std::string("1-based, inclusive: the window's ") +
                    (std::string(name) == "start" ? "first" : "last") +
                    " base, a position in sequence or on the interval's contig";
    spec.fields.push_back(std::move(f));
  }
  return spec;
}

// The body without `scorers` (read apart, by the variant scorer's own validation).
const ObjectSpec& IsmBodySpec() {
  static const ObjectSpec window = MakeWindowSpec();
  static const ObjectSpec spec = [] {
    ObjectSpec s;
    s.title = "IsmRequest";
    FieldSpec sequence;
    sequence.name = "sequence";
    sequence.type = FieldType::kString;
    sequence.nullable = true;
    sequence.dna_sequence = true;
    sequence.min_length = 1;
    sequence.max_length = kMaxSequenceBp;
    s.fields.push_back(std::move(sequence));
    s.fields.push_back(IntervalField(""));
    FieldSpec w;
    w.name = "window";
    w.type = FieldType::kObject;
    w.required = true;
    w.object = &window;
    s.fields.push_back(std::move(w));
    return s;
  }();
  return spec;
}

std::string Serialised(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return buffer.GetString();
}

// The expression scorer's ISM-only option `gene` taken out of `scorers` (the variant scorer's
// validation does not know it), and its variant-scoring `window` refused: ISM's genes are those
// whose expression window holds the ISM window (ism_request.h).
void TakeExpressionGene(rapidjson::Document* scorers, ValidatedIsm* out,
                        std::vector<FieldError>* errors) {
  if (!scorers->IsObject() || !scorers->HasMember("expression")) return;
  rapidjson::Value& options = (*scorers)["expression"];
  if (!options.IsObject()) return;  // the variant scorer's validation says what is wrong
  if (options.HasMember("window")) {
    Report(errors, {{"body", "scorers", "expression", "window"},
                    "ISM's expression scorer takes no window: its gene is one whose expression "
                    "window holds the ISM window (name it with gene, or leave it to the nearest "
                    "start site)",
                    "extra_forbidden"});
    options.RemoveMember("window");
  }
  if (!options.HasMember("gene")) return;
  const rapidjson::Value& gene = options["gene"];
  if (!gene.IsString() || gene.GetStringLength() == 0 || gene.GetStringLength() > 64) {
    Report(errors, {{"body", "scorers", "expression", "gene"},
                    "gene is a gene symbol or Ensembl gene id, 1-64 characters",
                    !gene.IsString()                ? "string_type"
                    : gene.GetStringLength() == 0 ? "string_too_short"
                                                  : "string_too_long"});
  } else {
    out->expression_gene.assign(gene.GetString(), gene.GetStringLength());
  }
  options.RemoveMember("gene");
}

// `scorers` read as POST /v1/variants/score reads it (same options, same errors at the same
// locations), then held to ISM's rule: exactly one scorer, and one context for expression.
void ReadIsmScorer(const rapidjson::Value* scorers, ValidatedIsm* out,
                   std::vector<FieldError>* errors) {
  if (scorers != nullptr && scorers->IsObject() && scorers->MemberCount() > 1) {
    Report(errors, {{"body", "scorers"},
                    "ISM scores with exactly one scorer; name one of splice, chromatin, "
                    "promoter, expression",
                    "too_long"});
    return;
  }
  std::string body = "{\"variants\": [\"ism:1:A:C\"]";
  if (scorers != nullptr) body += ", \"scorers\": " + Serialised(*scorers);
  body += "}";
  auto read = ValidateVariantScoreBody(body);
  if (!read.ok()) {
    if (const auto* details = std::get_if<ValidationDetails>(&read.status().details())) {
      for (const FieldError& e : details->errors) Report(errors, e);
    } else {
      Report(errors, {{"body", "scorers"}, read.status().message(), "value_error"});
    }
    return;
  }
  out->options = std::move(read).value();
  out->options.variants.clear();
  if (out->options.expression && out->options.expression_contexts.size() != 1) {
    Report(errors, {{"body", "scorers", "expression", "contexts"},
                    "ISM's expression scorer scores one context (each cell is one number); "
                    "send one request per context",
                    "too_long"});
    return;
  }
  out->scorer = out->options.splice       ? "splice"
                : out->options.chromatin  ? "chromatin"
                : out->options.expression ? "expression"
                                          : "promoter";
}

// The expression scorer's context: a sequence is the expression window itself, so it is that
// long and names no gene (an interval's gene is looked up by the runner).
void CheckExpressionContext(const ValidatedIsm& out, std::vector<FieldError>* errors) {
  if (out.scorer != "expression" || out.interval) return;
  if (!out.expression_gene.empty()) {
    Report(errors, {{"body", "scorers", "expression", "gene"},
                    "gene names a gene of an interval's contig; a sequence is the expression "
                    "window itself (TSS at position " + std::to_string(kExpressionHalfWindowBp + 1) +
                        "), so send it without gene",
                    "extra_forbidden"});
  }
  if (!out.sequence.empty() && static_cast<int64_t>(out.sequence.size()) != kExpressionWindowBp) {
    Report(errors, {{"body", "sequence"},
                    "with the expression scorer the sequence is the expression window: " +
                        std::to_string(kExpressionWindowBp) + " bp read on the gene's sense "
                        "strand with the TSS at position " +
                        std::to_string(kExpressionHalfWindowBp + 1) + " (this one is " +
                        std::to_string(out.sequence.size()) + " bp); or send an interval",
                    "value_error"});
  }
}

// The window against its context: inside it, at most 200 bp, no N (sequence only: an
// interval's bases are read by the runner, which checks them with CheckWindowBases).
void CheckWindow(ValidatedIsm* out, std::vector<FieldError>* errors) {
  if (out->window_start > out->window_end) {
    Report(errors, WindowError("start " + std::to_string(out->window_start) + " is after end " +
                               std::to_string(out->window_end) + " (both 1-based, inclusive)"));
    return;
  }
  const int64_t length = out->window_end - out->window_start + 1;
  if (length > kMaxIsmWindowBp) {
    Report(errors, WindowError("the window is " + std::to_string(length) + " bp; ISM scores " +
                                   "windows of at most " + std::to_string(kMaxIsmWindowBp) +
                                   " bp (send longer stretches in several requests)",
                               "too_long"));
    return;
  }
  const int64_t first = out->interval ? out->interval->start : 1;
  const int64_t last =
      out->interval ? out->interval->end : static_cast<int64_t>(out->sequence.size());
  if (out->window_start < first || out->window_end > last) {
    const std::string context =
        out->interval ? "the interval " + out->interval->Label()
                      : "the sequence (positions 1-" + std::to_string(last) + ")";
    Report(errors, WindowError("the window " + std::to_string(out->window_start) + "-" +
                               std::to_string(out->window_end) + " is not inside " + context));
    return;
  }
  if (!out->interval) {
    Status bases = CheckWindowBases(out->sequence, out->window_start - 1, length,
                                    out->window_start);
    if (!bases.ok()) {
      const auto& details = std::get<ValidationDetails>(bases.details());
      for (const FieldError& e : details.errors) Report(errors, e);
    }
  }
}

}  // namespace

Status CheckWindowBases(const std::string& bases, int64_t from, int64_t length,
                        int64_t first_position) {
  for (int64_t i = 0; i < length; ++i) {
    const char base = bases[static_cast<size_t>(from + i)];
    if (base != 'A' && base != 'C' && base != 'G' && base != 'T') {
      return ValidationFailedStatus({WindowError(
          "the window holds an N at position " + std::to_string(first_position + i) +
          ": ISM mutates known bases only (an N has no REF to compare with)")});
    }
  }
  return Status::Ok();
}

StatusOr<ValidatedIsm> ValidateIsmBody(std::string_view body) {
  rapidjson::Document doc;
  DNASERVE_RETURN_IF_ERROR(ParseJsonBody(body, &doc));
  if (!doc.IsObject()) {
    return ValidationFailedStatus({{{"body"}, "Input should be a valid dictionary", "model_type"}});
  }
  std::vector<FieldError> errors;
  ValidatedIsm out;
  rapidjson::Document scorers;
  const bool has_scorers = doc.HasMember("scorers");
  if (has_scorers) {
    scorers.CopyFrom(doc["scorers"], scorers.GetAllocator());
    doc.RemoveMember("scorers");
  }
  CheckedObject checked;
  CheckObject(IsmBodySpec(), doc, {"body"}, &errors, &checked);
  auto interval = ReadInterval(checked, 1, &errors);
  if (interval) out.interval = std::move(interval);
  if (const std::string* sequence = checked.String("sequence")) out.sequence = *sequence;
  const CheckedObject* window = checked.Object("window");
  if (has_scorers) TakeExpressionGene(&scorers, &out, &errors);
  ReadIsmScorer(has_scorers ? &scorers : nullptr, &out, &errors);
  CheckExpressionContext(out, &errors);
  const bool context_read = out.interval.has_value() || !out.sequence.empty();
  if (window != nullptr && !checked.Failed("window") && context_read) {
    out.window_start = window->Integer("start").value_or(0);
    out.window_end = window->Integer("end").value_or(0);
    CheckWindow(&out, &errors);
  }
  if (!errors.empty()) return ValidationFailedStatus(std::move(errors));
  return out;
}

}  // namespace dnaserve::core
