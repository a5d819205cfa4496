// What variant scoring needs from a worker (runner/workflows/variant_scoring.h): the package
// digest ListModels publishes (sha256 of manifest.json, the weights, then the variant background
// when the package ships one, read once at load), the background itself (the quantiles;
// worker/manifest/variant_background.h), and RESULT_FORMAT_SCORES, the structured result
// without any text rendering.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/digest.h"
#include "tests/support/test_env.h"
#include "worker/manifest/manifest.h"
#include "worker/manifest/variant_background.h"
#include "worker/service/model_card_files.h"
#include "worker/tasks/reply_parts.h"

namespace dnaserve::worker {
namespace {

namespace fs = std::filesystem;

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

CATCH_TEST_CASE("a loaded package carries the sha256 of its manifest, weights and variant "
                "background, which moves with any of them",
                "[manifest][digest]") {
  const std::string source = dnaserve::testing::SourceDir() + "/worker/packages/splice-human";
  CATCH_REQUIRE(fs::is_directory(source));
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-package-digest");
  const std::string package = dir + "/splice-human";
  fs::copy(source, package, fs::copy_options::recursive);

  auto loaded = LoadManifest(package);
  CATCH_REQUIRE(loaded.ok());
  auto shipped = LoadPackageBackground(package, Bytes(package + "/manifest.json"));
  CATCH_REQUIRE(shipped.ok());
  CATCH_REQUIRE(shipped->has_value());
  const std::string background = package + "/" + (*shipped)->file;
  const std::string expected =
      "sha256:" + HexDigest(DigestAlgorithm::kSha256, Bytes(package + "/manifest.json") +
                                                          Bytes(package + "/model.pt") +
                                                          Bytes(background));
  CATCH_CHECK(loaded->package_digest == expected);
  CATCH_CHECK(loaded->package_digest.size() == 7 + 64);
  CATCH_CHECK(loaded->flank_bp == 1000);

  // Another background (one value rewritten): another package, another digest.
  std::string text = Bytes(background);
  const size_t last_tab = text.rfind('\t');
  text.replace(last_tab + 1, 6, "0.9999");
  std::ofstream(background, std::ios::binary | std::ios::trunc) << text;
  auto rewritten = LoadManifest(package);
  CATCH_REQUIRE(rewritten.ok());
  CATCH_CHECK(rewritten->package_digest != loaded->package_digest);

  // One byte more in the weights: another package, another digest.
  std::ofstream(package + "/model.pt", std::ios::app | std::ios::binary) << '\0';
  auto changed = LoadManifest(package);
  CATCH_REQUIRE(changed.ok());
  CATCH_CHECK(changed->package_digest != loaded->package_digest);
}

CATCH_TEST_CASE("the shipped splice background: its manifest entry, its values sorted per "
                "statistic, and a broken file refuses the package",
                "[manifest][variant_background]") {
  const std::string source = dnaserve::testing::SourceDir() + "/worker/packages/splice-human";
  auto shipped = LoadPackageBackground(source, Bytes(source + "/manifest.json"));
  CATCH_REQUIRE(shipped.ok());
  CATCH_REQUIRE(shipped->has_value());
  const VariantBackground& b = **shipped;
  CATCH_CHECK(b.scorer == "splice");
  CATCH_CHECK(b.snvs >= 1000);
  CATCH_CHECK(b.distance == 50);
  CATCH_REQUIRE(b.statistics.size() == 5);
  CATCH_CHECK(b.statistics.back().first == "DS_max");
  for (const auto& [name, values] : b.statistics) {
    CATCH_CHECK(static_cast<int64_t>(values.size()) == b.snvs);
    CATCH_CHECK(std::is_sorted(values.begin(), values.end()));
  }

  // A row short of the manifest's count, a non-number, an unknown entry field: each refused.
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-package-background");
  const std::string package = dir + "/splice-human";
  fs::copy(source, package, fs::copy_options::recursive);
  const std::string file = package + "/" + b.file;
  const std::string original = Bytes(file);
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << original.substr(0, original.rfind('\n', original.size() - 2) + 1);
  auto short_file = LoadManifest(package);
  CATCH_REQUIRE_FALSE(short_file.ok());
  CATCH_CHECK(short_file.status().message().find("rows; the manifest says snvs") !=
              std::string::npos);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << original << "chr20:1:A:C\tx\t0\t0\t0\t0\n";
  auto not_number = LoadManifest(package);
  CATCH_REQUIRE_FALSE(not_number.ok());
  CATCH_CHECK(not_number.status().message().find("is not a finite number") != std::string::npos);

  std::string manifest = Bytes(source + "/manifest.json");
  const size_t at = manifest.find("\"seed\": " + std::to_string(b.seed));
  CATCH_REQUIRE(at != std::string::npos);
  manifest.insert(at, "\"colour\": \"red\", ");
  auto unknown = ParseManifest(manifest, "splice-human");
  CATCH_REQUIRE_FALSE(unknown.ok());
  CATCH_CHECK(unknown.status().message().find("unknown field 'variant_background.colour'") !=
              std::string::npos);
}

CATCH_TEST_CASE("the worker serves a package's background as variant_background.json, and "
                "not_found for a package without one",
                "[manifest][variant_background]") {
  const std::string packages = dnaserve::testing::SourceDir() + "/worker/packages";
  auto splice = LoadManifest(packages + "/splice-human");
  CATCH_REQUIRE(splice.ok());
  auto served = ReadCardFile(*splice, kVariantBackgroundCardFile);
  CATCH_REQUIRE(served.ok());
  CATCH_CHECK(served->content_type == "application/json");
  rapidjson::Document doc;
  doc.Parse(served->content.c_str());
  CATCH_REQUIRE(doc.IsObject());
  CATCH_CHECK(std::string(doc["package_digest"].GetString()) == splice->package_digest);
  CATCH_CHECK(doc["snvs"].GetInt64() == 1000);
  const auto& ds_max = doc["statistics"]["DS_max"];
  CATCH_REQUIRE(ds_max.IsArray());
  CATCH_CHECK(ds_max.Size() == 1000);
  CATCH_CHECK(ds_max[ds_max.Size() - 1].GetDouble() >= ds_max[0].GetDouble());

  auto promoter = LoadManifest(packages + "/promoter-fly");  // ships none
  CATCH_REQUIRE(promoter.ok());
  auto none = ReadCardFile(*promoter, kVariantBackgroundCardFile);
  CATCH_REQUIRE_FALSE(none.ok());
  CATCH_CHECK(none.status().code() == ErrorCode::kNotFound);
}

CATCH_TEST_CASE("RESULT_FORMAT_SCORES asks for the structured result and nothing else",
                "[result_format]") {
  v1::PredictRequest request;
  request.set_result_format(v1::RESULT_FORMAT_SCORES);
  const ReplyParts parts = ReplyParts::For(request);
  CATCH_CHECK(parts.Structured());
  CATCH_CHECK_FALSE(parts.Tracks());
  CATCH_CHECK_FALSE(parts.PromoterTrackCopy());
  for (const char* format : {"bed", "bedgraph", "gff3"}) CATCH_CHECK_FALSE(parts.Format(format));
  CATCH_CHECK(CheckResultFormat(Task::kSplice, request).ok());
  // A value past the ones this worker knows is still refused.
  request.set_result_format(static_cast<v1::ResultFormat>(99));
  CATCH_CHECK_FALSE(CheckResultFormat(Task::kSplice, request).ok());
}

}  // namespace dnaserve::worker
