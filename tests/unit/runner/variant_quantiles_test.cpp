// The quantiles of POST /v1/variants/score (runner/workflows/variant_quantiles.h): the share of
// background values <= a variant's, with ties, an empty background and the extremes; a package
// without a background (or with one for another scorer or distance) answers null with a reason;
// and the rendered `quantiles` of a scored variant.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "core/render/json_writer.h"
#include "runner/workflows/variant_quantile_json.h"
#include "runner/workflows/variant_quantiles.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

ShippedBackground SpliceBackground(std::vector<double> values, int64_t distance = 50) {
  ShippedBackground b;
  b.model = "splice-test";
  b.scorer = "splice";
  b.seed = 7;
  b.snvs = static_cast<int64_t>(values.size());
  b.region = "chr20:1-100";
  b.distance = distance;
  for (const char* name : {"DS_AG", "DS_AL", "DS_DG", "DS_DL", "DS_max"}) {
    b.statistics.emplace_back(name, values);
  }
  return b;
}

SpliceDelta Delta(double acceptor_gain) {
  SpliceDelta d;
  d.acceptor_gain.score = acceptor_gain;
  return d;
}

rapidjson::Document Quantiles(const ScoredVariant& scored, const VariantScoreResult& result) {
  core::JsonWriter w;
  w.StartObject();
  WriteVariantQuantiles(w, scored, result);
  WriteVariantBackgrounds(w, result);
  w.EndObject();
  rapidjson::Document doc;
  doc.Parse(w.Take().c_str());
  return doc;
}

}  // namespace

TEST_CASE("a quantile is the share of background values at or below the value", "[quantiles]") {
  const std::vector<double> sorted = {0.0, 0.0, 0.0, 0.1, 0.2, 0.2, 0.5, 0.9};
  CHECK(*QuantileOf(sorted, 0.1) == Approx(4.0 / 8));
  // Ties count as at or below: every tied value, from either side.
  CHECK(*QuantileOf(sorted, 0.0) == Approx(3.0 / 8));
  CHECK(*QuantileOf(sorted, 0.2) == Approx(6.0 / 8));
  CHECK(*QuantileOf(sorted, 0.15) == Approx(4.0 / 8));
  // Extremes: below every value 0, at or above the largest 1.
  CHECK(*QuantileOf(sorted, -0.1) == 0.0);
  CHECK(*QuantileOf(sorted, 0.9) == 1.0);
  CHECK(*QuantileOf(sorted, 5.0) == 1.0);
  CHECK(*QuantileOf({0.3}, 0.3) == 1.0);
  CHECK(*QuantileOf({0.3}, 0.2999) == 0.0);
  // No background, no figure.
  CHECK_FALSE(QuantileOf({}, 0.5).has_value());
}

TEST_CASE("a package without a usable background answers null with a reason", "[quantiles]") {
  ScorerBackground none = BackgroundFor(nullptr, "promoter-test", "promoter", 0);
  CHECK_FALSE(none.available);
  CHECK(none.reason == "the package of promoter-test ships no variant background");
  CHECK_FALSE(none.Quantile("abs_delta", 0.5).has_value());

  const ShippedBackground splice = SpliceBackground({0.1});
  ScorerBackground other_scorer = BackgroundFor(&splice, "splice-test", "promoter", std::nullopt);
  CHECK_FALSE(other_scorer.available);
  CHECK(other_scorer.reason.find("made for the splice scorer") != std::string::npos);

  ScorerBackground other_distance = BackgroundFor(&splice, "splice-test", "splice", 100);
  CHECK_FALSE(other_distance.available);
  CHECK(other_distance.reason.find("distance 50; this request used 100") != std::string::npos);

  const ShippedBackground three = SpliceBackground({0.1, 0.2, 0.3});
  ScorerBackground usable = BackgroundFor(&three, "splice-test", "splice", 50);
  REQUIRE(usable.available);
  CHECK(usable.snvs == 3);
  CHECK(*usable.Quantile("DS_max", 0.2) == Approx(2.0 / 3));
  CHECK_FALSE(usable.Quantile("no_such_statistic", 0.2).has_value());
}

