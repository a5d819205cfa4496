// POST /v1/ism with the expression scorer, admission only (core/validation/ism_request.h): one
// context, `gene` with an interval only, no variant-scoring `window`, a sequence that is the
// 9,198 bp expression window; the queued command's round trip and its entry version.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>

#include <string>

#include "common/task.h"
#include "core/admission/ism.h"
#include "core/validation/ism_request.h"
#include "tests/support/validation_checks.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

ValidatedIsm Valid(const std::string& body) {
  return testing::RequireValid(ValidateIsmBody, body);
}

std::string RefusedAt(const std::string& body) {
  return testing::RefusalOf(ValidateIsmBody, body);
}

std::string Seq(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += "ACGT"[(i * 7 + i / 3) % 4];
  return s;
}

std::string Body(const std::string& context, int64_t start, int64_t end,
                 const std::string& expression) {
  return "{" + context + ", \"window\": {\"start\": " + std::to_string(start) +
         ", \"end\": " + std::to_string(end) + "}, \"scorers\": {\"expression\": " + expression +
         "}}";
}

const std::string kWindowSeq = "\"sequence\": \"" + Seq(kExpressionWindowBp) + "\"";
const std::string kInterval = "\"interval\": {\"region\": \"chr20:5,748,001-5,759,000\"}";

}  // namespace

CATCH_TEST_CASE("ism expression validation: one context and the gene of an interval", "[ism]") {
  const ValidatedIsm s = Valid(Body(kWindowSeq, 4590, 4610, "{\"contexts\": [\"E066\"]}"));
  CATCH_CHECK(s.scorer == "expression");
  CATCH_REQUIRE(s.options.expression_contexts.size() == 1);
  CATCH_CHECK(s.options.expression_contexts[0] == "E066");
  CATCH_CHECK(s.expression_gene.empty());

  const ValidatedIsm i =
      Valid(Body(kInterval, 5753601, 5753800, "{\"contexts\": [\"lung\"], \"gene\": \"ADRA1D\"}"));
  CATCH_CHECK(i.scorer == "expression");
  CATCH_CHECK(i.expression_gene == "ADRA1D");
  CATCH_CHECK(i.options.expression_contexts[0] == "lung");
  CATCH_CHECK(Valid(Body(kInterval, 5753601, 5753601, "{\"contexts\": [\"UBERON:0002048\"]}"))
                  .expression_gene.empty());
}

CATCH_TEST_CASE("ism expression validation: each misuse is refused at its field", "[ism]") {
  // More or fewer than one context.
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\", \"E096\"]}")) ==
              "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610, "{\"contexts\": []}")) ==
              "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610, "{}")) ==
              "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610, "null")) == "body.scorers.expression");
  // Variant scoring's window has no meaning here.
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\"], \"window\": 100}")) ==
              "body.scorers.expression.window");
  // gene: a non-empty string of at most 64 characters, and only with an interval.
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\"], \"gene\": 7}")) ==
              "body.scorers.expression.gene");
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\"], \"gene\": \"\"}")) ==
              "body.scorers.expression.gene");
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\"], \"gene\": \"" + std::string(65, 'A') +
                                 "\"}")) == "body.scorers.expression.gene");
  CATCH_CHECK(RefusedAt(Body(kWindowSeq, 4590, 4610,
                             "{\"contexts\": [\"E066\"], \"gene\": \"ADRA1D\"}")) ==
              "body.scorers.expression.gene");
  // A sequence that is not the expression window.
  for (int64_t length : {kExpressionWindowBp - 1, kExpressionWindowBp + 1, int64_t{300}}) {
    CATCH_INFO(length);
    CATCH_CHECK(RefusedAt(Body("\"sequence\": \"" + Seq(length) + "\"", 1, 10,
                               "{\"contexts\": [\"E066\"]}")) == "body.sequence");
  }
  // Another option of another scorer, and expression beside another scorer.
  CATCH_CHECK(RefusedAt(Body(kInterval, 5753601, 5753610,
                             "{\"contexts\": [\"E066\"], \"top\": 3}")) ==
              "body.scorers.expression.top");
  CATCH_CHECK(RefusedAt("{" + kInterval +
                        ", \"window\": {\"start\": 5753601, \"end\": 5753610}, \"scorers\": "
                        "{\"expression\": {\"contexts\": [\"E066\"]}, \"splice\": {}}}") ==
              "body.scorers");
}

CATCH_TEST_CASE("ism expression command: the gene and context come back and need entry version 7",
                "[ism]") {
  AdmittedIsm admitted;
  admitted.input = Valid(Body(kInterval, 5753601, 5753700,
                              "{\"contexts\": [\"E066\"], \"gene\": \"ENSG00000171873\"}"));
  admitted.scorer.input = admitted.input.options;
  admitted.scorer.expression_model = "expression-model";
  CATCH_CHECK(IsmEntryVersion(admitted) == 7);
  const auto command = IsmCommandFor(admitted);
  CATCH_REQUIRE(command.has_ism());
  CATCH_CHECK(command.ism().scorer().has_expression());
  const AdmittedIsm back = IsmFromCommand(command.ism());
  CATCH_CHECK(back.input.scorer == "expression");
  CATCH_CHECK(back.input.expression_gene == "ENSG00000171873");
  CATCH_REQUIRE(back.input.options.expression_contexts.size() == 1);
  CATCH_CHECK(back.input.options.expression_contexts[0] == "E066");
  CATCH_CHECK(back.scorer.expression_model == "expression-model");

  AdmittedIsm splice;
  splice.input = Valid("{" + kInterval + ", \"window\": {\"start\": 5753601, \"end\": 5753610}}");
  CATCH_CHECK(IsmEntryVersion(splice) == 0);
}
