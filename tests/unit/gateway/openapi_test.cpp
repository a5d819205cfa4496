// The served OpenAPI document: parsed back and checked against the contract, the validation
// table it is generated from, and the validator itself (published bounds are enforced bounds).
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include "gateway/openapi/openapi.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/task.h"
#include "core/dispatch/model_catalogue.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/predict_request.h"
#include "core/validation/genome_interval.h"
#include "core/validation/request_schema.h"
#include "core/validation/variant_request.h"

namespace dnaserve::gateway {
namespace {

using rapidjson::Value;
constexpr const char* kVersion = "2026.05.14.3 (a1b2c3d)";

worker::v1::ModelInfo Model(const std::string& id, bool is_default) {
  worker::v1::ModelInfo m;
  m.set_id(id);
  m.set_is_default(is_default);
  return m;
}

struct Parsed {
  rapidjson::Document doc;
  explicit Parsed(const std::string& text) { doc.Parse(text.c_str(), text.size()); }
};

Parsed Build(const core::ModelCatalogue& catalogue) {
  return Parsed(BuildOpenApiDocument(catalogue, kVersion));
}

std::string S(const Value& v) {
  CATCH_REQUIRE(v.IsString());
  return std::string(v.GetString(), v.GetStringLength());
}

const Value& Member(const Value& v, const std::string& key) {
  CATCH_INFO("key: " << key);
  CATCH_REQUIRE(v.IsObject());
  auto it = v.FindMember(key.c_str());
  CATCH_REQUIRE(it != v.MemberEnd());
  return it->value;
}

bool HasMember(const Value& v, const std::string& key) {
  return v.IsObject() && v.HasMember(key.c_str());
}

// Follows a local $ref ("#/components/...").
const Value& Resolve(const rapidjson::Document& doc, const Value& v) {
  if (!HasMember(v, "$ref")) return v;
  std::string ref = S(v["$ref"]);
  CATCH_REQUIRE(ref.rfind("#/", 0) == 0);
  const Value* target = rapidjson::Pointer(ref.substr(1).c_str()).Get(doc);
  CATCH_INFO("unresolved " << ref);
  CATCH_REQUIRE(target != nullptr);
  return *target;
}

const Value& PredictOperation(const rapidjson::Document& doc, Task task) {
  return Member(
      Member(Member(doc, "paths"), "/v1/tasks/" + std::string(TaskName(task)) + "/predict"),
      "post");
}

const Value& RequestSchemaOf(const rapidjson::Document& doc, Task task) {
  const Value& op = PredictOperation(doc, task);
  return Resolve(
      doc,
      Member(Member(Member(Member(op, "requestBody"), "content"), "application/json"), "schema"));
}

std::set<std::string> TypesOf(const Value& schema) {
  std::set<std::string> out;
  const Value& t = Member(schema, "type");
  if (t.IsString()) {
    out.insert(S(t));
  } else {
    for (const auto& item : t.GetArray()) out.insert(S(item));
  }
  return out;
}

std::string ExpectedType(core::FieldType type) {
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
  return "";
}

// Checks one generated object schema against its table entry, recursing into nested objects.
void CheckObjectAgainstTable(const rapidjson::Document& doc, const Value& schema,
                             const core::ObjectSpec& spec) {
  CATCH_INFO("schema " << spec.title);
  CATCH_CHECK(S(Member(schema, "type")) == "object");
  CATCH_CHECK(S(Member(schema, "title")) == spec.title);
  const Value& additional = Member(schema, "additionalProperties");
  CATCH_REQUIRE(additional.IsBool());
  CATCH_CHECK_FALSE(additional.GetBool());
  const Value& props = Member(schema, "properties");
  CATCH_CHECK(props.MemberCount() == spec.fields.size());

  std::set<std::string> required_in_doc;
  if (HasMember(schema, "required")) {
    for (const auto& r : schema["required"].GetArray()) required_in_doc.insert(S(r));
  }
  std::set<std::string> required_in_table;
  for (const core::FieldSpec& f : spec.fields) {
    if (f.required) required_in_table.insert(f.name);
  }
  CATCH_CHECK(required_in_doc == required_in_table);

  for (const core::FieldSpec& f : spec.fields) {
    CATCH_INFO("field " << f.name);
    const Value& p = Member(props, f.name);
    CATCH_CHECK_FALSE(S(Member(p, "description")).empty());
    if (f.type == core::FieldType::kObject) {
      const Value* ref_holder = &p;
      if (f.nullable) {
        const Value& any = Member(p, "anyOf");
        CATCH_REQUIRE(any.Size() == 2);
        CATCH_CHECK(S(Member(any[1], "type")) == "null");
        ref_holder = &any[0];
      }
      CATCH_REQUIRE(HasMember(*ref_holder, "$ref"));
      CheckObjectAgainstTable(doc, Resolve(doc, *ref_holder), *f.object);
      continue;
    }
    std::set<std::string> types = TypesOf(p);
    CATCH_CHECK(types.count(ExpectedType(f.type)) == 1);
    CATCH_CHECK(types.count("null") == (f.nullable ? 1u : 0u));
    CATCH_CHECK(types.size() == (f.nullable ? 2u : 1u));
    if (f.minimum) CATCH_CHECK(Member(p, "minimum").GetDouble() == *f.minimum);
    if (f.maximum) CATCH_CHECK(Member(p, "maximum").GetDouble() == *f.maximum);
    if (!f.dna_sequence && f.max_length) {
      CATCH_CHECK(Member(p, "maxLength").GetInt64() == *f.max_length);
    }
    if (f.min_length) CATCH_CHECK(Member(p, "minLength").GetInt64() == *f.min_length);
    if (f.min_items) CATCH_CHECK(Member(p, "minItems").GetInt64() == *f.min_items);
    if (f.max_items) CATCH_CHECK(Member(p, "maxItems").GetInt64() == *f.max_items);
    if (f.item_min_length) {
      CATCH_CHECK(Member(Member(p, "items"), "minLength").GetInt64() == *f.item_min_length);
    }
    if (!f.pattern.empty()) CATCH_CHECK(S(Member(p, "pattern")) == f.pattern);
    if (f.exact_values) {
      std::vector<std::string> published;
      for (const auto& v : Member(p, "enum").GetArray()) published.push_back(S(v));
      CATCH_CHECK(published == f.accepted_values);
    }
    if (!f.item_values.empty()) {
      const Value& items = Member(Member(p, "items"), "enum");
      std::vector<std::string> published;
      for (const auto& i : items.GetArray()) published.push_back(S(i));
      CATCH_CHECK(published == f.item_values);
    }
    if (const auto* d = std::get_if<double>(&f.default_value)) {
      CATCH_CHECK(Member(p, "default").GetDouble() == *d);
    } else if (const auto* i = std::get_if<int64_t>(&f.default_value)) {
      CATCH_CHECK(Member(p, "default").GetInt64() == *i);
    } else if (const auto* b = std::get_if<bool>(&f.default_value)) {
      CATCH_CHECK(Member(p, "default").GetBool() == *b);
    } else if (const auto* s = std::get_if<std::string>(&f.default_value)) {
      CATCH_CHECK(S(Member(p, "default")) == *s);
    } else if (std::holds_alternative<std::monostate>(f.default_value)) {
      CATCH_CHECK_FALSE(HasMember(p, "default"));
    }
  }
}

void CollectRefs(const Value& v, std::vector<std::string>* out) {
  if (v.IsObject()) {
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      if (std::string(m->name.GetString()) == "$ref" && m->value.IsString()) {
        out->push_back(m->value.GetString());
      } else {
        CollectRefs(m->value, out);
      }
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) CollectRefs(item, out);
  }
}

std::string Security(const Value& op) {
  // A compact canonical form: "[{},{bearer:[]}]".
  const Value& sec = Member(op, "security");
  CATCH_REQUIRE(sec.IsArray());
  std::string out = "[";
  for (const auto& req : sec.GetArray()) {
    out += "{";
    for (auto m = req.MemberBegin(); m != req.MemberEnd(); ++m) {
      out += std::string(m->name.GetString()) + ":[" + std::to_string(m->value.Size()) + "]";
    }
    out += "}";
  }
  return out + "]";
}

// ------------------------------------------------------------------ tests

CATCH_TEST_CASE("the document is OpenAPI 3.1 JSON with the root facts", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  CATCH_REQUIRE_FALSE(p.doc.HasParseError());
  CATCH_REQUIRE(p.doc.IsObject());
  CATCH_CHECK(S(p.doc["openapi"]).rfind("3.1", 0) == 0);
  CATCH_CHECK(S(Member(Member(p.doc, "info"), "title")) == "dnaserve");
  CATCH_CHECK(S(Member(Member(p.doc, "info"), "version")) == kVersion);
  const Value& revision = Member(p.doc, "x-contract-revision");
  CATCH_REQUIRE(revision.IsInt());
  CATCH_CHECK(revision.GetInt() == kContractRevision);
  CATCH_CHECK(kContractRevision >= 1);
  const Value& divisor = Member(p.doc, "x-rate-limit-burst-divisor");
  CATCH_REQUIRE(divisor.IsInt());
  CATCH_CHECK(divisor.GetInt() == 6);
  // The version comes from the caller (the /health version), not a constant.
  Parsed other(BuildOpenApiDocument(catalogue, "2030.01.02.7 (fffffff)"));
  CATCH_CHECK(S(other.doc["info"]["version"]) == "2030.01.02.7 (fffffff)");
  CATCH_CHECK(other.doc["x-contract-revision"].GetInt() == kContractRevision);
}

CATCH_TEST_CASE("every route of the interface is described", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& paths = Member(p.doc, "paths");
  std::vector<std::pair<std::string, std::string>> routes = {
      {"/health", "get"},
      {"/v1/tasks/{task}/models", "get"},
      {"/v1/tasks/expression/contexts", "get"},
      {"/v1/tasks/jobs", "get"},
      {"/v1/tasks/jobs/{job_id}", "get"},
      {"/v1/tasks/jobs/{job_id}/files/{name}", "get"},
      {"/docs", "get"},
      {"/redoc", "get"},
      {"/v1/openapi.json", "get"},
      {"/docs/assets/{file}", "get"},
      {"/redoc/assets/{file}", "get"},
      {"/viewer", "get"},
      {"/viewer/assets/{file}", "get"},
      {"/v1/models/{model}/card", "get"},
      {"/v1/models/{model}/card/{file}", "get"},
  };
  for (Task task : kAllTasks) {
    routes.push_back({"/v1/tasks/" + std::string(TaskName(task)) + "/predict", "post"});
  }
  routes.push_back({"/v1/workflows/find-genes-and-predict-expression", "post"});
  routes.push_back({"/v1/workflows/genomic-variant-interpretation", "post"});
  routes.push_back({"/v1/variants/score", "post"});
  routes.push_back({"/v1/ism", "post"});
  routes.push_back({"/v1/genomes", "get"});
  routes.push_back({"/mcp", "post"});
  std::set<std::string> operation_ids;
  for (const auto& [path, method] : routes) {
    CATCH_INFO(path);
    const Value& op = Member(Member(paths, path), method);
    operation_ids.insert(S(Member(op, "operationId")));
  }
  CATCH_CHECK(operation_ids.size() == routes.size());  // one distinct operation per route
  CATCH_CHECK(paths.MemberCount() == routes.size());
}

CATCH_TEST_CASE("every $ref in the document resolves", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  std::vector<std::string> refs;
  CollectRefs(p.doc, &refs);
  CATCH_CHECK(refs.size() > 50);
  for (const auto& ref : refs) {
    CATCH_INFO(ref);
    CATCH_REQUIRE(ref.rfind("#/components/", 0) == 0);
    CATCH_CHECK(rapidjson::Pointer(ref.substr(1).c_str()).Get(p.doc) != nullptr);
  }
}

CATCH_TEST_CASE("request schemas are the validation table, closed, field by field", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  std::set<std::string> titles;
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const core::ObjectSpec& table = core::PredictRequestSchema(task);
    const Value& schema = RequestSchemaOf(p.doc, task);
    CheckObjectAgainstTable(p.doc, schema, table);
    titles.insert(table.title);
    // The options schema of this task is its own component.
    const core::FieldSpec* options = table.Find("options");
    CATCH_REQUIRE(options != nullptr);
    CATCH_CHECK(options->object == &core::PredictOptionsSchema(task));
    titles.insert(options->object->title);
  }
  CATCH_CHECK(titles.size() == 12);  // no shared request model
  // Spot checks that the table holds what the contract says.
  const Value& enhancer_options =
      Member(Member(Member(p.doc, "components"), "schemas"), "EnhancerOptions");
  CATCH_CHECK(Member(enhancer_options, "properties").MemberCount() == 0);
  // sequence or interval (exactly one: published as oneOf), then the task's own fields.
  CATCH_CHECK(core::PredictRequestSchema(Task::kExpression).fields.size() == 6);
  CATCH_CHECK(core::PredictRequestSchema(Task::kPromoter).fields.size() == 5);
  CATCH_CHECK(core::PredictRequestSchema(Task::kPromoter).Find("interval")->object ==
              &core::GenomeIntervalSchema());
  CATCH_CHECK(core::PredictRequestSchema(Task::kPromoter).exactly_one_of ==
              std::vector<std::string>{"sequence", "interval"});
}

