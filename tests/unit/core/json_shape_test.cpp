// The pre-parse limits on a request body's shape: nesting depth and number of values.
#include <catch2/catch.hpp>

#include "core/validation/json_shape.h"
#include "core/validation/predict_request.h"

using namespace dnaserve;
using namespace dnaserve::core;

TEST_CASE("JSON shape: depth and value count are limited before parsing", "[gateway][validation]") {
  core::JsonShapeLimits limits{4, 10};
  CHECK(core::CheckJsonShape(R"({"a": {"b": [1, 2]}})", limits).ok());
  CHECK(core::CheckJsonShape("[[[[]]]]", limits).ok());
  CHECK(core::CheckJsonShape("[[[[[]]]]]", limits).code() == ErrorCode::kBadRequest);
  CHECK(core::CheckJsonShape("[1,2,3,4,5,6,7,8,9,10]", limits).ok());
  CHECK(core::CheckJsonShape("[1,2,3,4,5,6,7,8,9,10,11]", limits).code() == ErrorCode::kBadRequest);
  // Brackets, braces and commas inside strings (escaped quotes included) are text, not shape.
  CHECK(core::CheckJsonShape(R"({"s": "[[[[[[,,,,,,,,,,,,{{{{{{ \" [[[[[[ ,,,,,,,,,,"})", limits).ok());
  CHECK(core::CheckJsonShape(R"(["\\", [[[[]]]]])", limits).code() == ErrorCode::kBadRequest);
  // A quote after an odd run of backslashes is escaped, after an even run it closes the string
  // (the scan jumps between quotes, so both sides of the rule are checked here).
  CHECK(core::CheckJsonShape(R"(["a\\\"[[[[[", 1])", limits).ok());
  CHECK(core::CheckJsonShape(R"(["a\\\\", [[[[[]]]]]])", limits).code() == ErrorCode::kBadRequest);
  CHECK(core::CheckJsonShape(R"(["\\\\\\\"", [[[[]]]]])", limits).code() == ErrorCode::kBadRequest);
  CHECK(core::CheckJsonShape(R"(["", "", [[[]]]])", limits).ok());
  CHECK(core::CheckJsonShape(R"([["", [[[]]]]])", limits).code() == ErrorCode::kBadRequest);
  // An unterminated string ends the scan (the parser refuses the body).
  CHECK(core::CheckJsonShape(R"(["abc\")", limits).ok());
  // Unbalanced text is the parser's business; the scan does not underflow.
  CHECK(core::CheckJsonShape("]]]]}}}}[", limits).ok());
  CHECK(core::CheckJsonShape(std::string(5, '[') + "not json", limits).message().find("4 levels") !=
        std::string::npos);
}

TEST_CASE("a body of 16 MiB of brackets is refused as bad_request before it is parsed",
          "[gateway][validation]") {
  const std::string brackets(16 * 1024 * 1024, '[');
  auto deep = core::ValidatePredictBody(Task::kPromoter, brackets);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.status().code() == ErrorCode::kBadRequest);
  CHECK(deep.status().message().find("deeper than 32 levels") != std::string::npos);

  std::string wide = "{\"sequence\": \"" + std::string(300, 'A') + "\", \"options\": {\"x\": [";
  for (int i = 0; i < 200000; ++i) wide += "0,";
  wide += "0]}}";
  auto many = core::ValidatePredictBody(Task::kPromoter, wide);
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("more than 100000 JSON values") != std::string::npos);

  // A valid body is untouched by the limits, whitespace-padded sequence included.
  std::string padded = "{\"sequence\": \"" + std::string(300, 'A') + std::string(1 << 20, ' ') +
                       "\", \"options\": {\"threshold\": 0.5}}";
  CHECK(core::ValidatePredictBody(Task::kPromoter, padded).ok());
}
