// Admission rules of the six predict requests (core/validation): every rule of the contract's
// Resources, Errors and Limits sections, happy and failing paths.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/task.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/json_walk.h"
#include "core/validation/predict_request.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {
namespace {

namespace v1 = worker::v1;
using Fields = std::vector<std::pair<std::string, std::string>>;  // key -> raw JSON value

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// A deterministic, non-repetitive ACGT string (so slices can be told apart).
std::string Bases(int64_t n, uint32_t seed = 7) {
  static const char kAcgt[] = "ACGT";
  std::string out;
  out.reserve(static_cast<size_t>(n));
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(kAcgt[(x >> 24) & 3]);
  }
  return out;
}

std::string Body(const Fields& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ",";
    out += Quote(fields[i].first) + ":" + fields[i].second;
  }
  return out + "}";
}

// A valid body for `task` with `extra` fields appended (or replacing same-named ones).
std::string ValidBody(Task task, const Fields& extra = {}) {
  Fields fields = {{"sequence", Quote(Bases(MinSequenceBp(task)))}};
  if (task == Task::kExpression) fields.push_back({"options", R"({"description":"liver"})"});
  for (const auto& [k, v] : extra) {
    bool replaced = false;
    for (auto& f : fields) {
      if (f.first == k) {
        f.second = v;
        replaced = true;
      }
    }
    if (!replaced) fields.push_back({k, v});
  }
  return Body(fields);
}

const std::vector<FieldError>& Errors(const Status& status) {
  static const std::vector<FieldError> kNone;
  const auto* d = std::get_if<ValidationDetails>(&status.details());
  return d ? d->errors : kNone;
}

bool HasError(const Status& status, const std::vector<std::string>& loc, const std::string& type) {
  for (const auto& e : Errors(status)) {
    if (e.loc == loc && e.type == type) return true;
  }
  return false;
}

std::string Describe(const Status& status) {
  std::string out = status.ToString();
  for (const auto& e : Errors(status)) {
    out += "\n  [";
    for (const auto& l : e.loc) out += l + ",";
    out += "] " + e.type + ": " + e.msg;
  }
  return out;
}

// The single error of a 422, asserting it is at `loc` with `type`.
FieldError OnlyError(const StatusOr<core::ValidatedPredict>& result, const std::vector<std::string>& loc,
                     const std::string& type) {
  CATCH_INFO(Describe(result.status()));
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_REQUIRE(result.status().code() == ErrorCode::kValidationFailed);
  CATCH_REQUIRE(Errors(result.status()).size() == 1);
  CATCH_REQUIRE(HasError(result.status(), loc, type));
  return Errors(result.status()).front();
}

core::ValidatedPredict Ok(const StatusOr<core::ValidatedPredict>& result) {
  CATCH_INFO(Describe(result.status()));
  CATCH_REQUIRE(result.ok());
  return *result;
}

const std::vector<std::string> kSequenceLoc = {"body", "sequence"};

// ------------------------------------------------------------------ body shape

CATCH_TEST_CASE("malformed JSON is 400 bad_request", "[validation]") {
  for (std::string body : {"", "{", "{\"sequence\": }", "[1,]", "{} {}", "{\"a\":1,}", "nul",
                           "{\"sequence\": NaN}", "\"\xff\xfe\""}) {
    CATCH_INFO("body: " << body);
    auto result = core::ValidatePredictBody(Task::kPromoter, body);
    CATCH_REQUIRE_FALSE(result.ok());
    CATCH_CHECK(result.status().code() == ErrorCode::kBadRequest);
    CATCH_CHECK(std::holds_alternative<std::monostate>(result.status().details()));
  }
}

CATCH_TEST_CASE("UTF-8 is checked whether or not the body is pure ASCII", "[validation]") {
  // ASCII bodies skip RapidJSON's per-byte UTF-8 check (core/validation/json_walk.cc): the
  // other bodies must still be checked, anywhere in the body, and \u escapes decoded either way.
  const std::string valid_name = "Z\xc3\xbcrich \xe2\x80\x93 \xf0\x9f\xa7\xac";  // ü, en dash, emoji
  auto accepted = core::ValidatePredictBody(
      Task::kPromoter, ValidBody(Task::kPromoter, {{"sequence_name", Quote(valid_name)}}));
  CATCH_REQUIRE(accepted.ok());
  CATCH_CHECK(accepted->request.sequence_name() == valid_name);

  auto escaped = core::ValidatePredictBody(
      Task::kPromoter, ValidBody(Task::kPromoter, {{"sequence_name", "\"Z\\u00fcrich\""}}));
  CATCH_REQUIRE(escaped.ok());
  CATCH_CHECK(escaped->request.sequence_name() == "Z\xc3\xbcrich");

  for (std::string bad : {"\xc3\x28", "\xc0\xaf", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80", "ok\xff"}) {
    CATCH_INFO("bytes: " << bad);
    auto refused = core::ValidatePredictBody(
        Task::kPromoter, ValidBody(Task::kPromoter, {{"sequence_name", Quote(bad)}}));
    CATCH_REQUIRE_FALSE(refused.ok());
    CATCH_CHECK(refused.status().code() == ErrorCode::kBadRequest);
  }
  auto lone_surrogate = core::ValidatePredictBody(
      Task::kPromoter, ValidBody(Task::kPromoter, {{"sequence_name", "\"\\ud800\""}}));
  CATCH_CHECK_FALSE(lone_surrogate.ok());
}

CATCH_TEST_CASE("a body that is not a JSON object is 422 at [body]", "[validation]") {
  for (std::string body : {"[]", "\"ACGT\"", "42", "null", "true"}) {
    CATCH_INFO("body: " << body);
    auto result = core::ValidatePredictBody(Task::kSplice, body);
    OnlyError(result, {"body"}, "model_attributes_type");
  }
}

CATCH_TEST_CASE("deeply nested JSON neither crashes nor is accepted", "[validation]") {
  std::string nested(200000, '[');
  nested += std::string(200000, ']');
  auto result = core::ValidatePredictBody(Task::kPromoter, ValidBody(Task::kPromoter, {{"x", nested}}));
  // Refused before parsing (core/validation/json_shape.h), so it never costs parser memory.
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_CHECK(result.status().code() == ErrorCode::kBadRequest);
  CATCH_CHECK(result.status().message().find("deeper than 32 levels") != std::string::npos);
}

CATCH_TEST_CASE("unknown top-level keys are extra_forbidden for every task", "[validation]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    auto result = core::ValidatePredictBody(task, ValidBody(task, {{"strand", "\"+\""}}));
    OnlyError(result, {"body", "strand"}, "extra_forbidden");
    // A field of another task is unknown here too.
    if (task != Task::kExpression) {
      result = core::ValidatePredictBody(task, ValidBody(task, {{"tss_index", "4599"}}));
      OnlyError(result, {"body", "tss_index"}, "extra_forbidden");
    }
  }
}