CATCH_TEST_CASE("the sequence schema publishes the pattern and post-stripping bounds",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const Value& seq = Member(Member(RequestSchemaOf(p.doc, task), "properties"), "sequence");
    CATCH_CHECK(S(Member(seq, "pattern")) == "^\\s*(?:[ACGNTacgnt]\\s*)+$");
    const std::string description = S(Member(seq, "description"));
    CATCH_CHECK(description.find("whitespace") != std::string::npos);
    CATCH_CHECK(description.find("measured on the stripped string") != std::string::npos);
    CATCH_CHECK(description.find(std::to_string(MinSequenceBp(task)) + " bp") != std::string::npos);
    CATCH_CHECK(Member(seq, "x-min-bp").GetInt64() == MinSequenceBp(task));
    CATCH_CHECK(Member(seq, "x-max-bp").GetInt64() == kMaxSequenceBp);
    CATCH_CHECK(Member(seq, "minLength").GetInt64() == MinSequenceBp(task));
    // A raw-string maxLength would reject valid line-wrapped input, so none is published.
    CATCH_CHECK_FALSE(HasMember(seq, "maxLength"));
  }
}

CATCH_TEST_CASE("predict operations: format enum, Prefer, responses, security", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const std::vector<std::string> codes = {"200", "202", "400", "401", "403", "404", "409",
                                          "410", "413", "415", "422", "429", "500", "503"};
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const Value& op = PredictOperation(p.doc, task);
    CATCH_CHECK(Security(op) == "[{bearer:[0]}]");

    bool saw_format = false;
    bool saw_prefer = false;
    for (const auto& param : Member(op, "parameters").GetArray()) {
      const std::string name = S(Member(param, "name"));
      if (name == "format") {
        saw_format = true;
        CATCH_CHECK(S(Member(param, "in")) == "query");
        std::vector<std::string> published;
        for (const auto& e : Member(Member(param, "schema"), "enum").GetArray()) {
          published.push_back(S(e));
        }
        std::vector<std::string> expected;
        for (OutputFormat f : SupportedFormats(task)) expected.emplace_back(FormatName(f));
        CATCH_CHECK(published == expected);
        CATCH_CHECK(S(Member(Member(param, "schema"), "default")) == "json");
      } else if (name == "Prefer") {
        saw_prefer = true;
        CATCH_CHECK(S(Member(param, "in")) == "header");
      }
    }
    CATCH_CHECK(saw_format);
    CATCH_CHECK(saw_prefer);

    const Value& responses = Member(op, "responses");
    for (const auto& code : codes) {
      CATCH_INFO("status " << code);
      const Value& r = Member(responses, code);
      CATCH_CHECK_FALSE(S(Member(r, "description")).empty());
      if (code[0] == '4' || code[0] == '5') {
        const Value& schema = Member(Member(Member(r, "content"), "application/json"), "schema");
        CATCH_CHECK(S(Member(schema, "$ref")) == "#/components/schemas/ErrorEnvelope");
      }
    }
    // The 200 offers each supported format's media type.
    const Value& content = Member(Member(responses, "200"), "content");
    CATCH_CHECK(content.MemberCount() == SupportedFormats(task).size());
    for (OutputFormat f : SupportedFormats(task)) {
      CATCH_CHECK(HasMember(content, std::string(FormatMediaType(f))));
    }
    CATCH_CHECK(S(Member(Member(Member(Member(responses, "202"), "content"), "application/json"),
                         "schema")["$ref"]) == "#/components/schemas/JobSubmitted");
    // x-sync-limit-bp only on the annotation operation.
    if (task == Task::kAnnotation) {
      CATCH_CHECK(Member(op, "x-sync-limit-bp").GetInt64() == 200000);
    } else {
      CATCH_CHECK_FALSE(HasMember(op, "x-sync-limit-bp"));
    }
  }
  const Value& envelope = Member(Member(Member(p.doc, "components"), "schemas"), "ErrorEnvelope");
  const Value& error = Resolve(p.doc, Member(Member(envelope, "properties"), "error"));
  for (std::string field : {"code", "message", "request_id", "details"}) {
    CATCH_CHECK(HasMember(Member(error, "properties"), field));
  }
}

