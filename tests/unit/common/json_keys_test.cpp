// Repeated object keys, found at any depth with the path to them, compared as decoded; the
// 400 built from one names the key and where it is.
#include "common/json_keys.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace dnaserve;

namespace {

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

// The path FindRepeatedKey reports, as "a.b[0].c" (empty for none).
std::string RepeatIn(const std::string& text) {
  rapidjson::Document doc = Parse(text);
  auto path = FindRepeatedKey(doc);
  return path ? JsonPathText("", *path) : "";
}

}  // namespace

TEST_CASE("distinct keys everywhere: nothing is found", "[common][json]") {
  for (const char* text :
       {"{}", "[]", "1", "\"a\"", "null", R"({"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]})",
        R"({"a":1,"A":2,"a ":3,"a\u0000":4})", R"([{"x":1},[{"x":1}],{"y":{"x":1}}])"}) {
    INFO(text);
    CHECK(RepeatIn(text).empty());
  }
}

TEST_CASE("a repeated key is found at any depth, with its path", "[common][json]") {
  CHECK(RepeatIn(R"({"sequence":"A","sequence":"C"})") == "sequence");
  CHECK(RepeatIn(R"({"sequence":"A","options":{"threshold":0.1,"threshold":0.9}})") ==
        "options.threshold");
  CHECK(RepeatIn(R"({"a":[1,{"b":2},[{"c":1,"c":1}]]})") == "a[2][0].c");
  CHECK(RepeatIn(R"([{"ok":1},{"x":{"y":[{"z":1,"w":2,"z":3}]}}])") == "[1].x.y[0].z");
  // Compared as decoded: an escape does not make a key different.
  CHECK(RepeatIn(R"({"sequence":"A","\u0073equence":"C"})") == "sequence");
  // Equal values are still a repeat.
  CHECK(RepeatIn(R"({"a":1,"a":1})") == "a");
  // Objects past the pairwise size are checked too.
  std::string wide = "{";
  for (int i = 0; i < 500; ++i) wide += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  CHECK(RepeatIn(wide + "\"k0\":1}") == "k0");
  CHECK(RepeatIn(wide + "\"k500\":1}").empty());
  // Deep nesting costs no recursion.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "{\"n\":";
  deep += R"({"a":1,"a":2})";
  for (int i = 0; i < 5000; ++i) deep += "}";
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(deep.data(), deep.size());
  REQUIRE_FALSE(doc.HasParseError());
  auto path = FindRepeatedKey(doc);
  REQUIRE(path);
  CHECK(path->size() == 5001);
  CHECK(path->back().name == "a");
}

TEST_CASE("the first repeat in document order is the one named", "[common][json]") {
  CHECK(RepeatIn(R"({"a":{"x":1,"x":2},"b":{"y":1,"y":2}})") == "a.x");
  CHECK(RepeatIn(R"([{"y":1,"y":2},{"x":1,"x":2}])") == "[0].y");
  // The object's own repeat before one inside a member's value.
  CHECK(RepeatIn(R"({"a":{"x":1,"x":2},"b":1,"b":2})") == "b");
}

TEST_CASE("keys in messages are printable and bounded", "[common][json]") {
  const std::vector<JsonPathStep> path = {
      {"a\nb", false}, {"3", true}, {std::string(100, 'k'), false}};
  CHECK(JsonPathText("body", path) == "body.a\\x0Ab[3]." + std::string(64, 'k') + "...");
}

TEST_CASE("CheckKeysUnique: 400 bad_request naming the key, loc from the root", "[common][json]") {
  CHECK(CheckKeysUnique(Parse(R"({"a":{"b":1}})"), "body").ok());
  const Status s =
      CheckKeysUnique(Parse(R"({"options":{"threshold":0.1,"threshold":0.9}})"), "body");
  REQUIRE(s.code() == ErrorCode::kBadRequest);
  CHECK_THAT(s.message(), Catch::Contains("'threshold'") && Catch::Contains("body.options"));
  const auto* details = std::get_if<ValidationDetails>(&s.details());
  REQUIRE(details);
  REQUIRE(details->errors.size() == 1);
  CHECK(details->errors[0].loc == std::vector<std::string>{"body", "options", "threshold"});
  CHECK(details->errors[0].type == "duplicate_key");
}
