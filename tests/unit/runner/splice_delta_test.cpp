// SpliceAI's delta scores on hand-made score vectors (runner/workflows/splice_delta.h): the
// window of +-distance, gains and losses with their offsets, the first position on ties, and
// how an insertion's and a deletion's ALT scores are lined up with REF.
#include <catch2/catch.hpp>

#include <cmath>

#include "runner/workflows/splice_delta.h"
#include "runner/workflows/variant_score_response.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

// A flat track of `background` over offsets [first, last], with `sites` set (offset -> score)
// for the acceptor (or the donor) class.
SpliceTrack Track(int64_t first, int64_t last, std::vector<std::pair<int64_t, float>> acceptor,
                  std::vector<std::pair<int64_t, float>> donor = {}, float background = 0.01f) {
  SpliceTrack t;
  t.first_offset = first;
  t.acceptor.assign(static_cast<size_t>(last - first + 1), background);
  t.donor.assign(static_cast<size_t>(last - first + 1), background);
  for (auto [at, v] : acceptor) t.acceptor[static_cast<size_t>(at - first)] = v;
  for (auto [at, v] : donor) t.donor[static_cast<size_t>(at - first)] = v;
  return t;
}

}  // namespace

TEST_CASE("an SNV that creates an acceptor and removes a donor: gains, losses and offsets") {
  const SpliceTrack ref = Track(-10, 10, {}, {{3, 0.9f}});
  const SpliceTrack alt = Track(-10, 10, {{-4, 0.7f}}, {{3, 0.2f}});
  auto d = ComputeSpliceDelta(ref, alt, 1, 1, 5);
  REQUIRE(d.ok());
  CHECK(d->acceptor_gain.score == Approx(0.69));
  CHECK(d->acceptor_gain.offset == -4);
  CHECK(d->acceptor_gain.ref == Approx(0.01));
  CHECK(d->acceptor_gain.alt == Approx(0.7));
  CHECK(d->donor_loss.score == Approx(0.7));
  CHECK(d->donor_loss.offset == 3);
  CHECK(d->donor_loss.ref == Approx(0.9));
  // Nothing lost for acceptors nor gained for donors: every position ties at 0, the first wins.
  CHECK(d->acceptor_loss.score == 0.0);
  CHECK(d->acceptor_loss.offset == -5);
  CHECK(d->donor_gain.score == 0.0);
  CHECK(d->donor_gain.offset == -5);
  CHECK(d->Max() == Approx(0.7));
}

TEST_CASE("changes outside +-distance are not seen, at the edge they are") {
  const SpliceTrack ref = Track(-10, 10, {});
  SpliceTrack alt = Track(-10, 10, {{6, 0.8f}, {-6, 0.5f}});
  auto inside = ComputeSpliceDelta(ref, alt, 1, 1, 6);
  REQUIRE(inside.ok());
  CHECK(inside->acceptor_gain.offset == 6);
  CHECK(inside->acceptor_gain.score == Approx(0.79));
  auto outside = ComputeSpliceDelta(ref, alt, 1, 1, 5);
  REQUIRE(outside.ok());
  CHECK(outside->acceptor_gain.score == 0.0);
  // distance 0 scores the variant's own base only.
  auto zero = ComputeSpliceDelta(ref, Track(-10, 10, {{0, 0.4f}}), 1, 1, 0);
  REQUIRE(zero.ok());
  CHECK(zero->acceptor_gain.offset == 0);
  CHECK(zero->acceptor_gain.score == Approx(0.39));
}

TEST_CASE("equal gains at two positions report the first, as numpy's argmax does") {
  const SpliceTrack ref = Track(-5, 5, {});
  const SpliceTrack alt = Track(-5, 5, {{-2, 0.6f}, {3, 0.6f}});
  auto d = ComputeSpliceDelta(ref, alt, 1, 1, 5);
  REQUIRE(d.ok());
  CHECK(d->acceptor_gain.offset == -2);
}

