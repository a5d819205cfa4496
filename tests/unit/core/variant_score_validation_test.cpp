// POST /v1/variants/score admission (core/validation/variant_score_request.h): what refuses
// the request (422), and what is only one variant's error, on hostile inputs.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>

#include <string>

#include "core/admission/commands.h"
#include "core/validation/variant_score_request.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

ValidatedVariantScore Valid(const std::string& body) {
  auto v = ValidateVariantScoreBody(body);
  CATCH_INFO(body << " -> " << (v.ok() ? "ok" : v.status().message()));
  CATCH_REQUIRE(v.ok());
  return std::move(v).value();
}

// The request-level refusal of `body`: its code and its first error's location, joined by '.'.
std::string RefusedAt(const std::string& body) {
  auto v = ValidateVariantScoreBody(body);
  CATCH_INFO(body);
  CATCH_REQUIRE_FALSE(v.ok());
  const auto* details = std::get_if<ValidationDetails>(&v.status().details());
  if (details == nullptr || details->errors.empty()) return std::string(ErrorCodeName(v.status().code()));
  std::string loc;
  for (const auto& part : details->errors[0].loc) loc += (loc.empty() ? "" : ".") + part;
  return loc;
}

std::string ProblemOf(const std::string& variant_json) {
  auto v = Valid("{\"variants\": [" + variant_json + "]}");
  CATCH_REQUIRE(v.variants.size() == 1);
  return v.variants[0].problem ? v.variants[0].problem->code : "";
}

}  // namespace

CATCH_TEST_CASE("variant strings: both separators, objects, lower case, defaults", "[variants]") {
  auto v = Valid(R"({"variants": ["chr20:5753600:A:G", "chr20-5753600-a-g",
      {"contig": "20", "position": 5753600, "ref": "a", "alt": "g"}]})");
  CATCH_REQUIRE(v.variants.size() == 3);
  for (const auto& item : v.variants) {
    CATCH_CHECK_FALSE(item.problem.has_value());
    CATCH_CHECK(item.position == 5753600);
    CATCH_CHECK(item.ref == "A");
    CATCH_CHECK(item.alt == "G");
    CATCH_CHECK(item.assembly == "GRCh37");
  }
  CATCH_CHECK(v.variants[0].contig == "chr20");
  CATCH_CHECK(v.variants[1].input == "chr20-5753600-a-g");  // echoed as sent
  CATCH_CHECK(v.variants[2].input == "20:5753600:A:G");     // objects as a string
  CATCH_CHECK(v.splice);
  CATCH_CHECK(v.splice_distance == kDefaultSpliceDistance);
  auto d = Valid(R"({"variants": ["chr20:1:A:G"], "scorers": {"splice": {"distance": 5000}},
                     "assembly": "grch37"})");
  CATCH_CHECK(d.splice_distance == 5000);
  CATCH_CHECK(d.variants[0].assembly == "grch37");
}

CATCH_TEST_CASE("each bad variant is its own error, the request stands", "[variants]") {
  CATCH_CHECK(ProblemOf(R"("chr20:5753600:A")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:0:A:G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:-5:A:G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:12x:A:G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:99999999999999999999:A:G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"(":5:A:G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:A")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:X")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:5::G")") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:*")") == "unsupported_allele");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:<DEL>")") == "unsupported_allele");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:G]20:7]")") == "unsupported_allele");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:.")") == "unsupported_allele");
  CATCH_CHECK(ProblemOf(R"("chr20:5:A:G,T")") == "unsupported_allele");
  CATCH_CHECK(ProblemOf(R"("chr20:5:AT:GC")") == "unsupported_variant");
  CATCH_CHECK(ProblemOf("\"chr20:5:A:" + std::string("A") + std::string(50, 'C') + "\"") == "");
  CATCH_CHECK(ProblemOf("\"chr20:5:A:" + std::string("A") + std::string(51, 'C') + "\"") ==
              "indel_too_long");
  CATCH_CHECK(ProblemOf("\"chr20:5:" + std::string(52, 'A') + ":A\"") == "indel_too_long");
  CATCH_CHECK(ProblemOf("\"" + std::string(100000, 'x') + "\"") == "invalid_variant");
  CATCH_CHECK(ProblemOf("17") == "invalid_variant");
  CATCH_CHECK(ProblemOf("null") == "invalid_variant");
  CATCH_CHECK(ProblemOf("[\"chr20\", 5, \"A\", \"G\"]") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"({"contig": "20", "position": "5", "ref": "A", "alt": "G"})") ==
              "invalid_variant");
  CATCH_CHECK(ProblemOf(R"({"contig": "20", "position": 5.5, "ref": "A", "alt": "G"})") ==
              "invalid_variant");
  CATCH_CHECK(ProblemOf(R"({"contig": "20", "position": 5, "ref": "A"})") == "invalid_variant");
  CATCH_CHECK(ProblemOf(R"({"contig": "20", "position": 5, "ref": "A", "alt": "G", "x": 1})") ==
              "invalid_variant");
  CATCH_CHECK(ProblemOf(R"({"contig": "20", "position": 5, "ref": "A", "alt": "G",
                             "assembly": 37})") == "invalid_variant");
  // Oversized fields are cut before they are echoed back.
  auto huge = Valid("{\"variants\": [{\"contig\": \"20\", \"position\": 5, \"ref\": \"" +
                    std::string(100000, 'A') + "\", \"alt\": \"A\"}]}");
  CATCH_REQUIRE(huge.variants[0].problem.has_value());
  CATCH_CHECK(huge.variants[0].problem->code == "invalid_variant");
  CATCH_CHECK(huge.variants[0].ref.size() <= 512);
  CATCH_CHECK(huge.variants[0].input.size() <= 1100);
  // A good one beside bad ones is still good.
  auto v = Valid(R"({"variants": ["nonsense", "chr20:5:A:G", 3]})");
  CATCH_CHECK(v.variants[0].problem.has_value());
  CATCH_CHECK_FALSE(v.variants[1].problem.has_value());
  CATCH_CHECK(v.variants[2].problem.has_value());
}