CATCH_TEST_CASE("a key repeated at any depth is 400 bad_request naming it", "[validation]") {
  // Readers differ on which value of a repeated key counts (the first, the last, an error): the
  // body is refused rather than read one way.
  struct Case {
    std::string body;
    std::vector<std::string> loc;
  };
  const std::string seq = Quote(Bases(300));
  for (const Case& c : {
           Case{"{\"sequence\": " + seq + ", \"sequence\": " + seq + "}", {"body", "sequence"}},
           Case{"{\"sequence\": " + seq + ", \"\\u0073equence\": \"ACGT\"}", {"body", "sequence"}},
           Case{
               "{\"sequence\": " + seq + ", \"options\": {\"threshold\": 0.1, \"threshold\": 0.9}}",
               {"body", "options", "threshold"}},
           Case{"{\"sequence\": " + seq + ", \"x\": [1, {\"a\": 1, \"a\": 2}]}",
                {"body", "x", "1", "a"}},
       }) {
    CATCH_INFO(c.body.substr(0, 40) << " ... " << c.body.substr(c.body.size() - 50));
    auto result = ValidatePredictBody(Task::kPromoter, c.body);
    CATCH_REQUIRE_FALSE(result.ok());
    CATCH_CHECK(result.status().code() == ErrorCode::kBadRequest);
    CATCH_CHECK(result.status().message().find("'" + c.loc.back() + "'") != std::string::npos);
    const auto* details = std::get_if<ValidationDetails>(&result.status().details());
    CATCH_REQUIRE(details);
    CATCH_REQUIRE(details->errors.size() == 1);
    CATCH_CHECK(details->errors[0].loc == c.loc);
    CATCH_CHECK(details->errors[0].type == "duplicate_key");
  }
  // The workflow's body too.
  auto genes = ValidateFindGenesBody("{\"sequence\": \"ACGT\", \"sequence\": \"ACGT\"}");
  CATCH_REQUIRE_FALSE(genes.ok());
  CATCH_CHECK(genes.status().code() == ErrorCode::kBadRequest);
}

CATCH_TEST_CASE("the five common-field tasks accept sequence, model, sequence_name, options",
                "[validation]") {
  for (Task task : kAllTasks) {
    if (task == Task::kExpression) continue;
    CATCH_INFO(TaskName(task));
    auto result = core::ValidatePredictBody(
        task,
        ValidBody(task, {{"model", "\"m1\""}, {"sequence_name", "\"s\""}, {"options", "{}"}}));
    const auto& v = Ok(result);
    CATCH_CHECK(v.task == task);
    // Only sequence is required.
    OnlyError(core::ValidatePredictBody(task, Body({})), kSequenceLoc, "missing");
  }
}

CATCH_TEST_CASE("expression accepts exactly its five fields", "[validation]") {
  const std::string seq = Quote(Bases(kExpressionWindowBp));
  Fields all = {{"sequence", seq},
                {"options", R"({"description":"heart"})"},
                {"tss_index", "4599"},
                {"sequence_name", "\"gene\""},
                {"model", "\"expr\""}};
  Ok(core::ValidatePredictBody(Task::kExpression, Body(all)));

  Fields with_extra = all;
  with_extra.push_back({"threshold", "0.5"});
  OnlyError(core::ValidatePredictBody(Task::kExpression, Body(with_extra)), {"body", "threshold"},
            "extra_forbidden");

  OnlyError(core::ValidatePredictBody(Task::kExpression, Body({{"options", R"({"description":"x"})"}})),
            kSequenceLoc, "missing");
  OnlyError(core::ValidatePredictBody(Task::kExpression, Body({{"sequence", seq}})), {"body", "options"},
            "missing");
}