TEST_CASE("a deletion: deleted bases count as 0 in ALT, later ALT bases shift back onto REF") {
  // REF ACGTA... with a donor at +2 (deleted) and an acceptor at +6 (kept, ALT index 3).
  const SpliceTrack ref = Track(-10, 10, {{6, 0.8f}}, {{2, 0.9f}});
  // ALT: REF = 4 bases (offsets 0..3), ALT = the anchor: genome offset g >= 4 is ALT g - 3.
  const SpliceTrack alt = Track(-10, 10, {{3, 0.8f}}, {}, 0.01f);
  auto d = ComputeSpliceDelta(ref, alt, 4, 1, 8);
  REQUIRE(d.ok());
  CHECK(d->donor_loss.offset == 2);
  CHECK(d->donor_loss.score == Approx(0.9));
  CHECK(d->donor_loss.alt == 0.0);  // deleted
  // The acceptor moved with the sequence: no gain, no loss at +6.
  CHECK(d->acceptor_loss.score == Approx(0.01));  // a deleted base's background
  CHECK(d->acceptor_loss.offset == 1);
  CHECK(d->acceptor_gain.score == 0.0);
  // Had the ALT not been shifted back, +6 would read ALT index 6 (background): a loss of 0.79.
  CHECK(d->acceptor_loss.score < 0.5);
}

TEST_CASE("a deletion longer than the distance needs no ALT bases after it") {
  const SpliceTrack ref = Track(-3, 3, {}, {{2, 0.5f}});
  const SpliceTrack alt = Track(-3, 0, {});
  auto d = ComputeSpliceDelta(ref, alt, 11, 1, 3);
  REQUIRE(d.ok());
  CHECK(d->donor_loss.offset == 2);
  CHECK(d->donor_loss.score == Approx(0.5));
}

TEST_CASE("an insertion: the anchor and the inserted bases collapse to their maximum") {
  const SpliceTrack ref = Track(-10, 10, {}, {{4, 0.7f}});
  // ALT = anchor + 3 inserted bases (ALT offsets 0..3); genome +4 is ALT offset 7.
  const SpliceTrack alt = Track(-10, 13, {{2, 0.95f}}, {{7, 0.7f}});
  auto d = ComputeSpliceDelta(ref, alt, 1, 4, 5);
  REQUIRE(d.ok());
  CHECK(d->acceptor_gain.offset == 0);  // the inserted base's acceptor, placed at the anchor
  CHECK(d->acceptor_gain.score == Approx(0.94));
  CHECK(d->donor_loss.score == 0.0);  // the donor moved 3 bp with the sequence: not lost
  CHECK(d->donor_gain.score == 0.0);
}

TEST_CASE("tracks too short for the window, and MNVs, are refused as caller bugs") {
  const SpliceTrack ref = Track(-3, 3, {});
  CHECK_FALSE(ComputeSpliceDelta(ref, ref, 1, 1, 4).ok());
  CHECK_FALSE(ComputeSpliceDelta(ref, Track(-3, 3, {}), 1, 3, 3).ok());  // needs ALT to +5
  CHECK(ComputeSpliceDelta(ref, Track(-3, 5, {}), 1, 3, 3).ok());
  CHECK_FALSE(ComputeSpliceDelta(ref, ref, 2, 2, 1).ok());
  CHECK_FALSE(ComputeSpliceDelta(ref, ref, 0, 1, 1).ok());
}

TEST_CASE("scores are published to 4 decimals, never as -0") {
  CHECK(RoundScore(0.123449) == 0.1234);
  CHECK(RoundScore(0.12346) == 0.1235);
  CHECK(RoundScore(-0.00004) == 0.0);
  CHECK_FALSE(std::signbit(RoundScore(-0.00004)));
  CHECK(RoundScore(-0.5) == -0.5);
}
