// The splice scorer's block geometry (runner/workflows/splice_batch.h), without a worker: every
// block covers what ComputeSpliceDelta reads on both strands, keeps the serving window's phase
// (input start modulo 8 on each strand), is the same width for every SNV of one distance,
// depends on the variant alone, and is shared by nearby SNVs of one phase; an ALT block's bases
// sit where its offsets say, starting (+) or ending (-) on the REF block's genome base.
#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <string>

#include "runner/workflows/splice_batch.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

constexpr int64_t kFlank = 1000;

int64_t Mod8(int64_t a) { return ((a % 8) + 8) % 8; }

core::RequestedVariant Variant(int64_t position, std::string ref, std::string alt) {
  core::RequestedVariant v;
  v.assembly = "GRCh37";
  v.contig = "20";
  v.position = position;
  v.ref = std::move(ref);
  v.alt = std::move(alt);
  return v;
}

// A made-up genome: base i is "ACGT"[hash(i)], so any slice can be checked by coordinates.
char GenomeBase(int64_t i) { return "ACGT"[static_cast<size_t>((i * 2654435761LL) >> 7) % 4]; }
std::string Genome(int64_t from, int64_t to) {
  std::string out;
  for (int64_t i = from; i < to; ++i) out += GenomeBase(i);
  return out;
}

}  // namespace

TEST_CASE("splice blocks cover the scored positions on both strands and keep the serving phase",
          "[splice-batch]") {
  std::mt19937_64 rng(25);
  int checked = 0;
  for (int64_t distance : {0, 1, 50, 500, 5000}) {
    for (int i = 0; i < 300; ++i) {
      const int64_t p = 100000 + static_cast<int64_t>(rng() % 100000);
      const int64_t indel = 1 + static_cast<int64_t>(rng() % 50);
      std::string ref(1, 'A'), alt(1, 'C');
      if (i % 3 == 1) alt = std::string(static_cast<size_t>(indel + 1), 'G');  // insertion
      if (i % 3 == 2) ref = std::string(static_cast<size_t>(indel + 1), 'T');  // deletion
      const auto v = Variant(p, ref, alt);
      const SpliceBlock b = SpliceBlockFor(v, distance, kFlank);
      INFO("distance " << distance << " position " << p << " REF " << ref.size() << " ALT "
                       << alt.size() << ": start " << b.start << " scored " << b.scored);
      const auto ref_len = static_cast<int64_t>(ref.size());
      const auto alt_len = static_cast<int64_t>(alt.size());
      // REF: offsets [-distance, distance] of the genome.
      CHECK(b.start - (p - 1) <= -distance);
      CHECK(b.start + b.scored - 1 - (p - 1) >= distance);
      // ALT on both strands: offsets -distance .. alt_last along the ALT sequence.
      const int64_t alt_last = std::max(distance + alt_len - ref_len, alt_len - 1);
      for (bool minus : {false, true}) {
        const int64_t first = AltFirstOffset(v, b, minus);
        CHECK(first <= -distance);
        CHECK(first + b.scored - 1 >= alt_last);
      }
      // The serving window's phase: its + input started at p-1-distance-2F, its - input (read
      // backwards) at p-1+len(REF)+distance+2F.
      CHECK(Mod8(b.start - kFlank) == Mod8(p - 1 - distance - 2 * kFlank));
      CHECK(Mod8(b.start + b.scored + kFlank) == Mod8(p - 1 + ref_len + distance + 2 * kFlank));
      // Within the model's context (15 kb for splice-human) even at the largest distance.
      CHECK(b.width() <= 15000);
      ++checked;
    }
  }
  CHECK(checked == 1500);
}

TEST_CASE("splice blocks: one width per distance for SNVs, the variant alone decides, nearby "
          "SNVs of one phase share the REF block",
          "[splice-batch]") {
  std::set<int64_t> widths;
  std::set<int64_t> starts;
  for (int64_t p = 5000001; p < 5000001 + 64; ++p) {
    const SpliceBlock b = SpliceBlockFor(Variant(p, "A", "G"), 50, kFlank);
    widths.insert(b.width());
    starts.insert(b.start);
    // The same variant gets the same block whatever else is scored (a pure function of it).
    const SpliceBlock again = SpliceBlockFor(Variant(p, "A", "G"), 50, kFlank);
    CHECK(again.start == b.start);
    CHECK(again.scored == b.scored);
  }
  REQUIRE(widths.size() == 1);
  // The smallest the model needs: 2 x 50 + 1 scored bases and two flanks, plus at most 64 bases
  // of grid and phase.
  CHECK(*widths.begin() >= 2 * 50 + 1 + 2 * kFlank);
  CHECK(*widths.begin() <= 2 * 50 + 1 + 2 * kFlank + 64);
  // 64 consecutive SNVs: 8 phases, each in at most 2 grid cells: far fewer blocks than variants.
  CHECK(starts.size() <= 16);
  const SpliceBlock a = SpliceBlockFor(Variant(5000101, "A", "G"), 50, kFlank);
  const SpliceBlock c = SpliceBlockFor(Variant(5000109, "C", "T"), 50, kFlank);
  const SpliceBlock far = SpliceBlockFor(Variant(5003109, "C", "T"), 50, kFlank);
  CHECK(Mod8(a.start) == Mod8(c.start));
  CHECK(far.start != a.start);
}

TEST_CASE("splice ALT blocks: the ALT at its offset, + starting and - ending on the REF block's "
          "bases",
          "[splice-batch]") {
  for (const auto& [ref_len, alt_len] : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 2}, {1, 9}, {1, 51}, {2, 1}, {8, 1}, {51, 1}}) {
    const int64_t p = 700001 + ref_len * 3 + alt_len;
    const std::string ref = Genome(p - 1, p - 1 + ref_len);
    std::string alt = std::string(1, ref[0] == 'A' ? 'C' : 'A');
    if (alt_len > 1) alt = ref.substr(0, 1) + std::string(static_cast<size_t>(alt_len - 1), 'N');
    if (ref_len > 1) alt = ref.substr(0, 1);
    const auto v = Variant(p, ref, alt);
    const SpliceBlock b = SpliceBlockFor(v, 50, kFlank);
    const int64_t x = std::abs(alt_len - ref_len);
    const std::string extended = Genome(b.start - kFlank - x, b.start + b.scored + kFlank + x);
    const std::string ref_block = Genome(b.start - kFlank, b.start + b.scored + kFlank);
    INFO("REF " << ref_len << " ALT " << alt_len);
    for (bool minus : {false, true}) {
      const std::string block = AltBlockInput(v, b, extended, minus);
      REQUIRE(static_cast<int64_t>(block.size()) == b.width());
      // The ALT allele where the offsets put it: offset o is block index flank + o - first.
      const int64_t first = AltFirstOffset(v, b, minus);
      CHECK(block.substr(static_cast<size_t>(kFlank - first), alt.size()) == alt);
      // Upstream bases (offset -1) and downstream ones (genome offset len(REF), ALT offset
      // len(ALT)) are the genome's.
      CHECK(block[static_cast<size_t>(kFlank - first - 1)] == GenomeBase(p - 2));
      CHECK(block[static_cast<size_t>(kFlank - first + alt_len)] ==
            GenomeBase(p - 1 + ref_len));
      if (!minus) CHECK(block.substr(0, 100) == ref_block.substr(0, 100));
      if (minus) CHECK(block.substr(block.size() - 100) == ref_block.substr(ref_block.size() - 100));
    }
  }
}