// ------------------------------------------------------------------ options objects

CATCH_TEST_CASE("options are closed per task: unknown keys are extra_forbidden", "[validation]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    std::string options =
        task == Task::kExpression ? R"({"description":"x","colour":1})" : R"({"colour":1})";
    OnlyError(core::ValidatePredictBody(task, ValidBody(task, {{"options", options}})),
              {"body", "options", "colour"}, "extra_forbidden");
  }
  // An option of another task is unknown here.
  OnlyError(core::ValidatePredictBody(Task::kPromoter,
                                ValidBody(Task::kPromoter, {{"options", R"({"batch_size":8})"}})),
            {"body", "options", "batch_size"}, "extra_forbidden");
  OnlyError(
      core::ValidatePredictBody(Task::kChromatin,
                          ValidBody(Task::kChromatin, {{"options", R"({"site_types":null})"}})),
      {"body", "options", "site_types"}, "extra_forbidden");
}

CATCH_TEST_CASE("model inside options is an unknown key", "[validation]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    std::string options =
        task == Task::kExpression ? R"({"description":"x","model":"m"})" : R"({"model":"m"})";
    OnlyError(core::ValidatePredictBody(task, ValidBody(task, {{"options", options}})),
              {"body", "options", "model"}, "extra_forbidden");
  }
}

CATCH_TEST_CASE("enhancer options accept {} only", "[validation]") {
  const auto& v =
      Ok(core::ValidatePredictBody(Task::kEnhancer, ValidBody(Task::kEnhancer, {{"options", "{}"}})));
  CATCH_CHECK(v.request.has_enhancer());
  for (std::string key : {"threshold", "batch_size", "description", "window"}) {
    OnlyError(core::ValidatePredictBody(Task::kEnhancer,
                                  ValidBody(Task::kEnhancer, {{"options", "{\"" + key + "\":1}"}})),
              {"body", "options", key}, "extra_forbidden");
  }
}

CATCH_TEST_CASE("options omitted or null mean defaults, a non-object is rejected", "[validation]") {
  for (Task task : kAllTasks) {
    if (task == Task::kExpression) continue;
    CATCH_INFO(TaskName(task));
    Ok(core::ValidatePredictBody(task, ValidBody(task)));
    Ok(core::ValidatePredictBody(task, ValidBody(task, {{"options", "null"}})));
    OnlyError(core::ValidatePredictBody(task, ValidBody(task, {{"options", "[]"}})), {"body", "options"},
              "model_attributes_type");
    OnlyError(core::ValidatePredictBody(task, ValidBody(task, {{"options", "\"fast\""}})),
              {"body", "options"}, "model_attributes_type");
  }
  // Expression requires an object.
  OnlyError(
      core::ValidatePredictBody(Task::kExpression, ValidBody(Task::kExpression, {{"options", "null"}})),
      {"body", "options"}, "model_attributes_type");
}

CATCH_TEST_CASE("defaults come from the schema table", "[validation]") {
  const auto& promoter = Ok(core::ValidatePredictBody(Task::kPromoter, ValidBody(Task::kPromoter)));
  CATCH_CHECK(promoter.request.promoter().threshold() == 0.5);
  const auto& chromatin = Ok(core::ValidatePredictBody(Task::kChromatin, ValidBody(Task::kChromatin)));
  CATCH_CHECK(chromatin.request.chromatin().threshold() == 0.5);
  const auto& splice = Ok(core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice)));
  CATCH_CHECK(splice.request.splice().threshold() == 0.5);
  CATCH_REQUIRE(splice.request.splice().site_types_size() == 2);
  CATCH_CHECK(splice.request.splice().site_types(0) == v1::SPLICE_SITE_TYPE_DONOR);
  CATCH_CHECK(splice.request.splice().site_types(1) == v1::SPLICE_SITE_TYPE_ACCEPTOR);
  const auto& annotation = Ok(core::ValidatePredictBody(Task::kAnnotation, ValidBody(Task::kAnnotation)));
  CATCH_CHECK(annotation.request.annotation().batch_size() == 8);
  CATCH_CHECK(annotation.request.annotation().reverse_complement());
  // The table holds exactly those defaults.
  CATCH_CHECK(core::DefaultNumber(*core::PredictOptionsSchema(Task::kPromoter).Find("threshold")) == 0.5);
  CATCH_CHECK(DefaultInteger(*core::PredictOptionsSchema(Task::kAnnotation).Find("batch_size")) == 8);
  CATCH_CHECK(core::DefaultBoolean(*core::PredictOptionsSchema(Task::kAnnotation).Find("reverse_complement")));
  CATCH_CHECK(core::DefaultString(*core::PredictRequestSchema(Task::kSplice).Find("sequence_name")) ==
              "sequence");
}

// ------------------------------------------------------------------ sequence