CATCH_TEST_CASE("what refuses the whole request: 422 with the place", "[variants]") {
  CATCH_CHECK(RefusedAt("{}") == "body.variants");
  CATCH_CHECK(RefusedAt(R"({"variants": "chr20:5:A:G"})") == "body.variants");
  CATCH_CHECK(RefusedAt(R"({"variants": []})") == "body.variants");
  // Past the batch limit (more than 100 is a batch job, not a refusal).
  std::string many = "{\"variants\": [";
  for (int i = 0; i < 20001; ++i) many += (i ? "," : "") + std::string("\"chr20:5:A:G\"");
  CATCH_CHECK(RefusedAt(many + "]}") == "body.variants");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"enhancer": {}}})") ==
              "body.scorers.enhancer");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {}})") == "body.scorers");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": ["splice"]})") ==
              "body.scorers");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"splice": {"distance": 5001}}})") ==
              "body.scorers.splice.distance");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"splice": {"distance": -1}}})") ==
              "body.scorers.splice.distance");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"splice": {"distance": "50"}}})") ==
              "body.scorers.splice.distance");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"splice": {"distance": 1.5}}})") ==
              "body.scorers.splice.distance");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "scorers": {"splice": {"dist": 5}}})") ==
              "body.scorers.splice.dist");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "extra": 1})") == "body.extra");
  CATCH_CHECK(RefusedAt(R"({"variants": ["chr20:5:A:G"], "assembly": 37})") == "body.assembly");
  CATCH_CHECK(RefusedAt("[1, 2]") == "body");
  auto malformed = ValidateVariantScoreBody("{\"variants\": [");
  CATCH_REQUIRE_FALSE(malformed.ok());
  CATCH_CHECK(malformed.status().code() == ErrorCode::kBadRequest);
  // Exactly 100 is fine.
  std::string hundred = "{\"variants\": [";
  for (int i = 0; i < 100; ++i) hundred += (i ? "," : "") + std::string("\"chr20:5:A:G\"");
  CATCH_CHECK(Valid(hundred + "]}").variants.size() == 100);
}

CATCH_TEST_CASE("the queued command carries every variant, its problem and the scorer", "[variants]") {
  auto v = Valid(R"({"variants": ["chr20:5:A:G", "bad"], "scorers": {"splice": {"distance": 7}}})");
  AdmittedVariantScore admitted{v, "splice-human"};
  auto command = VariantScoreCommandFor(admitted);
  std::string wire = command.SerializeAsString();
  jobs::v1::JobCommand read;
  CATCH_REQUIRE(read.ParseFromString(wire));
  CATCH_REQUIRE(read.has_variant_score());
  auto back = VariantScoreFromCommand(read.variant_score());
  CATCH_REQUIRE(back.input.variants.size() == 2);
  CATCH_CHECK(back.input.variants[0].input == "chr20:5:A:G");
  CATCH_CHECK(back.input.variants[0].position == 5);
  CATCH_CHECK_FALSE(back.input.variants[0].problem.has_value());
  CATCH_REQUIRE(back.input.variants[1].problem.has_value());
  CATCH_CHECK(back.input.variants[1].problem->code == "invalid_variant");
  CATCH_CHECK(back.input.splice);
  CATCH_CHECK(back.input.splice_distance == 7);
  CATCH_CHECK(back.splice_model == "splice-human");
}

