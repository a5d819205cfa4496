// The find-genes expression window (runner/workflows/tss_window.h): sense-strand orientation,
// N padding at either end, the exact half-width boundary and shift_coordinates.
#include <catch2/catch.hpp>

#include <string>

#include "common/sequence.h"
#include "runner/workflows/tss_window.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

constexpr int64_t kW = kExpressionWindowBp;      // 9198
constexpr int64_t kHalf = kExpressionHalfWindowBp;  // 4599

// A region whose every position is recognisable: a deterministic non-repeating ACGT string.
std::string Region(int64_t n) {
  static const char kAcgt[] = "ACGT";
  std::string out;
  uint32_t x = 12345;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(kAcgt[(x >> 24) & 3]);
  }
  return out;
}

char Complement(char c) {
  switch (c) {
    case 'A': return 'T';
    case 'C': return 'G';
    case 'G': return 'C';
    case 'T': return 'A';
    default: return 'N';
  }
}

}  // namespace

TEST_CASE("a '+' gene far from the ends: bases tss-4599 up to tss+4599 (exclusive), TSS at index 4599",
          "[tss_window]") {
  const std::string region = Region(30000);
  const int64_t tss = 12000;
  TssWindowPlan plan = PlanTssWindow(30000, 0, tss, '+');
  REQUIRE(plan.usable);
  CHECK(plan.skip_reason.empty());
  CHECK(plan.region_start == tss - kHalf);
  CHECK(plan.region_end == tss + kHalf);
  CHECK(plan.padded_bp() == 0);
  std::string window = CutTssWindow(region, plan, '+');
  REQUIRE(static_cast<int64_t>(window.size()) == kW);
  CHECK(window == region.substr(tss - kHalf, kW));
  CHECK(window[kHalf] == region[tss]);
}

TEST_CASE("a '-' gene is read on its sense strand: the TSS base, complemented, at index 4599",
          "[tss_window]") {
  const std::string region = Region(30000);
  const int64_t tss = 12000;  // plus coordinate of the gene's first transcribed base
  TssWindowPlan plan = PlanTssWindow(30000, 0, tss, '-');
  REQUIRE(plan.usable);
  CHECK(plan.region_start == tss - (kHalf - 1));
  CHECK(plan.region_end == tss + kHalf + 1);
  std::string window = CutTssWindow(region, plan, '-');
  REQUIRE(static_cast<int64_t>(window.size()) == kW);
  CHECK(window == ReverseComplement(region.substr(tss - (kHalf - 1), kW)));
  CHECK(window[kHalf] == Complement(region[tss]));
  // Upstream on the sense strand is downstream on the plus strand.
  CHECK(window[kHalf - 1] == Complement(region[tss + 1]));
  CHECK(window[kHalf + 1] == Complement(region[tss - 1]));
  // Equivalently: the expression task's slice of the reverse-complemented region.
  const std::string sense = ReverseComplement(region);
  const int64_t q = 30000 - 1 - tss;
  CHECK(window == sense.substr(q - kHalf, kW));
}

TEST_CASE("a window past the region's start is padded with N on the correct side",
          "[tss_window]") {
  const std::string region = Region(20000);
  SECTION("'+' gene near the start: N at the 5' end") {
    TssWindowPlan plan = PlanTssWindow(20000, 0, 1000, '+');
    REQUIRE(plan.usable);
    CHECK(plan.pad_5prime == kHalf - 1000);
    CHECK(plan.pad_3prime == 0);
    CHECK(plan.region_start == 0);
    std::string window = CutTssWindow(region, plan, '+');
    REQUIRE(static_cast<int64_t>(window.size()) == kW);
    CHECK(window.substr(0, kHalf - 1000) == std::string(kHalf - 1000, 'N'));
    CHECK(window.substr(kHalf - 1000) == region.substr(0, kW - (kHalf - 1000)));
    CHECK(window[kHalf] == region[1000]);
  }
  SECTION("'-' gene near the start: N at the 3' end of its sense strand") {
    TssWindowPlan plan = PlanTssWindow(20000, 0, 1000, '-');
    REQUIRE(plan.usable);
    CHECK(plan.pad_5prime == 0);
    CHECK(plan.pad_3prime == (kHalf - 1) - 1000);
    std::string window = CutTssWindow(region, plan, '-');
    REQUIRE(static_cast<int64_t>(window.size()) == kW);
    CHECK(window.substr(kW - plan.pad_3prime) == std::string(plan.pad_3prime, 'N'));
    CHECK(window[kHalf] == Complement(region[1000]));
    CHECK(window.find('N') == static_cast<size_t>(kW - plan.pad_3prime));
  }
}

TEST_CASE("a window past the region's end is padded with N on the correct side", "[tss_window]") {
  const std::string region = Region(20000);
  const int64_t tss = 20000 - 1000;
  SECTION("'+' gene near the end: N at the 3' end") {
    TssWindowPlan plan = PlanTssWindow(20000, 0, tss, '+');
    REQUIRE(plan.usable);
    CHECK(plan.pad_5prime == 0);
    CHECK(plan.pad_3prime == tss + kHalf - 20000);
    std::string window = CutTssWindow(region, plan, '+');
    CHECK(window.substr(kW - plan.pad_3prime) == std::string(plan.pad_3prime, 'N'));
    CHECK(window[kHalf] == region[tss]);
  }
  SECTION("'-' gene near the end: N at the 5' end of its sense strand") {
    TssWindowPlan plan = PlanTssWindow(20000, 0, tss, '-');
    REQUIRE(plan.usable);
    CHECK(plan.pad_5prime == tss + kHalf + 1 - 20000);
    CHECK(plan.pad_3prime == 0);
    std::string window = CutTssWindow(region, plan, '-');
    CHECK(window.substr(0, plan.pad_5prime) == std::string(plan.pad_5prime, 'N'));
    CHECK(window[kHalf] == Complement(region[tss]));
  }
}