CATCH_TEST_CASE("sequence: whitespace is stripped and case ignored before validation",
                "[validation]") {
  std::string raw = Bases(300);
  std::string spaced;
  for (size_t i = 0; i < raw.size(); ++i) {
    spaced += static_cast<char>(i % 3 == 0 ? raw[i] - 'A' + 'a' : raw[i]);
    if (i % 60 == 59) spaced += "\\n";
    if (i % 10 == 9) spaced += " \\t";
  }
  spaced = "\\r\\n  " + spaced + "\\f\\u000b";
  const auto& v = Ok(core::ValidatePredictBody(Task::kPromoter, Body({{"sequence", Quote(spaced)}})));
  CATCH_CHECK(v.sequence_length == 300);
  CATCH_CHECK(v.request.sequence() == raw);  // upper-cased, whitespace gone
  CATCH_CHECK(
      Ok(core::ValidatePredictBody(Task::kPromoter, Body({{"sequence", Quote("n" + Bases(299))}})))
          .request.sequence()[0] == 'N');
}

CATCH_TEST_CASE("sequence: length is measured after stripping", "[validation]") {
  // 299 bases padded with enough whitespace that the raw string is far above 300 characters.
  std::string body = Body({{"sequence", Quote(Bases(299) + std::string(500, ' '))}});
  auto e = OnlyError(core::ValidatePredictBody(Task::kPromoter, body), kSequenceLoc, "string_too_short");
  CATCH_CHECK(e.msg.find("at least 300 bp") != std::string::npos);
  CATCH_CHECK(e.msg.find("got 299 bp") != std::string::npos);
}

CATCH_TEST_CASE("sequence: alphabet and pattern", "[validation]") {
  const std::string ok = Bases(400);
  struct Bad {
    std::string sequence;
    std::string why;
  };
  std::vector<Bad> bad = {
      {">chr1 test\\n" + ok, "FASTA header"},
      {ok + "X", "X"},
      {ok.substr(0, 200) + "U" + ok.substr(200), "RNA base"},
      {ok + "-", "gap"},
      {ok + "\\u00e9", "non-ASCII"},
      {"", "empty"},
      {"  \\n\\t ", "only whitespace"},
  };
  for (const auto& b : bad) {
    CATCH_INFO(b.why);
    auto e =
        OnlyError(core::ValidatePredictBody(Task::kPromoter, Body({{"sequence", Quote(b.sequence)}})),
                  kSequenceLoc, "string_pattern_mismatch");
    CATCH_CHECK(e.msg.find("ACGNTacgnt") != std::string::npos);
  }
  auto e = OnlyError(
      core::ValidatePredictBody(Task::kAnnotation, Body({{"sequence", Quote(">seq\\n" + Bases(2000))}})),
      kSequenceLoc, "string_pattern_mismatch");
  CATCH_CHECK(e.msg.find("'>'") != std::string::npos);
  CATCH_CHECK(e.msg.find("FASTA") != std::string::npos);
}

CATCH_TEST_CASE("sequence: wrong JSON type or missing", "[validation]") {
  for (std::string value : {"42", "null", "[\"ACGT\"]", "{}", "true"}) {
    CATCH_INFO(value);
    OnlyError(core::ValidatePredictBody(Task::kPromoter, Body({{"sequence", value}})), kSequenceLoc,
              "string_type");
  }
  OnlyError(core::ValidatePredictBody(Task::kPromoter, Body({{"sequence_name", "\"x\""}})), kSequenceLoc,
            "missing");
}

CATCH_TEST_CASE("sequence: per-task floor and the 500,000 bp ceiling are 422, never 413",
                "[validation]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    const int64_t floor = MinSequenceBp(task);
    Fields extra;
    if (task == Task::kExpression) extra = {{"tss_index", "4599"}};

    Fields short_by_one = extra;
    short_by_one.push_back({"sequence", Quote(Bases(floor - 1))});
    auto below = core::ValidatePredictBody(task, ValidBody(task, short_by_one));
    auto e = OnlyError(below, kSequenceLoc, "string_too_short");
    CATCH_CHECK(below.status().code() == ErrorCode::kValidationFailed);
    CATCH_CHECK(e.msg.find("at least " + std::to_string(floor) + " bp") != std::string::npos);
    CATCH_CHECK(e.msg.find("got " + std::to_string(floor - 1) + " bp") != std::string::npos);
    CATCH_CHECK(below.status().message().find(std::to_string(floor - 1)) != std::string::npos);

    Fields at_floor = extra;
    at_floor.push_back({"sequence", Quote(Bases(floor))});
    CATCH_CHECK(Ok(core::ValidatePredictBody(task, ValidBody(task, at_floor))).sequence_length == floor);

    Fields at_ceiling = extra;
    at_ceiling.push_back({"sequence", Quote(Bases(kMaxSequenceBp))});
    CATCH_CHECK(Ok(core::ValidatePredictBody(task, ValidBody(task, at_ceiling))).sequence_length ==
                kMaxSequenceBp);

    Fields above = extra;
    above.push_back({"sequence", Quote(Bases(kMaxSequenceBp + 1))});
    auto too_long = core::ValidatePredictBody(task, ValidBody(task, above));
    e = OnlyError(too_long, kSequenceLoc, "string_too_long");
    CATCH_CHECK(too_long.status().code() != ErrorCode::kPayloadTooLarge);
    CATCH_CHECK(e.msg.find("at most 500000 bp") != std::string::npos);
    CATCH_CHECK(e.msg.find("got 500001 bp") != std::string::npos);
  }
}

// ------------------------------------------------------------------ model and sequence_name