CATCH_TEST_CASE("x-models publishes each task's roster and default from the catalogue",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  catalogue.SetModels(Task::kPromoter, {Model("promoter-a", false), Model("promoter-b", true)});
  catalogue.SetModels(Task::kChromatin, {});
  Parsed p = Build(catalogue);
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const Value& x = Member(PredictOperation(p.doc, task), "x-models");
    const Value& models = Member(x, "models");
    CATCH_REQUIRE(models.IsArray());
    if (task == Task::kPromoter) {
      CATCH_CHECK(S(Member(x, "default")) == "promoter-b");
      CATCH_REQUIRE(models.Size() == 2);
      CATCH_CHECK(S(models[0]) == "promoter-a");
      CATCH_CHECK(S(models[1]) == "promoter-b");
    } else {
      // Unknown (never fetched) or empty rosters publish an empty list and no default.
      CATCH_CHECK(Member(x, "default").IsNull());
      CATCH_CHECK(models.Size() == 0);
    }
  }
  // The document follows the live catalogue.
  catalogue.SetModels(Task::kExpression, {Model("expr-1", true)});
  Parsed later = Build(catalogue);
  CATCH_CHECK(S(Member(Member(PredictOperation(later.doc, Task::kExpression), "x-models"),
                       "default")) == "expr-1");
}

