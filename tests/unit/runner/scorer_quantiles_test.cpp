// The quantiles of the promoter, chromatin and expression scorers (runner/workflows/
// variant_quantile_json.h) against backgrounds shaped as the shipped ones
// (training/scorer_backgrounds.py): promoter `abs_delta`, chromatin one `abs_delta:<feature>`
// column per learned feature (a reported feature without one is null), expression one
// `abs_log2_fold_change:<context id>` column per context at the published precision (an
// unmatched context is null); each the share of the background at or below the variant's
// published |delta|, and null with a reason at another distance than the background's.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <cmath>

#include "core/render/json_writer.h"
#include "runner/variant/annotation_engine.h"
#include "runner/workflows/variant_quantile_json.h"
#include "runner/workflows/variant_quantiles.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

ShippedBackground Background(const std::string& scorer, int64_t distance,
                             std::vector<std::pair<std::string, std::vector<double>>> stats) {
  ShippedBackground b;
  b.model = scorer + "-test";
  b.scorer = scorer;
  b.seed = 2511;
  b.snvs = static_cast<int64_t>(stats.front().second.size());
  b.region = "chr20:53031521-63019520";
  b.distance = distance;
  b.statistics = std::move(stats);
  return b;
}

rapidjson::Document Render(const ScoredVariant& scored, const VariantScoreResult& result) {
  core::JsonWriter w;
  w.StartObject();
  WriteVariantQuantiles(w, scored, result);
  WriteVariantBackgrounds(w, result);
  w.EndObject();
  rapidjson::Document doc;
  doc.Parse(w.Take().c_str());
  return doc;
}

ChromatinDelta Feature(const std::string& name, double ref, double alt) {
  ChromatinDelta f;
  f.name = name;
  f.ref = ref;
  f.alt = alt;
  return f;
}

}  // namespace

TEST_CASE("promoter quantile: the published absolute delta of the maxima against abs_delta",
          "[quantiles]") {
  const ShippedBackground shipped =
      Background("promoter", 1000, {{"abs_delta", {0.0, 0.0, 0.001, 0.01, 0.02}}});
  VariantScoreResult result;
  result.backgrounds.promoter = BackgroundFor(&shipped, "promoter-test", "promoter", 1000);
  ScoredVariant scored;
  // ALT below REF: the sign is dropped, the rounding to 4 decimals kept (0.01004 -> 0.01).
  scored.promoter = PromoterDelta{0.6, 0.58996, 0, 0, 3};
  rapidjson::Document doc = Render(scored, result);
  REQUIRE(doc["quantiles"]["promoter"].IsObject());
  CHECK(doc["quantiles"]["promoter"]["delta"].GetDouble() == Approx(0.8));
  // No change: at the share of zeros.
  scored.promoter = PromoterDelta{0.6, 0.6, 0, 0, 3};
  CHECK(Render(scored, result)["quantiles"]["promoter"]["delta"].GetDouble() == Approx(0.4));
  // Beyond every background value: 1.
  scored.promoter = PromoterDelta{0.1, 0.9, 0, 0, 3};
  CHECK(Render(scored, result)["quantiles"]["promoter"]["delta"].GetDouble() == 1.0);
  CHECK(doc["backgrounds"]["promoter"]["available"].GetBool());
  CHECK(doc["backgrounds"]["promoter"]["distance"].GetInt64() == 1000);

  // Another distance than the background's: null, and why.
  result.backgrounds.promoter = BackgroundFor(&shipped, "promoter-test", "promoter", 500);
  doc = Render(scored, result);
  CHECK(doc["quantiles"]["promoter"].IsNull());
  CHECK(std::string(doc["backgrounds"]["promoter"]["reason"].GetString()) ==
        "the variant background of promoter-test was scored at distance 1000; this request "
        "used 500");
}

