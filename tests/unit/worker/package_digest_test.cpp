// What variant scoring needs from a worker (runner/workflows/variant_scoring.h): the package
// digest ListModels publishes (sha256 of manifest.json then the weights, read once at load), and
// RESULT_FORMAT_SCORES, the structured result without any text rendering.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/digest.h"
#include "tests/support/test_env.h"
#include "worker/manifest/manifest.h"
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

CATCH_TEST_CASE("a loaded package carries the sha256 of its manifest and weights, which moves "
                "with either",
                "[manifest][digest]") {
  const std::string source = dnaserve::testing::SourceDir() + "/worker/packages/splice-human";
  CATCH_REQUIRE(fs::is_directory(source));
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-package-digest");
  const std::string package = dir + "/splice-human";
  fs::copy(source, package, fs::copy_options::recursive);

  auto loaded = LoadManifest(package);
  CATCH_REQUIRE(loaded.ok());
  const std::string expected =
      "sha256:" + HexDigest(DigestAlgorithm::kSha256, Bytes(package + "/manifest.json") +
                                                          Bytes(package + "/model.pt"));
  CATCH_CHECK(loaded->package_digest == expected);
  CATCH_CHECK(loaded->package_digest.size() == 7 + 64);
  CATCH_CHECK(loaded->flank_bp == 1000);

  // One byte more in the weights: another package, another digest.
  std::ofstream(package + "/model.pt", std::ios::app | std::ios::binary) << '\0';
  auto changed = LoadManifest(package);
  CATCH_REQUIRE(changed.ok());
  CATCH_CHECK(changed->package_digest != loaded->package_digest);
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