CATCH_TEST_CASE("security: public routes, the optional models route, bearer elsewhere",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& paths = Member(p.doc, "paths");
  for (std::string path : {"/health", "/docs", "/redoc", "/v1/openapi.json"}) {
    CATCH_INFO(path);
    CATCH_CHECK(Security(Member(Member(paths, path), "get")) == "[]");
  }
  CATCH_CHECK(Security(Member(Member(paths, "/v1/tasks/{task}/models"), "get")) ==
              "[{}{bearer:[0]}]");
  CATCH_CHECK(Security(Member(Member(paths, "/v1/tasks/jobs"), "get")) == "[{bearer:[0]}]");
  CATCH_CHECK(Security(Member(Member(paths, "/v1/tasks/jobs/{job_id}"), "get")) ==
              "[{bearer:[0]}]");
  const Value& bearer = Member(Member(Member(p.doc, "components"), "securitySchemes"), "bearer");
  CATCH_CHECK(S(Member(bearer, "type")) == "http");
  CATCH_CHECK(S(Member(bearer, "scheme")) == "bearer");
}

CATCH_TEST_CASE("jobs list limit is an integer 1-500, default 50", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& op = Member(Member(Member(p.doc, "paths"), "/v1/tasks/jobs"), "get");
  const Value& params = Member(op, "parameters");
  CATCH_REQUIRE(params.Size() == 1);
  CATCH_CHECK(S(Member(params[0], "name")) == "limit");
  CATCH_CHECK(S(Member(params[0], "in")) == "query");
  const Value& schema = Member(params[0], "schema");
  CATCH_CHECK(S(Member(schema, "type")) == "integer");
  CATCH_CHECK(Member(schema, "minimum").GetInt() == 1);
  CATCH_CHECK(Member(schema, "maximum").GetInt() == 500);
  CATCH_CHECK(Member(schema, "default").GetInt() == 50);
}

