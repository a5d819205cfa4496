#include "gateway/openapi/openapi.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "core/render/json_writer.h"
#include "gateway/mcp/mcp_endpoint.h"
#include "gateway/mcp/tool_catalogue.h"
#include "gateway/openapi/openapi_base.h"
#include "core/quota/quota.h"
#include "core/validation/genome_interval.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/request_schema.h"
#include "core/validation/variant_request.h"

// The document is gateway/openapi/openapi.base.json (compiled in, see openapi_base.h) with the
// parts that code owns merged in: the request schemas of the validation tables, the output
// formats of each task, the error codes, the sync limits, the MCP tool list, and per request
// the version and the live model roster. Everything else is reviewed as the JSON it is.

namespace dnaserve::gateway {
namespace {

using rapidjson::Document;
using rapidjson::Pointer;
using rapidjson::Value;
using Allocator = Document::AllocatorType;

// JsonWriter with the handful of shorthands this document needs.
class Json : public core::JsonWriter {
 public:
  void Obj() { StartObject(); }
  void EndObj() { EndObject(); }
  void Arr() { StartArray(); }
  void EndArr() { EndArray(); }
  void Str(std::string_view s) { String(s); }
  void Num(double d) { Double(d); }

  void KStr(std::string_view k, std::string_view s) { Field(k, s); }
  void KInt(std::string_view k, int64_t i) { Field(k, i); }
  void KBool(std::string_view k, bool b) { Field(k, b); }
  void KObj(std::string_view k) {
    Key(k);
    Obj();
  }
  void KArr(std::string_view k) {
    Key(k);
    Arr();
  }
  void StrArr(std::string_view k, const std::vector<std::string>& items) {
    KArr(k);
    for (const auto& item : items) Str(item);
    EndArr();
  }
  // {"$ref": "#/components/schemas/<name>"} as the value of an already written key.
  void Ref(std::string_view name) {
    Obj();
    KStr("$ref", "#/components/schemas/" + std::string(name));
    EndObj();
  }
  // {"type": <type>} shorthand; `nullable` makes it [type, "null"].
  void Type(std::string_view type, bool nullable = false) {
    Key("type");
    if (nullable) {
      Arr();
      Str(type);
      Str("null");
      EndArr();
    } else {
      Str(type);
    }
  }
};

// ------------------------------------------------------------------ request schemas (the table)

std::string_view JsonTypeName(core::FieldType type) {
  switch (type) {
    case core::FieldType::kString:
      return "string";
    case core::FieldType::kNumber:
      return "number";
    case core::FieldType::kInteger:
      return "integer";
    case core::FieldType::kBoolean:
      return "boolean";
    case core::FieldType::kStringArray:
      return "array";
    case core::FieldType::kObject:
      return "object";
  }
  return "string";
}

// ECMA-262 has no inline case-insensitivity flag, so "UCSC" becomes "[Uu][Cc][Ss][Cc]".
std::string CaseInsensitivePattern(const std::vector<std::string>& values) {
  std::string out = "^(?:";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += '|';
    for (char c : values[i]) {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        out += '[';
        out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out += ']';
      } else if (std::isalnum(static_cast<unsigned char>(c))) {
        out += c;
      } else {
        out += '\\';
        out += c;
      }
    }
  }
  out += ")$";
  return out;
}

void WriteDefault(Json& j, const core::FieldDefault& value) {
  if (std::holds_alternative<std::monostate>(value)) return;
  j.Key("default");
  if (const auto* b = std::get_if<bool>(&value)) j.Bool(*b);
  if (const auto* i = std::get_if<int64_t>(&value)) j.Int(*i);
  if (const auto* d = std::get_if<double>(&value)) j.Num(*d);
  if (const auto* s = std::get_if<std::string>(&value)) j.Str(*s);
  if (const auto* v = std::get_if<std::vector<std::string>>(&value)) {
    j.Arr();
    for (const auto& item : *v) j.Str(item);
    j.EndArr();
  }
}

void WriteBound(Json& j, std::string_view key, const std::optional<double>& bound, core::FieldType type) {
  if (!bound) return;
  j.Key(key);
  if (type == core::FieldType::kInteger) {
    j.Int(static_cast<int64_t>(*bound));
  } else {
    j.Num(*bound);
  }
}