CATCH_TEST_CASE("the other scorers: their options, defaults and bounds", "[variants]") {
  const std::string v = R"({"variants": ["chr20:5:A:G"], "scorers": )";
  auto all = Valid(v + R"({"expression": {"contexts": ["E066", "UBERON:0002107", "liver"]},
                           "chromatin": null, "promoter": {}}})");
  CATCH_CHECK_FALSE(all.splice);
  CATCH_CHECK(all.expression);
  CATCH_CHECK(all.expression_contexts ==
              std::vector<std::string>{"E066", "UBERON:0002107", "liver"});
  CATCH_CHECK(all.expression_window == kDefaultExpressionWindow);
  CATCH_CHECK(all.chromatin);
  CATCH_CHECK(all.chromatin_top == 10);
  CATCH_CHECK(all.promoter);
  CATCH_CHECK(all.promoter_distance == 1000);
  auto set = Valid(v + R"({"expression": {"contexts": ["x"], "window": 100000},
                           "chromatin": {"top": 1000}, "promoter": {"distance": 0}}})");
  CATCH_CHECK(set.expression_window == 100000);
  CATCH_CHECK(set.chromatin_top == 1000);
  CATCH_CHECK(set.promoter_distance == 0);

  CATCH_CHECK(RefusedAt(v + R"({"expression": {}}})") == "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(v + R"({"expression": null}})") == "body.scorers.expression");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": []}}})") ==
              "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": "liver"}}})") ==
              "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": ["liver", ""]}}})") ==
              "body.scorers.expression.contexts.1");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": ["liver", 3]}}})") ==
              "body.scorers.expression.contexts.1");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": ["a"], "window": 100001}}})") ==
              "body.scorers.expression.window");
  std::string seventeen = R"({"expression": {"contexts": [)";
  for (int i = 0; i < 17; ++i) seventeen += (i ? "," : "") + std::string("\"E066\"");
  CATCH_CHECK(RefusedAt(v + seventeen + "]}}}") == "body.scorers.expression.contexts");
  CATCH_CHECK(RefusedAt(v + R"({"expression": {"contexts": ["a"], "tissues": ["b"]}}})") ==
              "body.scorers.expression.tissues");
  CATCH_CHECK(RefusedAt(v + R"({"chromatin": {"top": 0}}})") == "body.scorers.chromatin.top");
  CATCH_CHECK(RefusedAt(v + R"({"chromatin": {"top": 1001}}})") == "body.scorers.chromatin.top");
  CATCH_CHECK(RefusedAt(v + R"({"chromatin": {"top": true}}})") == "body.scorers.chromatin.top");
  CATCH_CHECK(RefusedAt(v + R"({"chromatin": {"distance": 5}}})") ==
              "body.scorers.chromatin.distance");
  CATCH_CHECK(RefusedAt(v + R"({"promoter": {"distance": 10001}}})") ==
              "body.scorers.promoter.distance");
  CATCH_CHECK(RefusedAt(v + R"({"promoter": {"distance": -1}}})") ==
              "body.scorers.promoter.distance");
  CATCH_CHECK(RefusedAt(v + R"({"promoter": 5}})") == "body.scorers.promoter");
}

CATCH_TEST_CASE("the other scorers travel in the command, which then needs entry version 4",
                "[variants]") {
  auto splice_only = Valid(R"({"variants": ["chr20:5:A:G"]})");
  CATCH_CHECK(VariantScoreEntryVersion(AdmittedVariantScore{splice_only, "splice-human"}) == 3);
  auto v = Valid(R"({"variants": ["chr20:5:A:G"], "scorers": {
      "expression": {"contexts": ["E066", "brain"], "window": 300},
      "chromatin": {"top": 3}, "promoter": {"distance": 2000}}})");
  AdmittedVariantScore admitted{v, "", "expression-human", "chromatin-human", "promoter-human"};
  CATCH_CHECK(VariantScoreEntryVersion(admitted) == 4);
  jobs::v1::JobCommand read;
  CATCH_REQUIRE(read.ParseFromString(VariantScoreCommandFor(admitted).SerializeAsString()));
  auto back = VariantScoreFromCommand(read.variant_score());
  CATCH_CHECK_FALSE(back.input.splice);
  CATCH_CHECK(back.input.expression);
  CATCH_CHECK(back.input.expression_contexts == std::vector<std::string>{"E066", "brain"});
  CATCH_CHECK(back.input.expression_window == 300);
  CATCH_CHECK(back.expression_model == "expression-human");
  CATCH_CHECK(back.input.chromatin);
  CATCH_CHECK(back.input.chromatin_top == 3);
  CATCH_CHECK(back.chromatin_model == "chromatin-human");
  CATCH_CHECK(back.input.promoter);
  CATCH_CHECK(back.input.promoter_distance == 2000);
  CATCH_CHECK(back.promoter_model == "promoter-human");
  for (const char* one : {R"({"chromatin": {}})", R"({"promoter": {}})",
                          R"({"expression": {"contexts": ["x"]}})"}) {
    auto single = Valid(std::string(R"({"variants": ["chr20:5:A:G"], "scorers": )") + one + "}");
    CATCH_CHECK(VariantScoreEntryVersion(AdmittedVariantScore{single, ""}) == 4);
  }
}