// A body built only from the published document: a sequence of x-min-bp bases, every required
// option a short string. Then each published numeric/length bound is probed on the validator.
CATCH_TEST_CASE("published bounds are exactly the bounds the validator enforces", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const Value& request = RequestSchemaOf(p.doc, task);
    const Value& props = Member(request, "properties");
    const Value& seq = Member(props, "sequence");
    const std::string sequence(static_cast<size_t>(Member(seq, "x-min-bp").GetInt64()), 'A');

    const Value& options_field = Member(props, "options");
    const Value& options_schema = Resolve(
        p.doc, HasMember(options_field, "anyOf") ? options_field["anyOf"][0] : options_field);
    std::string required_options;
    if (HasMember(options_schema, "required")) {
      for (const auto& r : options_schema["required"].GetArray()) {
        required_options += (required_options.empty() ? "" : ",") + ("\"" + S(r) + "\":\"x\"");
      }
    }
    auto body = [&](const std::string& option_json, const std::string& top_json) {
      std::string options = "{" + required_options;
      if (!option_json.empty()) options += (required_options.empty() ? "" : ",") + option_json;
      options += "}";
      std::string b = "{\"sequence\":\"" + sequence + "\",\"options\":" + options;
      if (!top_json.empty()) b += "," + top_json;
      return b + "}";
    };
    CATCH_REQUIRE(core::ValidatePredictBody(task, body("", "")).ok());

    for (auto m = Member(options_schema, "properties").MemberBegin();
         m != options_schema["properties"].MemberEnd(); ++m) {
      const std::string name = m->name.GetString();
      const Value& field = m->value;
      CATCH_INFO("option " << name);
      const std::vector<std::string> loc = {"body", "options", name};
      auto expect_error_at = [&](const StatusOr<core::ValidatedPredict>& r) {
        CATCH_REQUIRE_FALSE(r.ok());
        const auto& errors = std::get<ValidationDetails>(r.status().details()).errors;
        CATCH_REQUIRE(errors.size() == 1);
        CATCH_CHECK(errors[0].loc == loc);
      };
      if (HasMember(field, "maximum")) {
        double max = field["maximum"].GetDouble();
        double step = TypesOf(field).count("integer") ? 1.0 : 0.001;
        CATCH_CHECK(
            core::ValidatePredictBody(task, body("\"" + name + "\":" + std::to_string(max), "")).ok());
        expect_error_at(
            core::ValidatePredictBody(task, body("\"" + name + "\":" + std::to_string(max + step), "")));
      }
      if (HasMember(field, "minimum")) {
        double min = field["minimum"].GetDouble();
        double step = TypesOf(field).count("integer") ? 1.0 : 0.001;
        CATCH_CHECK(
            core::ValidatePredictBody(task, body("\"" + name + "\":" + std::to_string(min), "")).ok());
        expect_error_at(
            core::ValidatePredictBody(task, body("\"" + name + "\":" + std::to_string(min - step), "")));
      }
    }
    for (std::string name : {"model", "sequence_name"}) {
      CATCH_INFO(name);
      const int64_t max = Member(Member(props, name), "maxLength").GetInt64();
      const std::string at_max(static_cast<size_t>(max), 'n');
      CATCH_CHECK(core::ValidatePredictBody(task, body("", "\"" + name + "\":\"" + at_max + "\"")).ok());
      CATCH_CHECK_FALSE(
          core::ValidatePredictBody(task, body("", "\"" + name + "\":\"" + at_max + "n\"")).ok());
    }
    // Any key the schema does not list is refused, at both levels.
    CATCH_CHECK_FALSE(core::ValidatePredictBody(task, body("", "\"unlisted\":1")).ok());
    CATCH_CHECK_FALSE(core::ValidatePredictBody(task, body("\"unlisted\":1", "")).ok());
  }
}

// ------------------------------------------------------------------ find-genes workflow

const Value& FindGenesOperation(const rapidjson::Document& doc) {
  return Member(Member(Member(doc, "paths"), "/v1/workflows/find-genes-and-predict-expression"),
                "post");
}

CATCH_TEST_CASE("find-genes: request schema is its validation table, closed", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& op = FindGenesOperation(p.doc);
  const Value& schema = Resolve(
      p.doc,
      Member(Member(Member(Member(op, "requestBody"), "content"), "application/json"), "schema"));
  CheckObjectAgainstTable(p.doc, schema, core::FindGenesRequestSchema());
  // sequence or interval, sequence_name, options
  CATCH_CHECK(core::FindGenesRequestSchema().fields.size() == 4);
  CATCH_CHECK(core::FindGenesRequestSchema().Find("options")->object == &core::FindGenesOptionsSchema());
  const Value& seq = Member(Member(schema, "properties"), "sequence");
  CATCH_CHECK(Member(seq, "x-min-bp").GetInt64() == 1000);
  CATCH_CHECK(Member(seq, "x-max-bp").GetInt64() == 500000);
  CATCH_CHECK(S(Member(seq, "pattern")) == "^\\s*(?:[ACGNTacgnt]\\s*)+$");
  const Value& options = Resolve(p.doc, Member(Member(schema, "properties"), "options"));
  std::set<std::string> option_names;
  for (auto m = Member(options, "properties").MemberBegin(); m != options["properties"].MemberEnd();
       ++m) {
    option_names.insert(m->name.GetString());
  }
  CATCH_CHECK(option_names == std::set<std::string>{"description", "annotation_model",
                                                    "expression_model", "batch_size",
                                                    "shift_coordinates"});
  CATCH_CHECK(S(Member(options, "required")[0]) == "description");
}