void WriteFieldSchema(Json& j, const core::FieldSpec& f) {
  j.Obj();
  if (f.type == core::FieldType::kObject && f.object != nullptr) {
    const std::string ref = "#/components/schemas/" + f.object->title;
    if (f.nullable) {
      j.KArr("anyOf");
      j.Ref(f.object->title);
      j.Obj();
      j.KStr("type", "null");
      j.EndObj();
      j.EndArr();
    } else {
      j.KStr("$ref", ref);
    }
  } else {
    j.Type(JsonTypeName(f.type), f.nullable);
  }
  WriteBound(j, "minimum", f.minimum, f.type);
  WriteBound(j, "maximum", f.maximum, f.type);
  if (f.dna_sequence) {
    j.KStr("pattern", core::kDnaPattern);
    // The raw string is at least as long as the stripped one, so minLength is a safe necessary
    // condition; maxLength is not published because whitespace would count against it.
    if (f.min_length) j.KInt("minLength", *f.min_length);
    if (f.min_length) j.KInt("x-min-bp", *f.min_length);
    if (f.max_length) j.KInt("x-max-bp", *f.max_length);
  } else {
    if (f.min_length) j.KInt("minLength", *f.min_length);
    if (f.max_length) j.KInt("maxLength", *f.max_length);
  }
  if (!f.accepted_values.empty() && f.exact_values) {
    j.StrArr("enum", f.accepted_values);
  } else if (!f.accepted_values.empty()) {
    j.KStr("pattern", CaseInsensitivePattern(f.accepted_values));
    j.StrArr("examples", f.accepted_values);
  }
  if (!f.pattern.empty()) j.KStr("pattern", f.pattern);
  if (f.type == core::FieldType::kStringArray) {
    j.KObj("items");
    j.KStr("type", "string");
    if (!f.item_values.empty()) j.StrArr("enum", f.item_values);
    if (f.item_min_length) j.KInt("minLength", *f.item_min_length);
    j.EndObj();
    if (f.min_items) j.KInt("minItems", *f.min_items);
    if (f.max_items) j.KInt("maxItems", *f.max_items);
  }
  WriteDefault(j, f.default_value);
  if (!f.description.empty()) j.KStr("description", f.description);
  j.EndObj();
}

void WriteObjectSchema(Json& j, const core::ObjectSpec& spec) {
  j.KObj(spec.title);
  j.KStr("title", spec.title);
  j.KStr("type", "object");
  if (!spec.description.empty()) j.KStr("description", spec.description);
  j.KObj("properties");
  for (const core::FieldSpec& f : spec.fields) {
    j.Key(f.name);
    WriteFieldSchema(j, f);
  }
  j.EndObj();
  std::vector<std::string> required;
  for (const core::FieldSpec& f : spec.fields) {
    if (f.required) required.push_back(f.name);
  }
  if (!required.empty()) j.StrArr("required", required);
  if (!spec.exactly_one_of.empty()) {
    j.KArr("oneOf");
    for (const std::string& name : spec.exactly_one_of) {
      j.Obj();
      j.StrArr("required", {name});
      j.EndObj();
    }
    j.EndArr();
  }
  j.KBool("additionalProperties", false);
  j.EndObj();
}
void WriteFormatParameter(Json& j, Task task) {
  j.Obj();
  j.KStr("name", "format");
  j.KStr("in", "query");
  j.KBool("required", false);
  std::string description =
      "Output format (case-insensitive). The Accept header may select it instead (";
  bool first = true;
  for (OutputFormat f : SupportedFormats(task)) {
    if (!first) description += ", ";
    first = false;
    description += std::string(FormatMediaType(f)) + " -> " + std::string(FormatName(f));
  }
  description +=
      "); this parameter wins over Accept. An unsupported value is 415 unsupported_format, never "
      "a silent JSON fallback. Text formats are synchronous only.";
  j.KStr("description", description);
  j.KObj("schema");
  j.KStr("type", "string");
  j.KArr("enum");
  for (OutputFormat f : SupportedFormats(task)) j.Str(FormatName(f));
  j.EndArr();
  j.KStr("default", "json");
  j.EndObj();
  j.EndObj();
}

// ------------------------------------------------------------------ the merge

