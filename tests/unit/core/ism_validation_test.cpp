// POST /v1/ism admission (core/validation/ism_request.h, core/admission/ism.h): the window
// against its context, the one scorer and its options (read as variant scoring reads them), and
// the queued command's round trip.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>

#include <string>

#include "core/admission/ism.h"
#include "core/validation/ism_request.h"
#include "tests/support/validation_checks.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

ValidatedIsm Valid(const std::string& body) {
  return testing::RequireValid(ValidateIsmBody, body);
}

// The refusal of `body`: its first error's location joined by '.', or its code.
std::string RefusedAt(const std::string& body) {
  return testing::RefusalOf(ValidateIsmBody, body);
}

std::string Seq(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "ACGT"[(i * 7 + i / 3) % 4];
  return s;
}

std::string Body(const std::string& context, int64_t start, int64_t end,
                 const std::string& rest = "") {
  return "{" + context + ", \"window\": {\"start\": " + std::to_string(start) +
         ", \"end\": " + std::to_string(end) + "}" + rest + "}";
}

}  // namespace

CATCH_TEST_CASE("ism validation: the window, its context and the default scorer", "[ism]") {
  const std::string seq = "\"sequence\": \"" + Seq(300) + "\"";
  const ValidatedIsm v = Valid(Body(seq, 1, 200));
  CATCH_CHECK(v.sequence == Seq(300));
  CATCH_CHECK(v.window_start == 1);
  CATCH_CHECK(v.window_end == 200);
  CATCH_CHECK(v.scorer == "splice");
  CATCH_CHECK(v.options.splice_distance == kDefaultSpliceDistance);
  CATCH_CHECK(Valid(Body(seq, 300, 300)).window_end == 300);  // the last base alone
  CATCH_CHECK(Valid(Body("\"sequence\": \"acgtnn acgt\"", 7, 10)).sequence == "ACGTNNACGT");

  CATCH_CHECK(RefusedAt(Body(seq, 1, 201)) == "body.window");     // 201 bp
  CATCH_CHECK(RefusedAt(Body(seq, 101, 301)) == "body.window");   // past the end
  CATCH_CHECK(RefusedAt(Body(seq, 0, 10)) == "body.window.start");
  CATCH_CHECK(RefusedAt(Body(seq, 10, 9)) == "body.window");
  CATCH_CHECK(RefusedAt(Body("\"sequence\": \"ACGTNNACGT\"", 1, 10)) == "body.window");  // N
  CATCH_CHECK(RefusedAt("{" + seq + "}") == "body.window");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"window_bp\": 3")) == "body.window_bp");
  CATCH_CHECK(RefusedAt("{\"window\": {\"start\": 1, \"end\": 2}}") == "body.sequence");
  CATCH_CHECK(RefusedAt("[1]") == "body");
  CATCH_CHECK(RefusedAt("{\"sequence\": ") == "bad_request");
}

CATCH_TEST_CASE("ism validation: an interval's window is on the contig, inside the interval",
                "[ism]") {
  const std::string interval = "\"interval\": {\"region\": \"chr20:5,000,001-5,001,000\"}";
  const ValidatedIsm v = Valid(Body(interval, 5000801, 5001000));
  CATCH_REQUIRE(v.interval.has_value());
  CATCH_CHECK(v.interval->start == 5000001);
  CATCH_CHECK(v.sequence.empty());
  CATCH_CHECK(RefusedAt(Body(interval, 5000000, 5000010)) == "body.window");
  CATCH_CHECK(RefusedAt(Body(interval, 5000901, 5001001)) == "body.window");
  // Strand '-': the context is scored reverse-complemented (runner/workflows/ism.h).
  const ValidatedIsm minus =
      Valid(Body("\"interval\": {\"region\": \"chr20:1-100\", \"strand\": \"-\"}", 1, 10));
  CATCH_REQUIRE(minus.interval.has_value());
  CATCH_CHECK(minus.interval->strand == '-');
  CATCH_CHECK(RefusedAt(Body(interval + ", \"sequence\": \"ACGT\"", 1, 2)) == "body");
}

CATCH_TEST_CASE("ism validation: one scorer, with variant scoring's options and errors",
                "[ism]") {
  const std::string seq = "\"sequence\": \"" + Seq(50) + "\"";
  CATCH_CHECK(Valid(Body(seq, 1, 10, ", \"scorers\": {\"chromatin\": {\"top\": 3}}")).scorer ==
              "chromatin");
  CATCH_CHECK(
      Valid(Body(seq, 1, 10, ", \"scorers\": {\"chromatin\": {\"top\": 3}}")).options.chromatin_top ==
      3);
  const ValidatedIsm p = Valid(Body(seq, 1, 10, ", \"scorers\": {\"promoter\": null}"));
  CATCH_CHECK(p.scorer == "promoter");
  CATCH_CHECK(p.options.promoter_distance == kDefaultPromoterDistance);
  CATCH_CHECK(Valid(Body(seq, 1, 10, ", \"scorers\": {\"splice\": {\"distance\": 7}}"))
                  .options.splice_distance == 7);
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": {\"nope\": {}}")) ==
              "body.scorers.nope");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": {\"splice\": {\"distance\": -1}}")) ==
              "body.scorers.splice.distance");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": {\"promoter\": {\"top\": 1}}")) ==
              "body.scorers.promoter.top");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": {\"splice\": {}, \"chromatin\": {}}")) ==
              "body.scorers");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": {}")) == "body.scorers");
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10, ", \"scorers\": [\"splice\"]")) == "body.scorers");
  // Expression needs the 9,198 bp expression window as its sequence (ism_expression_test).
  CATCH_CHECK(RefusedAt(Body(seq, 1, 10,
                             ", \"scorers\": {\"expression\": {\"contexts\": [\"E066\"]}}")) ==
              "body.sequence");
}

CATCH_TEST_CASE("ism command: what the queue carries comes back as admitted", "[ism]") {
  AdmittedIsm admitted;
  admitted.input = Valid(Body("\"interval\": {\"region\": \"chr20:1001-2000\"}", 1101, 1300,
                              ", \"scorers\": {\"promoter\": {\"distance\": 250}}"));
  admitted.scorer.input = admitted.input.options;
  admitted.scorer.promoter_model = "promoter-human";
  const auto command = IsmCommandFor(admitted);
  CATCH_REQUIRE(command.has_ism());
  const AdmittedIsm back = IsmFromCommand(command.ism());
  CATCH_REQUIRE(back.input.interval.has_value());
  CATCH_CHECK(back.input.interval->Label() == "chr20:1001-2000");
  CATCH_CHECK(back.input.window_start == 1101);
  CATCH_CHECK(back.input.window_end == 1300);
  CATCH_CHECK(back.input.scorer == "promoter");
  CATCH_CHECK(back.input.options.promoter_distance == 250);
  CATCH_CHECK(back.scorer.promoter_model == "promoter-human");
  CATCH_CHECK_FALSE(back.scorer.input.splice);
}