CATCH_TEST_CASE("find-genes: operation, sync cap, JSON-only responses and job poll",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& op = FindGenesOperation(p.doc);
  CATCH_CHECK(S(Member(op, "operationId")) == "findGenesAndPredictExpression");
  CATCH_CHECK(Security(op) == "[{bearer:[0]}]");
  CATCH_CHECK(Member(op, "x-sync-limit-bp").GetInt64() == 50000);
  // Prefer, and no format parameter: the operation is JSON only.
  const Value& params = Member(op, "parameters");
  CATCH_REQUIRE(params.Size() == 1);
  CATCH_CHECK(S(Member(params[0], "name")) == "Prefer");
  const Value& responses = Member(op, "responses");
  for (std::string code : {"200", "202", "400", "401", "403", "404", "413", "415", "422", "429",
                           "500", "503"}) {
    CATCH_INFO(code);
    const Value& r = Member(responses, code);
    CATCH_CHECK_FALSE(S(Member(r, "description")).empty());
  }
  CATCH_CHECK(S(Member(responses, "413")["description"]).find("sync_too_large") !=
              std::string::npos);
  const Value& ok_content = Member(Member(responses, "200"), "content");
  CATCH_CHECK(ok_content.MemberCount() == 1);
  const Value& response = Resolve(p.doc, Member(Member(ok_content, "application/json"), "schema"));
  const Value& data = Member(Member(response, "properties"), "data");
  std::set<std::string> data_required;
  for (const auto& r : Member(data, "required").GetArray()) data_required.insert(S(r));
  CATCH_CHECK(data_required ==
              std::set<std::string>{"task", "annotation_model", "expression_model", "input",
                                    "summary", "annotation", "expression_predictions"});
  // The annotation payload is the annotation task's data schema.
  const Value& annotation = Resolve(p.doc, Member(Member(data, "properties"), "annotation"));
  CATCH_CHECK(S(Member(Member(Member(annotation, "properties"), "task"), "const")) ==
              "annotation");
  const Value& meta = Resolve(p.doc, Member(Member(response, "properties"), "meta"));
  std::set<std::string> meta_required;
  for (const auto& r : Member(meta, "required").GetArray()) meta_required.insert(S(r));
  for (std::string key : {"job_id", "request_id", "task", "model", "cold_start",
                          "model_load_time_ms", "inference_time_ms", "sequence_length",
                          "annotation_model", "expression_model", "annotation", "expression",
                          "task_specific_counts"}) {
    CATCH_INFO(key);
    CATCH_CHECK(meta_required.count(key) == 1);
  }
  // A completed poll may carry this body.
  const Value& poll = Member(Member(Member(Member(Member(Member(p.doc, "paths"),
                                                         "/v1/tasks/jobs/{job_id}"),
                                                  "get"),
                                           "responses"),
                                    "200"),
                             "content");
  bool listed = false;
  for (const auto& ref : Member(Member(Member(poll, "application/json"), "schema"), "anyOf")
                             .GetArray()) {
    if (S(Member(ref, "$ref")) == "#/components/schemas/FindGenesResponse") listed = true;
  }
  CATCH_CHECK(listed);
}

CATCH_TEST_CASE("find-genes: published bounds are the bounds the validator enforces",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& options =
      Resolve(p.doc, Member(Member(Member(Member(p.doc, "components"), "schemas"),
                                   "FindGenesRequest")["properties"],
                            "options"));
  const Value& batch = Member(Member(options, "properties"), "batch_size");
  const int64_t min_bp = Member(Member(Member(Member(Member(p.doc, "components"), "schemas"),
                                              "FindGenesRequest"),
                                       "properties"),
                                "sequence")["x-min-bp"]
                             .GetInt64();
  auto body = [&](int64_t bp, const std::string& option) {
    return "{\"sequence\":\"" + std::string(static_cast<size_t>(bp), 'A') +
           "\",\"options\":{\"description\":\"x\"" + option + "}}";
  };
  CATCH_CHECK(core::ValidateFindGenesBody(body(min_bp, "")).ok());
  CATCH_CHECK_FALSE(core::ValidateFindGenesBody(body(min_bp - 1, "")).ok());
  const int64_t max = batch["maximum"].GetInt64();
  const int64_t min = batch["minimum"].GetInt64();
  CATCH_CHECK(core::ValidateFindGenesBody(body(min_bp, ",\"batch_size\":" + std::to_string(max))).ok());
  CATCH_CHECK_FALSE(
      core::ValidateFindGenesBody(body(min_bp, ",\"batch_size\":" + std::to_string(max + 1))).ok());
  CATCH_CHECK(core::ValidateFindGenesBody(body(min_bp, ",\"batch_size\":" + std::to_string(min))).ok());
  CATCH_CHECK_FALSE(
      core::ValidateFindGenesBody(body(min_bp, ",\"batch_size\":" + std::to_string(min - 1))).ok());
  for (std::string name : {"annotation_model", "expression_model"}) {
    const int64_t max_length = Member(Member(options, "properties"), name)["maxLength"].GetInt64();
    const std::string at_max(static_cast<size_t>(max_length), 'm');
    CATCH_CHECK(core::ValidateFindGenesBody(body(min_bp, ",\"" + name + "\":\"" + at_max + "\"")).ok());
    CATCH_CHECK_FALSE(
        core::ValidateFindGenesBody(body(min_bp, ",\"" + name + "\":\"" + at_max + "m\"")).ok());
  }
}