// One side can overhang by at most 4,599 bp (the '+' window holds 4,599 bases before its TSS and
// 4,598 after; the '-' window the reverse), so a gene is skipped only when both sides overhang
// by more than 4,599 bp together: in a region shorter than 4,599 bp.
TEST_CASE("exactly half the window of N is padded, one base more and the gene is skipped",
          "[tss_window]") {
  SECTION("one-sided overhangs stay within half the window") {
    CHECK(PlanTssWindow(20000, 0, 0, '+').pad_5prime == kHalf);
    CHECK(PlanTssWindow(20000, 0, 19999, '-').pad_5prime == kHalf);
    CHECK(PlanTssWindow(20000, 0, 19999, '+').pad_3prime == kHalf - 1);
    CHECK(PlanTssWindow(20000, 0, 0, '-').pad_3prime == kHalf - 1);
    for (int64_t tss : {int64_t{0}, int64_t{19999}}) {
      for (char strand : {'+', '-'}) {
        CHECK(PlanTssWindow(20000, 0, tss, strand).usable);
      }
    }
  }
  SECTION("a region of exactly 4,599 bp: every TSS gets exactly 4,599 bp of N") {
    const std::string region = Region(kHalf);
    for (int64_t tss : {int64_t{0}, int64_t{2000}, kHalf - 1}) {
      for (char strand : {'+', '-'}) {
        INFO("tss " << tss << " strand " << strand);
        TssWindowPlan plan = PlanTssWindow(kHalf, 0, tss, strand);
        REQUIRE(plan.usable);
        CHECK(plan.padded_bp() == kHalf);
        CHECK(plan.region_start == 0);
        CHECK(plan.region_end == kHalf);
        std::string window = CutTssWindow(region, plan, strand);
        REQUIRE(static_cast<int64_t>(window.size()) == kW);
        std::string bases = window.substr(plan.pad_5prime, kHalf);
        CHECK(bases == (strand == '+' ? region : ReverseComplement(region)));
        CHECK(window[kHalf] == (strand == '+' ? region[tss] : Complement(region[tss])));
      }
    }
    TssWindowPlan plan = PlanTssWindow(kHalf, 0, 2000, '+');
    CHECK(plan.pad_5prime == kHalf - 2000);
    CHECK(plan.pad_3prime == 2000);
  }
  SECTION("a region of 4,598 bp: every gene would need 4,600 bp and is skipped") {
    for (int64_t tss : {int64_t{0}, int64_t{2299}, kHalf - 2}) {
      for (char strand : {'+', '-'}) {
        TssWindowPlan plan = PlanTssWindow(kHalf - 1, 0, tss, strand);
        CHECK_FALSE(plan.usable);
        CHECK(plan.padded_bp() == kHalf + 1);
        CHECK(plan.skip_reason.find("4600 bp of N") != std::string::npos);
        CHECK(plan.skip_reason.find("at most 4599") != std::string::npos);
      }
    }
  }
}

TEST_CASE("shift_coordinates: the reported TSS is rebased to the submitted sequence",
          "[tss_window]") {
  const std::string region = Region(30000);
  const int64_t offset = 1'000'000;  // sequence_name chr1:1,000,001-1,030,000
  TssWindowPlan shifted = PlanTssWindow(30000, offset, offset + 12000, '-');
  TssWindowPlan plain = PlanTssWindow(30000, 0, 12000, '-');
  REQUIRE(shifted.usable);
  CHECK(shifted.region_start == plain.region_start);
  CHECK(shifted.region_end == plain.region_end);
  CHECK(CutTssWindow(region, shifted, '-') == CutTssWindow(region, plain, '-'));
  // Near the region's start in genome coordinates, padding is measured against the region.
  TssWindowPlan edge = PlanTssWindow(30000, offset, offset + 10, '+');
  REQUIRE(edge.usable);
  CHECK(edge.pad_5prime == kHalf - 10);
}

TEST_CASE("a TSS outside the region or without a strand is skipped with its reason",
          "[tss_window]") {
  CHECK_FALSE(PlanTssWindow(20000, 0, 20000, '+').usable);
  CHECK_FALSE(PlanTssWindow(20000, 0, -1, '+').usable);
  // Unshifted coordinates given while the annotation was shifted: outside the region.
  TssWindowPlan wrong = PlanTssWindow(20000, 500000, 12000, '+');
  CHECK_FALSE(wrong.usable);
  CHECK(wrong.skip_reason.find("outside") != std::string::npos);
  TssWindowPlan no_strand = PlanTssWindow(20000, 0, 12000, '.');
  CHECK_FALSE(no_strand.usable);
  CHECK(no_strand.skip_reason.find("strand") != std::string::npos);
}
