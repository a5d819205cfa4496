// Object-storage grants: the forms the keys file accepts, and matching that is literal and exact
// on path segments (a neighbouring prefix, a dot segment, %-escapes or another case never widen a
// grant), and the one refusal message whatever the reason.
#include "common/s3_grants.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace dnaserve {
namespace {

std::vector<S3Grant> Grants(const std::vector<std::string>& texts) {
  std::vector<S3Grant> out;
  for (const auto& t : texts) {
    auto g = ParseS3Grant(t);
    REQUIRE(g.ok());
    out.push_back(*g);
  }
  return out;
}

TEST_CASE("grants: the accepted forms and their parts", "[grants]") {
  auto whole = ParseS3Grant("s3://cohort-data/");
  REQUIRE(whole.ok());
  CHECK(whole->bucket == "cohort-data");
  CHECK(whole->prefix.empty());
  CHECK(whole->ToString() == "s3://cohort-data/");
  auto nested = ParseS3Grant("s3://cohort.data-2/alice/runs 2026/");
  REQUIRE(nested.ok());
  CHECK(nested->bucket == "cohort.data-2");
  CHECK(nested->prefix == "alice/runs 2026/");
  // Literal: '%' and upper case in a prefix are kept as written.
  CHECK(ParseS3Grant("s3://bkt/Alice%20B/")->prefix == "Alice%20B/");
}

TEST_CASE("grants: malformed ones are refused with the rule", "[grants]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "must have the form"},
      {"S3://bkt/", "must have the form"},
      {"s3:/bkt/", "must have the form"},
      {"s3://bkt", "must end with '/'"},
      {"s3://bkt/alice", "must end with '/'"},
      {"s3:///alice/", "not a valid S3 bucket name"},
      {"s3://BKT/", "not a valid S3 bucket name"},
      {"s3://b/", "not a valid S3 bucket name"},
      {"s3://192.168.1.1/", "not a valid S3 bucket name"},
      {"s3://bkt//", "empty, '.' or '..'"},
      {"s3://bkt/a//b/", "empty, '.' or '..'"},
      {"s3://bkt/./", "empty, '.' or '..'"},
      {"s3://bkt/a/../", "empty, '.' or '..'"},
      {"s3://bkt/a\nb/", "control character"},
  };
  for (const auto& [text, says] : bad) {
    CAPTURE(text);
    auto g = ParseS3Grant(text);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(g.status().message(), Catch::Contains(says));
  }
}

TEST_CASE("grants: matching is exact on segments, literal and case-sensitive", "[grants]") {
  const auto alice = Grants({"s3://shared/alice/"});
  CHECK(S3GrantsCoverUri(alice, "s3://shared/alice/x.vcf"));
  CHECK(S3GrantsCoverUri(alice, "s3://shared/alice/deep/er/x.vcf"));
  // S3 keeps a doubled slash literally: still under alice/.
  CHECK(S3GrantsCoverUri(alice, "s3://shared/alice//x.vcf"));
  // A neighbour sharing the characters but not the segment.
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice-evil/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alicex.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice"));
  // Other buckets, including one that starts alike; another case.
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared2/alice/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://SHARED/alice/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/Alice/x.vcf"));
  // Dot segments are never covered, wherever they are.
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice/../bob/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice/./x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice/x/.."));
  CHECK(S3GrantsCoverUri(alice, "s3://shared/alice/..x/a.vcf"));  // a name, not a dot segment
  // %-escapes are literal characters of the key, never decoded into '/' or '..'.
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared/alice%2Fx.vcf"));
  CHECK(S3GrantsCoverUri(alice, "s3://shared/alice/%2e%2e/bob/x.vcf"));  // the key is literal
  // Not a URI at all.
  CHECK_FALSE(S3GrantsCoverUri(alice, "https://shared/alice/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(alice, "s3://shared"));
  CHECK_FALSE(S3GrantsCoverUri({}, "s3://shared/alice/x.vcf"));

  const auto whole = Grants({"s3://shared/"});
  CHECK(S3GrantsCoverUri(whole, "s3://shared/anything/at/all.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(whole, "s3://shared/../other/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(whole, "s3://shared-other/x.vcf"));
  const auto several = Grants({"s3://one-bkt/a/", "s3://two-bkt/b/c/"});
  CHECK(S3GrantsCoverUri(several, "s3://two-bkt/b/c/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(several, "s3://two-bkt/b/x.vcf"));
  CHECK_FALSE(S3GrantsCoverUri(several, "s3://one-bkt/b/c/x.vcf"));
}

TEST_CASE("grants: a prefix is covered when every object directly in it is", "[grants]") {
  const auto out = Grants({"s3://shared/alice/out/"});
  CHECK(S3ParentPrefix("s3://shared/alice/out/x.vcf") == "s3://shared/alice/out/");
  CHECK(S3ParentPrefix("s3://shared/x.vcf") == "s3://shared/");
  CHECK(S3GrantsCoverPrefix(out, "s3://shared/alice/out/"));
  CHECK(S3GrantsCoverPrefix(out, "s3://shared/alice/out/sub/"));
  CHECK_FALSE(S3GrantsCoverPrefix(out, "s3://shared/alice/"));
  CHECK_FALSE(S3GrantsCoverPrefix(out, "s3://shared/alice/out-x/"));
  CHECK_FALSE(S3GrantsCoverPrefix(out, "s3://shared/alice/out/../"));
  CHECK_FALSE(S3GrantsCoverPrefix(out, "s3://shared/alice/out/x.vcf"));  // not a prefix
  CHECK(S3GrantsCoverPrefix(Grants({"s3://shared/"}), "s3://shared/"));
}

TEST_CASE("grants: one refusal whatever the reason, only the URI in it", "[grants]") {
  const std::string a = S3ObjectUnreadable("s3://bkt/a/x.vcf").message();
  const std::string b = S3ObjectUnreadable("s3://other/b.vcf").message();
  CHECK(S3ObjectUnreadable("s3://bkt/a/x.vcf").code() == ErrorCode::kBadRequest);
  CHECK(a.substr(0, a.find("s3://")) == b.substr(0, b.find("s3://")));
  CHECK(a.substr(a.find(".vcf") + 4) == b.substr(b.find(".vcf") + 4));
  CHECK(S3PrefixUnwritable("s3://bkt/a/").code() == ErrorCode::kBadRequest);
  CHECK_THAT(S3PrefixUnwritable("s3://bkt/a/").message(), Catch::Contains("s3://bkt/a/"));
}

TEST_CASE("grants: the queued form round-trips and a damaged one grants less", "[grants]") {
  const auto grants = Grants({"s3://one-bkt/", "s3://two-bkt/x/y/"});
  const std::string text = EncodeS3Grants(grants);
  CHECK(text == "s3://one-bkt/\ns3://two-bkt/x/y/");
  const auto back = DecodeS3Grants(text);
  REQUIRE(back.size() == 2);
  CHECK(back[1].prefix == "x/y/");
  CHECK(DecodeS3Grants("").empty());
  const auto damaged = DecodeS3Grants("s3://one-bkt/\ns3://two-bkt/x/y\ngarbage");
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0].bucket == "one-bkt");
}

}  // namespace
}  // namespace dnaserve