CATCH_TEST_CASE("model and sequence_name: string or null, at most 128 characters", "[validation]") {
  for (std::string field : {"model", "sequence_name"}) {
    CATCH_INFO(field);
    Ok(core::ValidatePredictBody(Task::kChromatin,
                           ValidBody(Task::kChromatin, {{field, Quote(std::string(128, 'm'))}})));
    Ok(core::ValidatePredictBody(Task::kChromatin, ValidBody(Task::kChromatin, {{field, "null"}})));
    // Characters, not bytes: 128 two-byte characters are fine.
    std::string wide;
    for (int i = 0; i < 128; ++i) wide += "\\u00e9";
    Ok(core::ValidatePredictBody(Task::kChromatin, ValidBody(Task::kChromatin, {{field, Quote(wide)}})));
    auto e = OnlyError(
        core::ValidatePredictBody(Task::kChromatin,
                            ValidBody(Task::kChromatin, {{field, Quote(std::string(129, 'm'))}})),
        {"body", field}, "string_too_long");
    CATCH_CHECK(e.msg.find("128") != std::string::npos);
    OnlyError(core::ValidatePredictBody(Task::kChromatin, ValidBody(Task::kChromatin, {{field, "7"}})),
              {"body", field}, "string_type");
    OnlyError(core::ValidatePredictBody(Task::kChromatin, ValidBody(Task::kChromatin, {{field, "{}"}})),
              {"body", field}, "string_type");
  }
}

CATCH_TEST_CASE("model becomes requested_model, request.model stays empty", "[validation]") {
  const auto& named =
      Ok(core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice, {{"model", "\"splice-x\""}})));
  CATCH_REQUIRE(named.requested_model.has_value());
  CATCH_CHECK(*named.requested_model == "splice-x");
  CATCH_CHECK(named.request.model().empty());
  CATCH_CHECK_FALSE(
      Ok(core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice))).requested_model.has_value());
  CATCH_CHECK_FALSE(
      Ok(core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice, {{"model", "null"}})))
          .requested_model.has_value());
}

CATCH_TEST_CASE("sequence_name defaults to 'sequence' and is carried to the request",
                "[validation]") {
  const auto& d = Ok(core::ValidatePredictBody(Task::kEnhancer, ValidBody(Task::kEnhancer)));
  CATCH_CHECK(d.sequence_name == "sequence");
  CATCH_CHECK(d.request.sequence_name() == "sequence");
  const auto& n = Ok(core::ValidatePredictBody(Task::kEnhancer,
                                         ValidBody(Task::kEnhancer, {{"sequence_name", "null"}})));
  CATCH_CHECK(n.sequence_name == "sequence");
  const auto& g = Ok(core::ValidatePredictBody(
      Task::kEnhancer, ValidBody(Task::kEnhancer, {{"sequence_name", "\"dpp\""}})));
  CATCH_CHECK(g.sequence_name == "dpp");
  CATCH_CHECK(g.request.sequence_name() == "dpp");
}

// ------------------------------------------------------------------ option types and ranges

CATCH_TEST_CASE("threshold: a number in 0-1", "[validation]") {
  for (Task task : {Task::kPromoter, Task::kSplice, Task::kChromatin}) {
    CATCH_INFO(TaskName(task));
    auto with = [&](const std::string& v) {
      return core::ValidatePredictBody(task, ValidBody(task, {{"options", "{\"threshold\":" + v + "}"}}));
    };
    const std::vector<std::string> loc = {"body", "options", "threshold"};
    for (std::string good : {"0", "1", "0.25", "1.0", "0e0"}) {
      CATCH_INFO(good);
      Ok(with(good));
    }
    OnlyError(with("-0.01"), loc, "greater_than_equal");
    OnlyError(with("1.5"), loc, "less_than_equal");
    OnlyError(with("2"), loc, "less_than_equal");
    OnlyError(with("true"), loc, "float_type");  // a boolean is not a number
    OnlyError(with("\"0.5\""), loc, "float_type");
    OnlyError(with("null"), loc, "float_type");
  }
  CATCH_CHECK(
      Ok(core::ValidatePredictBody(Task::kPromoter,
                             ValidBody(Task::kPromoter, {{"options", R"({"threshold":0.9})"}})))
          .request.promoter()
          .threshold() == 0.9);
  CATCH_CHECK(
      Ok(core::ValidatePredictBody(Task::kChromatin,
                             ValidBody(Task::kChromatin, {{"options", R"({"threshold":1})"}})))
          .request.chromatin()
          .threshold() == 1.0);
  CATCH_CHECK(
      Ok(core::ValidatePredictBody(Task::kSplice,
                             ValidBody(Task::kSplice, {{"options", R"({"threshold":0.001})"}})))
          .request.splice()
          .threshold() == 0.001);
}

CATCH_TEST_CASE("batch_size: an integer in 1-128", "[validation]") {
  auto with = [](const std::string& v) {
    return core::ValidatePredictBody(
        Task::kAnnotation,
        ValidBody(Task::kAnnotation, {{"options", "{\"batch_size\":" + v + "}"}}));
  };
  const std::vector<std::string> loc = {"body", "options", "batch_size"};
  CATCH_CHECK(Ok(with("1")).request.annotation().batch_size() == 1);
  CATCH_CHECK(Ok(with("128")).request.annotation().batch_size() == 128);
  CATCH_CHECK(Ok(with("16.0")).request.annotation().batch_size() == 16);  // integral number
  OnlyError(with("0"), loc, "greater_than_equal");
  OnlyError(with("129"), loc, "less_than_equal");
  OnlyError(with("99999999999999999999"), loc, "less_than_equal");
  OnlyError(with("-5"), loc, "greater_than_equal");
  OnlyError(with("8.5"), loc, "int_from_float");
  OnlyError(with("\"8\""), loc, "int_type");
  OnlyError(with("true"), loc, "int_type");
  OnlyError(with("null"), loc, "int_type");
}