TEST_CASE("the worker's background JSON is read, sorted, and refused when malformed",
          "[quantiles]") {
  auto parsed = ParseShippedBackground(
      R"({"model": "m", "package_digest": "sha256:x", "file": "variant_background.tsv", )"
      R"("scorer": "splice", "seed": 3, "snvs": 3, "region": "chr20:1-9", "distance": 50, )"
      R"("statistics": {"DS_max": [0.3, 0.0, 0.1]}})");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->statistics.size() == 1);
  CHECK(parsed->statistics[0].second == std::vector<double>{0.0, 0.1, 0.3});
  CHECK_FALSE(ParseShippedBackground("[]").ok());
  CHECK_FALSE(ParseShippedBackground(R"({"model": "m"})").ok());
  // Two values for three SNVs.
  CHECK_FALSE(ParseShippedBackground(
                  R"({"model": "m", "scorer": "splice", "seed": 3, "snvs": 3, "region": "r", )"
                  R"("distance": 50, "statistics": {"DS_max": [0.3, 0.0]}})")
                  .ok());
}

TEST_CASE("backgrounds are fetched once per package digest, a missing one kept as none",
          "[quantiles]") {
  BackgroundCache cache;
  int calls = 0;
  auto none = [&]() -> StatusOr<std::string> {
    ++calls;
    return NotFound("ships none");
  };
  auto first = cache.Get("sha256:a", none);
  REQUIRE(first.ok());
  CHECK(*first == nullptr);
  CHECK(cache.Get("sha256:a", none).ok());
  CHECK(calls == 1);
  // Another error is answered and not kept.
  auto broken = [&]() -> StatusOr<std::string> {
    ++calls;
    return Unavailable("worker down");
  };
  CHECK_FALSE(cache.Get("sha256:b", broken).ok());
  CHECK_FALSE(cache.Get("sha256:b", broken).ok());
  CHECK(calls == 3);
}

TEST_CASE("a scored variant's quantiles: splice figures, null for a scorer without background",
          "[quantiles]") {
  VariantScoreResult result;
  const ShippedBackground splice = SpliceBackground({0.0, 0.0, 0.01, 0.5});
  result.backgrounds.splice = BackgroundFor(&splice, "splice-test", "splice", 50);
  result.backgrounds.promoter = BackgroundFor(nullptr, "promoter-test", "promoter", 1000);
  ScoredVariant scored;
  scored.splice_plus = Delta(0.01);
  scored.splice_minus = Delta(0.00004);  // rounds to 0: the plus strand is reported
  scored.promoter = PromoterDelta{0.5, 0.6, 0, 0, 3};
  rapidjson::Document doc = Quantiles(scored, result);
  REQUIRE(doc.IsObject());
  const auto& q = doc["quantiles"];
  CHECK(q["splice"]["DS_AG"].GetDouble() == Approx(0.75));
  CHECK(q["splice"]["DS_max"].GetDouble() == Approx(0.75));
  CHECK(q["splice"]["DS_AL"].GetDouble() == Approx(0.5));  // 0 against two zeros of four
  CHECK(q["promoter"].IsNull());
  CHECK(doc["backgrounds"]["splice"]["available"].GetBool());
  CHECK(doc["backgrounds"]["splice"]["snvs"].GetInt64() == 4);
  CHECK_FALSE(doc["backgrounds"]["promoter"]["available"].GetBool());
  CHECK(std::string(doc["backgrounds"]["promoter"]["reason"].GetString()).find("ships no") !=
        std::string::npos);

  // The minus strand when its rounded DS_max is larger.
  scored.splice_minus = Delta(0.5);
  doc = Quantiles(scored, result);
  CHECK(doc["quantiles"]["splice"]["DS_max"].GetDouble() == 1.0);

  // A variant with an error has no quantiles.
  scored.problem = core::VariantProblem{"reference_mismatch", "x"};
  doc = Quantiles(scored, result);
  CHECK_FALSE(doc.HasMember("quantiles"));
}
