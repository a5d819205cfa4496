// Expression by interval with the TSS named on the contig (tss_genome_position, 1-based): the
// offset it becomes on either strand, the window it may read past the interval's edges, and
// every way to get it wrong as a 422 at the field (issue 25, scope 2). tss_index keeps its
// rules; the queue command carries the result to the runner unchanged.
#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include "common/tss_window.h"
#include "core/admission/interval_commands.h"
#include "core/validation/predict_request.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

std::string Body(const std::string& interval, const std::string& extra) {
  return R"({"interval":)" + interval + extra + R"(,"options":{"description":"liver"}})";
}

// chr20:100,001-112,000 (12,000 bp) on `strand`.
std::string Interval(char strand) {
  return R"({"contig":"chr20","start":100001,"end":112000,"strand":")" + std::string(1, strand) +
         "\"}";
}

const std::vector<FieldError>& Errors(const Status& status) {
  static const std::vector<FieldError> kNone;
  const auto* d = std::get_if<ValidationDetails>(&status.details());
  return d ? d->errors : kNone;
}

// The one 422 error of `body`: at `loc`, its message holding `words`.
void OnlyError(const std::string& body, const std::vector<std::string>& loc,
               const std::string& words) {
  auto result = ValidatePredictBody(Task::kExpression, body);
  INFO(body);
  INFO(result.status().ToString());
  REQUIRE_FALSE(result.ok());
  REQUIRE(result.status().code() == ErrorCode::kValidationFailed);
  REQUIRE(Errors(result.status()).size() == 1);
  const FieldError& e = Errors(result.status()).front();
  CHECK(e.loc == loc);
  CHECK(e.msg.find(words) != std::string::npos);
}

ValidatedPredict Valid(const std::string& body) {
  auto result = ValidatePredictBody(Task::kExpression, body);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *result;
}

}  // namespace

TEST_CASE("tss_genome_position is an offset from the interval's start on strand plus",
          "[interval][expression][validation]") {
  const ValidatedPredict v = Valid(Body(Interval('+'), R"(,"tss_genome_position":106001)"));
  CHECK(v.tss_index == 6000);
  CHECK(v.scored_start == 6000 - kExpressionHalfWindowBp);
  CHECK(v.scored_end == 6000 + kExpressionHalfWindowBp);
  // The same as tss_index 6000 (which has to keep its window inside the interval).
  const ValidatedPredict by_index = Valid(Body(Interval('+'), R"(,"tss_index":6000)"));
  CHECK(by_index.scored_start == v.scored_start);
  CHECK(by_index.scored_end == v.scored_end);
}

TEST_CASE("tss_genome_position counts from the interval's end on strand minus",
          "[interval][expression][validation]") {
  // Base 111,901 is 99 bases before the interval's last base: offset 99 on the minus strand.
  const ValidatedPredict v = Valid(Body(Interval('-'), R"(,"tss_genome_position":111901)"));
  CHECK(v.tss_index == 99);
  CHECK(v.scored_start == 99 - kExpressionHalfWindowBp);  // the window reaches past the edge
}

TEST_CASE("tss_genome_position may sit at either end of the interval",
          "[interval][expression][validation]") {
  CHECK(Valid(Body(Interval('+'), R"(,"tss_genome_position":100001)")).tss_index == 0);
  CHECK(Valid(Body(Interval('+'), R"(,"tss_genome_position":112000)")).tss_index == 11999);
  CHECK(Valid(Body(Interval('-'), R"(,"tss_genome_position":112000)")).tss_index == 0);
  CHECK(Valid(Body(Interval('-'), R"(,"tss_genome_position":100001)")).tss_index == 11999);
  // Given as null it is not given: tss_index's rules apply.
  CHECK(Valid(Body(Interval('+'), R"(,"tss_genome_position":null,"tss_index":5000)")).tss_index ==
        5000);
}

TEST_CASE("tss_genome_position outside the interval is 422 at the field",
          "[interval][expression][validation]") {
  const std::vector<std::string> at = {"body", "tss_genome_position"};
  OnlyError(Body(Interval('+'), R"(,"tss_genome_position":100000)"), at,
            "must lie inside the interval chr20:100001-112000");
  OnlyError(Body(Interval('+'), R"(,"tss_genome_position":112001)"), at, "got 112001");
  OnlyError(Body(Interval('-'), R"(,"tss_genome_position":5)"), at, "100001 <=");
}

