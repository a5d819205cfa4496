// The incremental digest must equal the one-shot digest of the same bytes, however they are
// split, and a file fed in chunks must hash as its whole contents.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "common/digest.h"
#include "tests/support/test_env.h"

namespace dnaserve {
namespace {

// Bytes that differ everywhere, so a dropped or repeated chunk changes the digest.
std::string Pattern(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return out;
}

}  // namespace

TEST_CASE("an incremental digest equals the one-shot digest whatever the split",
                "[digest]") {
  const std::string data = Pattern(10000);
  for (auto algorithm : {DigestAlgorithm::kSha256, DigestAlgorithm::kMd5}) {
    IncrementalDigest pieces(algorithm);
    pieces.Update(std::string_view(data).substr(0, 1));
    pieces.Update(std::string_view(data).substr(1, 4095));
    pieces.Update("");
    pieces.Update(std::string_view(data).substr(4096));
    CHECK(pieces.FinishHex() == HexDigest(algorithm, data));
  }
  IncrementalDigest empty(DigestAlgorithm::kSha256);
  CHECK(empty.FinishHex() ==
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a file fed in chunks hashes as its whole contents, and a missing file is an error",
                "[digest]") {
  const std::string dir = testing::MakeTempDir("dnaserve-digest");
  // Larger than one read chunk (1 MiB) and not a multiple of it.
  const std::string data = Pattern((1 << 20) * 2 + 12345);
  std::ofstream(dir + "/weights.bin", std::ios::binary) << data;

  IncrementalDigest digest(DigestAlgorithm::kSha256);
  digest.Update("manifest");
  REQUIRE(digest.UpdateFromFile(dir + "/weights.bin"));
  CHECK(digest.FinishHex() == HexDigest(DigestAlgorithm::kSha256, "manifest" + data));

  IncrementalDigest missing(DigestAlgorithm::kSha256);
  CHECK_FALSE(missing.UpdateFromFile(dir + "/absent.bin"));
}

}  // namespace dnaserve