CATCH_TEST_CASE("site_types: array or null, a non-empty subset of donor/acceptor", "[validation]") {
  auto with = [](const std::string& v) {
    return core::ValidatePredictBody(
        Task::kSplice, ValidBody(Task::kSplice, {{"options", "{\"site_types\":" + v + "}"}}));
  };
  const std::vector<std::string> loc = {"body", "options", "site_types"};
  auto types = [](const core::ValidatedPredict& v) {
    std::vector<int> out;
    for (int t : v.request.splice().site_types()) out.push_back(t);
    return out;
  };
  CATCH_CHECK(types(Ok(with("[\"donor\"]"))) == std::vector<int>{v1::SPLICE_SITE_TYPE_DONOR});
  CATCH_CHECK(types(Ok(with("[\"acceptor\"]"))) == std::vector<int>{v1::SPLICE_SITE_TYPE_ACCEPTOR});
  CATCH_CHECK(types(Ok(with("[\"acceptor\",\"donor\",\"acceptor\"]"))) ==
              std::vector<int>{v1::SPLICE_SITE_TYPE_DONOR, v1::SPLICE_SITE_TYPE_ACCEPTOR});
  CATCH_CHECK(types(Ok(with("null"))) ==
              std::vector<int>{v1::SPLICE_SITE_TYPE_DONOR, v1::SPLICE_SITE_TYPE_ACCEPTOR});
  OnlyError(with("[]"), loc, "too_short");
  OnlyError(with("\"donor\""), loc, "list_type");
  OnlyError(with("{}"), loc, "list_type");
  auto e = OnlyError(with("[\"donor\",\"intron\"]"), {"body", "options", "site_types", "1"},
                     "literal_error");
  CATCH_CHECK(e.msg.find("'donor'") != std::string::npos);
  OnlyError(with("[\"Donor\"]"), {"body", "options", "site_types", "0"}, "literal_error");
  OnlyError(with("[1]"), {"body", "options", "site_types", "0"}, "string_type");
}

CATCH_TEST_CASE("splice carries the 20,000 site cap to the worker", "[validation]") {
  const auto& v = Ok(core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice)));
  CATCH_CHECK(v.request.splice().max_sites() == kSpliceMaxSites);
  CATCH_CHECK(v.request.splice().max_sites() == 20000);
}

CATCH_TEST_CASE("reverse_complement: a boolean", "[validation]") {
  auto with = [](const std::string& v) {
    return core::ValidatePredictBody(
        Task::kAnnotation,
        ValidBody(Task::kAnnotation, {{"options", "{\"reverse_complement\":" + v + "}"}}));
  };
  const std::vector<std::string> loc = {"body", "options", "reverse_complement"};
  CATCH_CHECK_FALSE(Ok(with("false")).request.annotation().reverse_complement());
  CATCH_CHECK(Ok(with("true")).request.annotation().reverse_complement());
  OnlyError(with("\"true\""), loc, "bool_type");
  OnlyError(with("1"), loc, "bool_type");
  OnlyError(with("null"), loc, "bool_type");
}

// ------------------------------------------------------------------ annotation shift_coordinates

StatusOr<core::ValidatedPredict> Annotation(const std::string& shift, const std::string& name) {
  Fields f = {{"options", "{\"shift_coordinates\":" + shift + "}"}};
  if (!name.empty()) f.push_back({"sequence_name", name});
  return core::ValidatePredictBody(Task::kAnnotation, ValidBody(Task::kAnnotation, f));
}

CATCH_TEST_CASE("annotation without shifting: offset 0, seqid = sequence_name", "[validation]") {
  const auto& plain = Ok(core::ValidatePredictBody(
      Task::kAnnotation, ValidBody(Task::kAnnotation, {{"sequence_name", "\"chr2:5-9\""}})));
  CATCH_CHECK(plain.request.annotation().coordinate_offset() == 0);
  CATCH_CHECK(plain.request.annotation().seqid() == "chr2:5-9");
  const auto& null_shift = Ok(Annotation("null", "\"contig7\""));
  CATCH_CHECK(null_shift.request.annotation().coordinate_offset() == 0);
  CATCH_CHECK(null_shift.request.annotation().seqid() == "contig7");
  const auto& defaults = Ok(core::ValidatePredictBody(Task::kAnnotation, ValidBody(Task::kAnnotation)));
  CATCH_CHECK(defaults.request.annotation().seqid() == "sequence");
}