TEST_CASE("tss_genome_position and tss_index together are 422",
          "[interval][expression][validation]") {
  OnlyError(Body(Interval('+'), R"(,"tss_genome_position":106001,"tss_index":6000)"), {"body"},
            "exactly one of tss_index");
}

TEST_CASE("tss_genome_position with a sequence is 422 naming tss_index",
          "[interval][expression][validation]") {
  const std::string body = R"({"sequence":")" + std::string(kExpressionWindowBp, 'A') +
                           R"(","tss_genome_position":4600,"options":{"description":"liver"}})";
  OnlyError(body, {"body", "tss_genome_position"}, "needs interval input");
}

TEST_CASE("tss_genome_position of the wrong type or below 1 is 422 at the field",
          "[interval][expression][validation]") {
  for (const char* value : {"\"106001\"", "1.5", "0", "-3", "true"}) {
    const std::string body = Body(Interval('+'), std::string(",\"tss_genome_position\":") + value);
    auto result = ValidatePredictBody(Task::kExpression, body);
    INFO(body);
    REQUIRE_FALSE(result.ok());
    REQUIRE(result.status().code() == ErrorCode::kValidationFailed);
    REQUIRE_FALSE(Errors(result.status()).empty());
    CHECK(Errors(result.status()).front().loc ==
          std::vector<std::string>{"body", "tss_genome_position"});
  }
}

TEST_CASE("tss_index with an interval keeps its rules", "[interval][expression][validation]") {
  // Still an offset into the analysed sequence whose window must fit inside it.
  auto result = ValidatePredictBody(Task::kExpression, Body(Interval('+'), R"(,"tss_index":100)"));
  REQUIRE_FALSE(result.ok());
  CHECK(Errors(result.status()).front().loc == std::vector<std::string>{"body"});
  // Neither given on an interval that is not exactly the window: the same 422 as today.
  auto none = ValidatePredictBody(Task::kExpression, Body(Interval('+'), ""));
  REQUIRE_FALSE(none.ok());
  CHECK(Errors(none.status()).front().msg.find("tss_index or tss_genome_position is required") != std::string::npos);
}

TEST_CASE("the queue command carries the window of tss_genome_position",
          "[interval][expression][validation]") {
  AdmittedPredict admitted{Valid(Body(Interval('-'), R"(,"tss_genome_position":111901)")),
                           OutputFormat::kJson};
  admitted.input.request.set_model("expression-test");
  auto back = FromIntervalCommand(std::move(*IntervalCommandFor(admitted).mutable_interval()));
  REQUIRE(back.ok());
  const auto& restored = std::get<AdmittedPredict>(*back).input;
  CHECK(restored.tss_index == 99);
  CHECK(restored.scored_start == admitted.input.scored_start);
  CHECK(restored.scored_end == admitted.input.scored_end);
  CHECK(restored.interval->strand == '-');
}

TEST_CASE("an expression window past the interval needs a queue reader of format 6",
          "[interval][expression][validation]") {
  // TSS 100 bp inside the start of a 12,000 bp interval: the window reaches 4,499 bp before it.
  const AdmittedPredict near_edge{Valid(Body(Interval('+'), R"(,"tss_genome_position":100101)")),
                                  OutputFormat::kJson};
  CHECK(near_edge.input.scored_start < 0);
  CHECK(IntervalEntryVersion(near_edge) == 6);
  // The same on strand '-' near the interval's end (its sense start).
  const AdmittedPredict minus{Valid(Body(Interval('-'), R"(,"tss_genome_position":111901)")),
                              OutputFormat::kJson};
  CHECK(IntervalEntryVersion(minus) == 6);
  // A window inside the interval is what runners of format 4 already serve.
  const AdmittedPredict inside{Valid(Body(Interval('+'), R"(,"tss_genome_position":106001)")),
                               OutputFormat::kJson};
  CHECK(inside.input.scored_start >= 0);
  CHECK(inside.input.scored_end <= 12000);
  CHECK(IntervalEntryVersion(inside) == 4);
}
