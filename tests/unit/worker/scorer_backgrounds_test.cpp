// The variant backgrounds the default promoter, chromatin and expression packages ship
// (training/scorer_backgrounds.py) as the worker reads them (worker/manifest/
// variant_background.h): each made for its own scorer, one row per SNV, the statistic names the
// runner's quantiles look up (runner/workflows/variant_quantiles.h), and a malformed file
// refusing the package at load with an error that names the file and what is wrong.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/test_env.h"
#include "worker/manifest/manifest.h"
#include "worker/manifest/variant_background.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

VariantBackground Shipped(const std::string& package) {
  const std::string dir = dnaserve::testing::SourceDir() + "/worker/packages/" + package;
  auto shipped = LoadPackageBackground(dir, Bytes(dir + "/manifest.json"));
  CATCH_REQUIRE(shipped.ok());
  CATCH_REQUIRE(shipped->has_value());
  return **shipped;
}

// A copy of `package` whose background file is `text`; LoadManifest's status.
Status LoadWithBackground(const std::string& package, const std::string& text) {
  const std::string source = dnaserve::testing::SourceDir() + "/worker/packages/" + package;
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-scorer-background");
  const std::string copy = dir + "/" + package;
  fs::copy(source, copy, fs::copy_options::recursive);
  std::ofstream(copy + "/variant_background.tsv", std::ios::binary | std::ios::trunc) << text;
  auto loaded = LoadManifest(copy);
  return loaded.ok() ? Status::Ok() : loaded.status();
}

}  // namespace

CATCH_TEST_CASE("the default promoter chromatin and expression packages ship backgrounds "
                "for their own scorer under the runner's statistic names",
                "[manifest][variant_background]") {
  const VariantBackground promoter = Shipped("promoter-human");
  CATCH_CHECK(promoter.scorer == "promoter");
  CATCH_CHECK(promoter.distance == 1000);  // the scorer's default distance
  CATCH_REQUIRE(promoter.statistics.size() == 1);
  CATCH_CHECK(promoter.statistics[0].first == "abs_delta");

  const VariantBackground chromatin = Shipped("chromatin-human");
  CATCH_CHECK(chromatin.scorer == "chromatin");
  CATCH_CHECK(chromatin.statistics.size() >= 10);
  for (const auto& [name, values] : chromatin.statistics) {
    CATCH_CHECK(StartsWith(name, "abs_delta:"));
  }

  const VariantBackground expression = Shipped("expression-human");
  CATCH_CHECK(expression.scorer == "expression");
  CATCH_CHECK(expression.distance == 4599);  // the scorer's default window
  CATCH_CHECK(expression.statistics.size() == 56);  // one per training context
  for (const auto& [name, values] : expression.statistics) {
    CATCH_CHECK(StartsWith(name, "abs_log2_fold_change:E"));
  }

  for (const VariantBackground* b : {&promoter, &chromatin, &expression}) {
    CATCH_CHECK(b->seed == 2511);
    CATCH_CHECK(StartsWith(b->region, "chr20:"));
    for (const auto& [name, values] : b->statistics) {
      CATCH_CHECK(static_cast<int64_t>(values.size()) == b->snvs);
      CATCH_CHECK(std::is_sorted(values.begin(), values.end()));
      CATCH_CHECK(values.front() >= 0.0);  // absolute deltas
    }
  }
}

CATCH_TEST_CASE("a malformed background refuses the package with a load error naming the file",
                "[manifest][variant_background]") {
  const std::string source = dnaserve::testing::SourceDir() + "/worker/packages/chromatin-human";
  const std::string original = Bytes(source + "/variant_background.tsv");
  CATCH_REQUIRE(LoadWithBackground("chromatin-human", original).ok());

  // A row missing its last field.
  std::string short_row = original;
  short_row.erase(short_row.rfind('\t', short_row.size() - 2));
  short_row += "\n";
  Status status = LoadWithBackground("chromatin-human", short_row);
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.message().find("variant_background 'variant_background.tsv': row") !=
              std::string::npos);
  CATCH_CHECK(status.message().find("fields, the header") != std::string::npos);

  // A value that is not a finite number.
  std::string nan_value = original;
  nan_value.replace(nan_value.rfind('\t') + 1, std::string::npos, "nan\n");
  status = LoadWithBackground("chromatin-human", nan_value);
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.message().find("is not a finite number") != std::string::npos);

  // A header that does not start with "variant".
  status = LoadWithBackground("promoter-human", "snv\tabs_delta\nchr20:1:A:C\t0\n");
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.message().find("the header must be 'variant'") != std::string::npos);

  // An empty file.
  status = LoadWithBackground("expression-human", "");
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.message().find("is empty") != std::string::npos);
}

}  // namespace dnaserve::worker