CATCH_TEST_CASE("annotation UCSC shift rebases from the region label", "[validation]") {
  const auto& v = Ok(Annotation("\"UCSC\"", "\"chr1:1,000,001-1,250,000\""));
  CATCH_CHECK(v.request.annotation().coordinate_offset() == 1000000);
  CATCH_CHECK(v.request.annotation().seqid() == "chr1");
  CATCH_CHECK(v.sequence_name == "chr1:1,000,001-1,250,000");  // echoed unchanged
  const auto& lower = Ok(Annotation("\"ucsc\"", "\"chrX:1-5000\""));
  CATCH_CHECK(lower.request.annotation().coordinate_offset() == 0);
  CATCH_CHECK(lower.request.annotation().seqid() == "chrX");
  const auto& plain_numbers = Ok(Annotation("\"Ucsc\"", "\"scaffold_12:250-1249\""));
  CATCH_CHECK(plain_numbers.request.annotation().coordinate_offset() == 249);
  CATCH_CHECK(plain_numbers.request.annotation().seqid() == "scaffold_12");
}

CATCH_TEST_CASE("annotation UCSC shift needs a region label in sequence_name", "[validation]") {
  const std::vector<std::string> loc = {"body", "sequence_name"};
  for (std::string name :
       {"\"gene1\"", "\"chr1:0-100\"", "\"chr1:200-100\"", "\"chr1:100\"", "\":1-100\"",
        "\"chr1:a-100\"", "\"chr1:1-\"", "\"chr 1:1-10\"", "\"chr1:,1-10\"", "null", ""}) {
    CATCH_INFO(name);
    auto e = OnlyError(Annotation("\"UCSC\"", name), loc, "value_error");
    CATCH_CHECK(e.msg.find("chrom:start-end") != std::string::npos);
  }
}

CATCH_TEST_CASE("annotation shift_coordinates: other values name the supported one",
                "[validation]") {
  const std::vector<std::string> loc = {"body", "options", "shift_coordinates"};
  for (std::string value : {"\"Ensembl\"", "\"\"", "\"UCSC \""}) {
    CATCH_INFO(value);
    auto e = OnlyError(Annotation(value, "\"chr1:1-2000\""), loc, "literal_error");
    CATCH_CHECK(e.msg.find("UCSC") != std::string::npos);
  }
  OnlyError(Annotation("true", "\"chr1:1-2000\""), loc, "string_type");
}

// ------------------------------------------------------------------ expression

StatusOr<core::ValidatedPredict> Expression(const std::string& sequence, const std::string& tss,
                                      const std::string& options = R"({"description":"liver"})") {
  Fields f = {{"sequence", Quote(sequence)}, {"options", options}};
  if (!tss.empty()) f.push_back({"tss_index", tss});
  return core::ValidatePredictBody(Task::kExpression, Body(f));
}

CATCH_TEST_CASE("expression options.description: required, non-empty string", "[validation]") {
  const std::string seq = Bases(kExpressionWindowBp);
  const std::vector<std::string> loc = {"body", "options", "description"};
  OnlyError(Expression(seq, "", "{}"), loc, "missing");
  OnlyError(Expression(seq, "", R"({"description":""})"), loc, "string_too_short");
  OnlyError(Expression(seq, "", R"({"description":null})"), loc, "string_type");
  OnlyError(Expression(seq, "", R"({"description":42})"), loc, "string_type");
  const auto& v = Ok(Expression(seq, "", R"({"description":"adult heart, left ventricle"})"));
  CATCH_CHECK(v.request.expression().description() == "adult heart, left ventricle");
}

CATCH_TEST_CASE("expression sequence is 9,198-500,000 bp", "[validation]") {
  auto e = OnlyError(Expression(Bases(9197), "4599"), kSequenceLoc, "string_too_short");
  CATCH_CHECK(e.msg.find("9198") != std::string::npos);
  CATCH_CHECK(e.msg.find("9197") != std::string::npos);
  OnlyError(Expression(Bases(kMaxSequenceBp + 1), "100000"), kSequenceLoc, "string_too_long");
}

CATCH_TEST_CASE("expression tss_index defaults to 4599 only for exactly 9,198 bp", "[validation]") {
  const std::string seq = Bases(kExpressionWindowBp);
  const auto& v = Ok(Expression(seq, ""));
  CATCH_CHECK(v.tss_index == 4599);
  CATCH_CHECK(v.scored_start == 0);
  CATCH_CHECK(v.scored_end == 9198);
  CATCH_CHECK(v.request.sequence() == seq);
  CATCH_CHECK(Ok(Expression(seq, "null")).tss_index == 4599);

  auto e = OnlyError(Expression(Bases(9199), ""), {"body"}, "value_error");
  CATCH_CHECK(e.msg.find("tss_index") != std::string::npos);
  CATCH_CHECK(e.msg.find("9199") != std::string::npos);
}

CATCH_TEST_CASE("expression tss_index range violations are reported at [body]", "[validation]") {
  const std::string seq = Bases(20000);
  OnlyError(Expression(seq, "4598"), {"body"}, "value_error");
  OnlyError(Expression(seq, "0"), {"body"}, "value_error");
  OnlyError(Expression(seq, "-1"), {"body"}, "value_error");
  OnlyError(Expression(seq, std::to_string(20000 - 4598)), {"body"}, "value_error");
  OnlyError(Expression(seq, "99999999999999999999"), {"body"}, "value_error");
  auto e = OnlyError(Expression(seq, "20000"), {"body"}, "value_error");
  CATCH_CHECK(e.msg.find("4599 <= tss_index") != std::string::npos);
  CATCH_CHECK(e.msg.find("15401") != std::string::npos);  // len - 4599
  CATCH_CHECK(e.msg.find("got 20000") != std::string::npos);
  Ok(Expression(seq, "4599"));
  Ok(Expression(seq, std::to_string(20000 - 4599)));
  // 9,198 bp with an explicit tss_index: only 4599 fits.
  OnlyError(Expression(Bases(kExpressionWindowBp), "4600"), {"body"}, "value_error");
}