// ------------------------------------------------------------------ variant workflow

const Value& VariantOperation(const rapidjson::Document& doc) {
  return Member(Member(Member(doc, "paths"), "/v1/workflows/genomic-variant-interpretation"),
                "post");
}

CATCH_TEST_CASE("variant: request schema is its validation table, closed at every level",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& op = VariantOperation(p.doc);
  const Value& schema = Resolve(
      p.doc,
      Member(Member(Member(Member(op, "requestBody"), "content"), "application/json"), "schema"));
  CheckObjectAgainstTable(p.doc, schema, core::VariantRequestSchema());  // recurses into input, options
  CATCH_CHECK(core::VariantRequestSchema().Find("input")->object == &core::VariantInputSchema());
  CATCH_CHECK(core::VariantRequestSchema().Find("options")->object == &core::VariantOptionsSchema());
  const Value& input = Resolve(p.doc, Member(Member(schema, "properties"), "input"));
  const Value& uri = Member(Member(input, "properties"), "uri");
  CATCH_CHECK(S(Member(uri, "pattern")) == "^s3://[^/]+/.+");
  CATCH_CHECK(Member(uri, "minLength").GetInt64() == 8);
  CATCH_CHECK(Member(uri, "maxLength").GetInt64() == 1024);
  CATCH_CHECK(S(Member(Member(Member(input, "properties"), "type"), "enum")[0]) == "s3_object");
  const Value& options = Resolve(p.doc, Member(Member(schema, "properties"), "options"));
  const Value& props = Member(options, "properties");
  CATCH_CHECK(S(Member(Member(props, "genome_build"), "enum")[0]) == "GRCh37");
  CATCH_CHECK(Member(Member(props, "window"), "default").GetInt64() == 5000);
  const Value& tissues = Member(Member(props, "tissues"), "default");
  CATCH_REQUIRE(tissues.Size() == 3);
  CATCH_CHECK(S(tissues[0]) == "heart");
  CATCH_CHECK(S(tissues[1]) == "liver");
  CATCH_CHECK(S(tissues[2]) == "brain");
  std::set<std::string> types;
  for (const auto& t : Member(Member(props, "genes"), "type").GetArray()) types.insert(S(t));
  CATCH_CHECK(types == std::set<std::string>{"array", "null"});
}

CATCH_TEST_CASE("variant: Prefer is required, the 202 and errors are listed, the poll's body",
                "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& op = VariantOperation(p.doc);
  CATCH_CHECK(S(Member(op, "operationId")) == "genomicVariantInterpretation");
  CATCH_CHECK(Security(op) == "[{bearer:[0]}]");
  const Value& params = Member(op, "parameters");
  CATCH_REQUIRE(params.Size() == 1);
  CATCH_CHECK(S(Member(params[0], "name")) == "Prefer");
  CATCH_CHECK(Member(params[0], "required").GetBool());
  const Value& responses = Member(op, "responses");
  CATCH_CHECK_FALSE(HasMember(responses, "200"));  // asynchronous only
  for (std::string code : {"202", "400", "401", "403", "413", "415", "422", "429", "500", "503"}) {
    CATCH_INFO(code);
    CATCH_CHECK_FALSE(S(Member(Member(responses, code), "description")).empty());
  }
  const std::string bad_request = S(Member(Member(responses, "400"), "description"));
  for (std::string check : {"respond-async", "s3://bucket/key", "prefix", ".vcf.bgz", "unreadable",
                            "2 GiB", "genes", "catalogue", "GEX_"}) {
    CATCH_INFO(check);
    CATCH_CHECK(bad_request.find(check) != std::string::npos);
  }
  CATCH_CHECK(S(Member(Member(responses, "422"), "description")).find("empty genes list") !=
              std::string::npos);

  const Value& response = Member(Member(Member(p.doc, "components"), "schemas"), "VariantResponse");
  const Value& data = Member(Member(response, "properties"), "data");
  std::set<std::string> data_required;
  for (const auto& r : Member(data, "required").GetArray()) data_required.insert(S(r));
  CATCH_CHECK(data_required ==
              std::set<std::string>{"task", "status", "output", "client_ref", "counts"});
  const Value& meta = Member(Member(response, "properties"), "meta");
  std::set<std::string> meta_required;
  for (const auto& r : Member(meta, "required").GetArray()) meta_required.insert(S(r));
  CATCH_CHECK(meta_required == std::set<std::string>{"job_id", "request_id", "task", "genome_build",
                                                     "input", "gene_annotation",
                                                     "options_applied"});
  CATCH_CHECK(HasMember(Member(meta, "properties"), "model"));  // optional: only when scored
  const Value& counts = Member(Member(Member(p.doc, "components"), "schemas"), "VariantCounts");
  CATCH_CHECK(Member(counts, "required").Size() == 7);

  const Value& poll =
      Member(Member(Member(Member(Member(Member(p.doc, "paths"), "/v1/tasks/jobs/{job_id}"), "get"),
                           "responses"),
                    "200"),
             "content");
  bool listed = false;
  for (const auto& ref :
       Member(Member(Member(poll, "application/json"), "schema"), "anyOf").GetArray()) {
    if (S(Member(ref, "$ref")) == "#/components/schemas/VariantResponse") listed = true;
  }
  CATCH_CHECK(listed);
}