TEST_CASE("chromatin quantiles: one per reported feature against its own column",
          "[quantiles]") {
  const ShippedBackground shipped =
      Background("chromatin", 0,
                 {{"abs_delta:K562|CTCF|None", {0.0, 0.001, 0.002, 0.1}},
                  {"abs_delta:HepG2|CTCF|None", {0.05, 0.06, 0.07, 0.08}}});
  VariantScoreResult result;
  // The chromatin scorer has no distance: any request uses the background.
  result.backgrounds.chromatin =
      BackgroundFor(&shipped, "chromatin-test", "chromatin", std::nullopt);
  ScoredVariant scored;
  scored.chromatin = std::vector<ChromatinDelta>{
      Feature("HepG2|CTCF|None", 0.5, 0.43),     // |delta| 0.07: 3 of 4 at or below
      Feature("K562|CTCF|None", 0.2, 0.2021),    // 0.0021: 3 of 4
      Feature("K562|CTCF|None", 0.2, 0.2),       // a second feature of that name: 1 of 4
      Feature("8988T|DNase|None", 0.0, 0.0)};    // not learned, no column: null
  rapidjson::Document doc = Render(scored, result);
  const auto& q = doc["quantiles"]["chromatin"];
  REQUIRE(q.IsArray());
  REQUIRE(q.Size() == 4);
  CHECK(q[0].GetDouble() == Approx(0.75));
  CHECK(q[1].GetDouble() == Approx(0.75));
  CHECK(q[2].GetDouble() == Approx(0.25));
  CHECK(q[3].IsNull());
  CHECK(doc["backgrounds"]["chromatin"]["available"].GetBool());
  CHECK(doc["backgrounds"]["chromatin"]["statistics"].Size() == 2);

  // A background made for another scorer is not used.
  result.backgrounds.chromatin =
      BackgroundFor(&shipped, "chromatin-test", "promoter", std::nullopt);
  CHECK(Render(scored, result)["quantiles"]["chromatin"].IsNull());
}

TEST_CASE("expression quantiles: per gene and context against that context's column",
          "[quantiles]") {
  const ShippedBackground shipped =
      Background("expression", 4599,
                 {{"abs_log2_fold_change:E003", {0.0, 0.001, 0.01, 0.1, 1.0}},
                  {"abs_log2_fold_change:E066", {0.0, 0.0, 0.0, 0.0, 0.5}}});
  VariantScoreResult result;
  result.backgrounds.expression =
      BackgroundFor(&shipped, "expression-test", "expression", 4599);
  ExpressionScorerInfo info;
  info.window = 4599;
  info.contexts = {{"H1 Cells", true, "E003", "H1 Cells"},
                   {"liver", true, "E066", "Liver"},
                   {"kidney", false, "", ""}};  // unmatched: no context id, no quantile
  result.expression = info;
  ExpressionGene gene;
  // ln(TPM+1): E003 REF 1.0 -> ALT 0.95 (a fall: the sign is dropped); E066 unchanged.
  gene.ref_log_tpm = {1.0, 2.0, 1.0};
  gene.alt_log_tpm = {0.95, 2.0, 1.2};
  ScoredVariant scored;
  scored.expression = std::vector<ExpressionGene>{gene, gene};
  rapidjson::Document doc = Render(scored, result);
  const auto& q = doc["quantiles"]["expression"];
  REQUIRE(q.IsArray());
  REQUIRE(q.Size() == 2);  // one array per gene
  for (rapidjson::SizeType g = 0; g < q.Size(); ++g) {
    REQUIRE(q[g].Size() == 3);  // one value per requested context
    const double change = std::fabs(variant::Log2FoldChange(0.95, 1.0));
    REQUIRE(change > 0.01);
    REQUIRE(change < 0.1);
    CHECK(q[g][0].GetDouble() == Approx(0.6));  // 0, 0.001, 0.01 of 5 at or below
    CHECK(q[g][1].GetDouble() == Approx(0.8));  // no change: the four zeros
    CHECK(q[g][2].IsNull());
  }
  // A request with another window than the background's: null, and why.
  result.backgrounds.expression =
      BackgroundFor(&shipped, "expression-test", "expression", 10000);
  doc = Render(scored, result);
  CHECK(doc["quantiles"]["expression"].IsNull());
  CHECK_FALSE(doc["backgrounds"]["expression"]["available"].GetBool());
}