CATCH_TEST_CASE("expression tss_index of the wrong JSON type is at [body, tss_index]",
                "[validation]") {
  const std::string seq = Bases(20000);
  const std::vector<std::string> loc = {"body", "tss_index"};
  OnlyError(Expression(seq, "\"6000\""), loc, "int_type");
  OnlyError(Expression(seq, "true"), loc, "int_type");
  OnlyError(Expression(seq, "[6000]"), loc, "int_type");
  OnlyError(Expression(seq, "6000.5"), loc, "int_from_float");
  CATCH_CHECK(Ok(Expression(seq, "6000.0")).tss_index == 6000);
}

CATCH_TEST_CASE("expression sends exactly the half-open 9,198 bp slice", "[validation]") {
  const std::string seq = Bases(20000, 99);
  for (int64_t tss : {int64_t{4599}, int64_t{6000}, int64_t{20000 - 4599}}) {
    CATCH_INFO(tss);
    // Whitespace in the submitted text must not shift the slice.
    std::string spaced = seq.substr(0, 1000) + "\\n" + seq.substr(1000);
    const auto& v = Ok(Expression(spaced, std::to_string(tss)));
    CATCH_CHECK(v.sequence_length == 20000);
    CATCH_CHECK(v.tss_index == tss);
    CATCH_CHECK(v.scored_start == tss - 4599);
    CATCH_CHECK(v.scored_end == tss + 4599);
    CATCH_CHECK(v.request.sequence().size() == 9198);
    CATCH_CHECK(v.request.sequence() == seq.substr(static_cast<size_t>(tss - 4599), 9198));
    CATCH_CHECK(v.request.expression().description() == "liver");
  }
}

CATCH_TEST_CASE("expression tss checks wait for a valid sequence", "[validation]") {
  // A too-short sequence reports only the sequence error, not a tss_index one as well.
  OnlyError(Expression(Bases(100), ""), kSequenceLoc, "string_too_short");
}

// ------------------------------------------------------------------ error collection

CATCH_TEST_CASE("all errors are collected and the message summarises the first", "[validation]") {
  std::string body = Body({{"sequence", Quote(">x")},
                           {"model", Quote(std::string(200, 'm'))},
                           {"options", R"({"threshold": 3, "colour": "red"})"},
                           {"strand", "\"-\""}});
  auto result = core::ValidatePredictBody(Task::kPromoter, body);
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_INFO(Describe(result.status()));
  CATCH_CHECK(result.status().code() == ErrorCode::kValidationFailed);
  const auto& errors = Errors(result.status());
  CATCH_CHECK(errors.size() == 5);
  CATCH_CHECK(HasError(result.status(), {"body", "strand"}, "extra_forbidden"));
  CATCH_CHECK(HasError(result.status(), kSequenceLoc, "string_pattern_mismatch"));
  CATCH_CHECK(HasError(result.status(), {"body", "model"}, "string_too_long"));
  CATCH_CHECK(HasError(result.status(), {"body", "options", "threshold"}, "less_than_equal"));
  CATCH_CHECK(HasError(result.status(), {"body", "options", "colour"}, "extra_forbidden"));
  const FieldError& first = errors.front();
  CATCH_CHECK(result.status().message().find(first.msg) != std::string::npos);
  CATCH_CHECK(result.status().message().find("4 more errors") != std::string::npos);
  for (const auto& e : errors) {
    CATCH_CHECK_FALSE(e.msg.empty());
    CATCH_CHECK(e.loc.front() == "body");
  }
}

CATCH_TEST_CASE("a single error's message names its location", "[validation]") {
  auto result = core::ValidatePredictBody(
      Task::kChromatin, ValidBody(Task::kChromatin, {{"options", R"({"threshold":-1})"}}));
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_CHECK(result.status().message().rfind("body.options.threshold: ", 0) == 0);
  CATCH_CHECK(result.status().message().find("more error") == std::string::npos);
}

CATCH_TEST_CASE("the number of reported errors is capped", "[validation]") {
  // 5,000 unknown keys and 5,000 bad site_types items: the response stays small.
  Fields extra;
  std::string items = "[";
  for (int i = 0; i < 5000; ++i) {
    extra.push_back({"k" + std::to_string(i), "0"});
    items += std::string(i ? "," : "") + "\"x\"";
  }
  items += "]";
  extra.push_back({"options", "{\"site_types\":" + items + "}"});
  auto result = core::ValidatePredictBody(Task::kSplice, ValidBody(Task::kSplice, extra));
  CATCH_REQUIRE_FALSE(result.ok());
  const auto& errors = Errors(result.status());
  CATCH_CHECK(errors.size() == core::kMaxFieldErrors);
  // Field errors come first (pydantic's order), unknown keys after them.
  CATCH_CHECK(errors.front().loc == std::vector<std::string>{"body", "options", "site_types", "0"});
  CATCH_CHECK(result.status().message().find("99 more errors") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::core
