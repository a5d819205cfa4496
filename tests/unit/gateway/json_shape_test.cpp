// The pre-parse limits on a request body's shape: nesting depth and number of values.
#include <catch2/catch.hpp>

#include "gateway/validation/json_shape.h"
#include "gateway/validation/predict_request.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

TEST_CASE("JSON shape: depth and value count are limited before parsing", "[gateway][validation]") {
  JsonShapeLimits limits{4, 10};
  CHECK(CheckJsonShape(R"({"a": {"b": [1, 2]}})", limits).ok());
  CHECK(CheckJsonShape("[[[[]]]]", limits).ok());
  CHECK(CheckJsonShape("[[[[[]]]]]", limits).code() == ErrorCode::kBadRequest);
  CHECK(CheckJsonShape("[1,2,3,4,5,6,7,8,9,10]", limits).ok());
  CHECK(CheckJsonShape("[1,2,3,4,5,6,7,8,9,10,11]", limits).code() == ErrorCode::kBadRequest);
  // Brackets, braces and commas inside strings (escaped quotes included) are text, not shape.
  CHECK(CheckJsonShape(R"({"s": "[[[[[[,,,,,,,,,,,,{{{{{{ \" [[[[[[ ,,,,,,,,,,"})", limits).ok());
  CHECK(CheckJsonShape(R"(["\\", [[[[]]]]])", limits).code() == ErrorCode::kBadRequest);
  // Unbalanced text is the parser's business; the scan does not underflow.
  CHECK(CheckJsonShape("]]]]}}}}[", limits).ok());
  CHECK(CheckJsonShape(std::string(5, '[') + "not json", limits).message().find("4 levels") !=
        std::string::npos);
}

TEST_CASE("a body of 16 MiB of brackets is refused as bad_request before it is parsed",
          "[gateway][validation]") {
  const std::string brackets(16 * 1024 * 1024, '[');
  auto deep = ValidatePredictBody(Task::kPromoter, brackets);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.status().code() == ErrorCode::kBadRequest);
  CHECK(deep.status().message().find("deeper than 32 levels") != std::string::npos);

  std::string wide = "{\"sequence\": \"" + std::string(300, 'A') + "\", \"options\": {\"x\": [";
  for (int i = 0; i < 200000; ++i) wide += "0,";
  wide += "0]}}";
  auto many = ValidatePredictBody(Task::kPromoter, wide);
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("more than 100000 JSON values") != std::string::npos);

  // A valid body is untouched by the limits, whitespace-padded sequence included.
  std::string padded = "{\"sequence\": \"" + std::string(300, 'A') + std::string(1 << 20, ' ') +
                       "\", \"options\": {\"threshold\": 0.5}}";
  CHECK(ValidatePredictBody(Task::kPromoter, padded).ok());
}