CATCH_TEST_CASE("variant: published bounds are the bounds the validator enforces", "[openapi]") {
  core::ModelCatalogue catalogue;
  Parsed p = Build(catalogue);
  const Value& schemas = Member(Member(p.doc, "components"), "schemas");
  const Value& options = Member(Member(schemas, "VariantOptions"), "properties");
  const Value& input = Member(Member(schemas, "VariantInput"), "properties");
  const Value& request = Member(Member(schemas, "VariantRequest"), "properties");
  auto body = [](const std::string& uri, const std::string& options_extra,
                 const std::string& extra = "") {
    return "{\"input\":{\"type\":\"s3_object\",\"uri\":\"" + uri +
           "\"},\"options\":{\"genome_build\":\"GRCh37\"" + options_extra + "}" + extra + "}";
  };
  auto list = [](int64_t n) {
    std::string out = "[";
    for (int64_t i = 0; i < n; ++i) out += (i ? ",\"x" : "\"x") + std::to_string(i) + "\"";
    return out + "]";
  };
  const std::string uri = "s3://inputs/a.vcf";
  const Value& window = Member(options, "window");
  for (int64_t w : {window["minimum"].GetInt64(), window["maximum"].GetInt64()}) {
    CATCH_CHECK(core::ValidateVariantBody(body(uri, ",\"window\":" + std::to_string(w))).ok());
  }
  CATCH_CHECK_FALSE(
      core::ValidateVariantBody(
          body(uri, ",\"window\":" + std::to_string(window["minimum"].GetInt64() - 1)))
          .ok());
  CATCH_CHECK_FALSE(
      core::ValidateVariantBody(
          body(uri, ",\"window\":" + std::to_string(window["maximum"].GetInt64() + 1)))
          .ok());
  for (std::string name : {"tissues", "genes"}) {
    CATCH_INFO(name);
    const Value& field = Member(options, name);
    const int64_t lo = field["minItems"].GetInt64();
    const int64_t hi = field["maxItems"].GetInt64();
    CATCH_CHECK(core::ValidateVariantBody(body(uri, ",\"" + name + "\":" + list(lo))).ok());
    CATCH_CHECK(core::ValidateVariantBody(body(uri, ",\"" + name + "\":" + list(hi))).ok());
    CATCH_CHECK_FALSE(core::ValidateVariantBody(body(uri, ",\"" + name + "\":" + list(lo - 1))).ok());
    CATCH_CHECK_FALSE(core::ValidateVariantBody(body(uri, ",\"" + name + "\":" + list(hi + 1))).ok());
  }
  const Value& uri_field = Member(input, "uri");
  const auto min_uri = static_cast<size_t>(uri_field["minLength"].GetInt64());
  const auto max_uri = static_cast<size_t>(uri_field["maxLength"].GetInt64());
  CATCH_CHECK(core::ValidateVariantBody(body("s3://a/" + std::string(min_uri - 7, 'k'), "")).ok());
  CATCH_CHECK_FALSE(core::ValidateVariantBody(body("s3://a/" + std::string(min_uri - 8, 'k'), "")).ok());
  CATCH_CHECK(core::ValidateVariantBody(body("s3://a/" + std::string(max_uri - 7, 'k'), "")).ok());
  CATCH_CHECK_FALSE(core::ValidateVariantBody(body("s3://a/" + std::string(max_uri - 6, 'k'), "")).ok());
  const auto max_ref = static_cast<size_t>(Member(request, "client_ref")["maxLength"].GetInt64());
  CATCH_CHECK(
      core::ValidateVariantBody(body(uri, "", ",\"client_ref\":\"" + std::string(max_ref, 'r') + "\""))
          .ok());
  CATCH_CHECK_FALSE(core::ValidateVariantBody(
                        body(uri, "", ",\"client_ref\":\"" + std::string(max_ref + 1, 'r') + "\""))
                        .ok());
}

}  // namespace
}  // namespace dnaserve::gateway