Value Str(std::string_view s, Allocator& a) {
  return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

// The object at a JSON Pointer of the base (e.g. "/paths/~1health/get"); a missing one is a
// defect of the base, which the unit tests report, so it is created rather than crashed on.
Value& At(Document& doc, const std::string& pointer) {
  Value& v = Pointer(pointer.c_str()).GetWithDefault(doc, Value(rapidjson::kObjectType),
                                                     doc.GetAllocator());
  if (!v.IsObject()) v.SetObject();
  return v;
}

void Set(Document& doc, Value& object, std::string_view key, Value value) {
  auto it = object.FindMember(Str(key, doc.GetAllocator()));
  if (it != object.MemberEnd()) {
    it->value = std::move(value);
  } else {
    object.AddMember(Str(key, doc.GetAllocator()), std::move(value), doc.GetAllocator());
  }
}

// JSON text written by this file, as a value of `doc`.
Value ParseInto(Document& doc, const std::string& text) {
  Document part;
  part.Parse(text.c_str(), text.size());
  return Value(part, doc.GetAllocator());
}

std::string PredictPointer(Task task) {
  return "/paths/~1v1~1tasks~1" + std::string(TaskName(task)) + "~1predict/post";
}

std::string Replace(std::string text, std::string_view from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The MCP tool names and protocol revisions are code; the base names them by placeholder.
std::string BaseText() {
  std::string tools;
  for (const auto& tool : mcp::Tools()) tools += (tools.empty() ? "" : ", ") + tool.name;
  std::string revisions;
  for (auto v : mcp::kProtocolVersions) {
    revisions += (revisions.empty() ? "" : ", ") + std::string(v);
  }
  std::string text = Replace(std::string(kOpenApiBase), "@MCP_TOOLS@", tools);
  return Replace(std::move(text), "@MCP_REVISIONS@", revisions);
}

void MergeRequestSchemas(Document& doc) {
  Json j;
  j.Obj();
  for (Task task : kAllTasks) {
    WriteObjectSchema(j, core::PredictRequestSchema(task));
    WriteObjectSchema(j, core::PredictOptionsSchema(task));
  }
  for (const core::ObjectSpec* spec : {&core::FindGenesRequestSchema(), &core::FindGenesOptionsSchema(),
                                 &core::VariantRequestSchema(), &core::VariantInputSchema(),
                                 &core::VariantOptionsSchema(), &core::GenomeIntervalSchema()}) {
    WriteObjectSchema(j, *spec);
  }
  j.EndObj();
  Value schemas = ParseInto(doc, j.Take());
  Value& target = At(doc, "/components/schemas");
  for (auto& m : schemas.GetObject()) Set(doc, target, m.name.GetString(), std::move(m.value));
}

// The format query parameter and the 200's text media types: the task's SupportedFormats.
void MergeFormats(Document& doc, Task task) {
  Json j;
  WriteFormatParameter(j, task);
  Value& op = At(doc, PredictPointer(task));
  Value parameters(rapidjson::kArrayType);
  parameters.PushBack(ParseInto(doc, j.Take()), doc.GetAllocator());
  auto old = op.FindMember("parameters");
  if (old != op.MemberEnd() && old->value.IsArray()) {
    for (auto& p : old->value.GetArray()) parameters.PushBack(std::move(p), doc.GetAllocator());
  }
  Set(doc, op, "parameters", std::move(parameters));
  Value& content = At(doc, PredictPointer(task) + "/responses/200/content");
  for (OutputFormat f : SupportedFormats(task)) {
    if (f == OutputFormat::kJson) continue;
    Set(doc, content, FormatMediaType(f),
        ParseInto(doc, R"({"schema": {"type": "string"}})"));
  }
}

// Everything that does not change while the gateway runs, merged once.
Document BuildStaticDocument() {
  Document doc;
  const std::string text = BaseText();
  doc.Parse(text.c_str(), text.size());
  if (!doc.IsObject()) doc.SetObject();  // a broken base: the unit tests say where
  Allocator& a = doc.GetAllocator();
  Set(doc, doc, "x-contract-revision", Value(kContractRevision));
  Set(doc, doc, "x-rate-limit-burst-divisor", Value(static_cast<int>(core::kBurstDivisor)));
  MergeRequestSchemas(doc);
  for (Task task : kAllTasks) MergeFormats(doc, task);
  Set(doc, At(doc, PredictPointer(Task::kAnnotation)), "x-sync-limit-bp",
      Value(static_cast<int64_t>(kAnnotationSyncLimitBp)));
  Set(doc, At(doc, "/paths/~1v1~1workflows~1find-genes-and-predict-expression/post"),
      "x-sync-limit-bp", Value(static_cast<int64_t>(core::kFindGenesSyncLimitBp)));
  Value codes(rapidjson::kArrayType);
  for (int c = static_cast<int>(ErrorCode::kBadRequest);
       c <= static_cast<int>(ErrorCode::kServiceUnavailable); ++c) {
    codes.PushBack(Str(ErrorCodeName(static_cast<ErrorCode>(c)), a), a);
  }
  Set(doc, At(doc, "/components/schemas/Error/properties/code"), "enum", std::move(codes));
  return doc;
}

const Document& StaticDocument() {
  static const Document doc = BuildStaticDocument();
  return doc;
}

Value ModelsExtension(Document& doc, const core::ModelCatalogue& catalogue, Task task) {
  Allocator& a = doc.GetAllocator();
  Value x(rapidjson::kObjectType);
  std::optional<std::string> default_model =
      catalogue.Known(task) ? catalogue.DefaultModel(task) : std::nullopt;
  x.AddMember("default", default_model ? Str(*default_model, a) : Value(), a);
  Value models(rapidjson::kArrayType);
  if (catalogue.Known(task)) {
    for (const auto& m : catalogue.Models(task)) models.PushBack(Str(m.id(), a), a);
  }
  x.AddMember("models", models, a);
  return x;
}

}  // namespace

std::string BuildOpenApiDocument(const core::ModelCatalogue& catalogue, std::string_view version) {
  Document doc;
  doc.CopyFrom(StaticDocument(), doc.GetAllocator());
  Set(doc, At(doc, "/info"), "version", Str(version, doc.GetAllocator()));
  for (Task task : kAllTasks) {
    Set(doc, At(doc, PredictPointer(task)), "x-models", ModelsExtension(doc, catalogue, task));
  }
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> writer(out);
  doc.Accept(writer);
  return std::string(out.GetString(), out.GetSize());
}

}  // namespace dnaserve::gateway
