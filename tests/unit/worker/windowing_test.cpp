#include <catch2/catch.hpp>

#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/chromatin_features.h"
#include "worker/windowing/promoter_regions.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {
namespace {

std::vector<int64_t> Starts(const std::vector<WindowSpan>& windows) {
  std::vector<int64_t> out;
  for (const auto& w : windows) out.push_back(w.start);
  return out;
}

CATCH_TEST_CASE("description bytes: byte + 1, truncated", "[tokenizer]") {
  CATCH_CHECK(EncodeTextBytes("Ab", 10) == std::vector<int64_t>{'A' + 1, 'b' + 1});
  CATCH_CHECK(EncodeTextBytes("abcdef", 3).size() == 3);
  CATCH_CHECK(EncodeTextBytes("\xc3\xa9", 10) == std::vector<int64_t>{0xc3 + 1, 0xa9 + 1});
}

CATCH_TEST_CASE("PlanWindows: overlapping windows, the last one reaches the end", "[windowing]") {
  // Promoter geometry: 2,000 bp every 1,000 bp.
  auto w = PlanWindows(10000, 2000, 1000);
  CATCH_REQUIRE(w.size() == 9);
  CATCH_CHECK(w.front().start == 0);
  CATCH_CHECK(w.back().start == 8000);
  CATCH_CHECK(w.back().end == 10000);
  CATCH_CHECK(w.back().padded_bp == 0);

  w = PlanWindows(10001, 2000, 1000);
  CATCH_REQUIRE(w.size() == 10);
  CATCH_CHECK(w.back().start == 9000);
  CATCH_CHECK(w.back().end == 10001);
  CATCH_CHECK(w.back().padded_bp == 999);
  for (size_t i = 0; i + 1 < w.size(); ++i) CATCH_CHECK(w[i].padded_bp == 0);

  // Chromatin geometry: 1,000 bp every 200 bp.
  w = PlanWindows(2500, 1000, 200);
  CATCH_CHECK(Starts(w) == std::vector<int64_t>{0, 200, 400, 600, 800, 1000, 1200, 1400, 1600});
  CATCH_CHECK(w.back().end == 2500);
  CATCH_CHECK(w.back().padded_bp == 100);
  CATCH_CHECK(w[7].end == 2400);

  // Shorter than the context: one window, padded.
  w = PlanWindows(300, 2000, 1000);
  CATCH_REQUIRE(w.size() == 1);
  CATCH_CHECK(w[0].end == 300);
  CATCH_CHECK(w[0].padded_bp == 1700);
  CATCH_CHECK(PlanWindows(1000, 1000, 200).size() == 1);
  CATCH_CHECK(PlanWindows(1001, 1000, 200).size() == 2);
}

CATCH_TEST_CASE("PlanWindows: non-overlapping windows pad only the last", "[windowing]") {
  auto w = PlanWindows(500, 249, 249);  // enhancer
  CATCH_CHECK(Starts(w) == std::vector<int64_t>{0, 249, 498});
  CATCH_CHECK(w[2].end == 500);
  CATCH_CHECK(w[2].padded_bp == 247);
  CATCH_CHECK(PlanWindows(498, 249, 249).size() == 2);

  w = PlanWindows(30000, 15000, 15000);  // splice
  CATCH_CHECK(w.size() == 2);
  CATCH_CHECK(w[1].padded_bp == 0);
  w = PlanWindows(30001, 15000, 15000);
  CATCH_CHECK(w.size() == 3);
  CATCH_CHECK(w[2].padded_bp == 14999);

  CATCH_CHECK(PlanWindows(0, 100, 100).empty());
  CATCH_CHECK(PlanWindows(10, 100, 200).empty());  // stride > context is refused
}

CATCH_TEST_CASE("PaddedWindow pads with N to the context", "[windowing]") {
  const std::string seq = "ACGTACGTAC";
  auto w = PlanWindows(10, 4, 4);
  CATCH_REQUIRE(w.size() == 3);
  CATCH_CHECK(PaddedWindow(seq, w[0], 4) == "ACGT");
  CATCH_CHECK(PaddedWindow(seq, w[2], 4) == "ACNN");
  CATCH_CHECK(PaddedWindow("ACG", PlanWindows(3, 8, 8)[0], 8) == "ACGNNNNN");
}

CATCH_TEST_CASE("OwnedSpans tile the sequence without overlap", "[windowing]") {
  //   windows (1000 bp, step 200) over 2,500 bp; each owns its central 200 bp:
  //   w0 [0, 600) w1 [600, 800) ... w7 [1800, 2000) w8 [2000, 2500)
  auto w = PlanWindows(2500, 1000, 200);
  auto owned = OwnedSpans(w, 1000, 200, 2500);
  CATCH_REQUIRE(owned.size() == w.size());
  CATCH_CHECK(owned[0] == Span{0, 600});
  CATCH_CHECK(owned[1] == Span{600, 800});
  CATCH_CHECK(owned[7] == Span{1800, 2000});
  CATCH_CHECK(owned[8] == Span{2000, 2500});
  for (size_t i = 0; i + 1 < owned.size(); ++i) CATCH_CHECK(owned[i].end == owned[i + 1].start);

  auto single = OwnedSpans(PlanWindows(300, 1000, 200), 1000, 200, 300);
  CATCH_REQUIRE(single.size() == 1);
  CATCH_CHECK(single[0] == Span{0, 300});

  auto tiles = OwnedSpans(PlanWindows(500, 249, 249), 249, 249, 500);
  CATCH_CHECK(tiles[0] == Span{0, 249});
  CATCH_CHECK(tiles[1] == Span{249, 498});
  CATCH_CHECK(tiles[2] == Span{498, 500});
}

CATCH_TEST_CASE("Batches split windows into consecutive groups", "[windowing]") {
  auto b = Batches(10, 4);
  CATCH_REQUIRE(b.size() == 3);
  CATCH_CHECK(b[0] == std::pair<int, int>{0, 4});
  CATCH_CHECK(b[2] == std::pair<int, int>{8, 10});
  CATCH_CHECK(Batches(3, 8).size() == 1);
  CATCH_CHECK(Batches(3, 0).size() == 3);  // a batch size below 1 means one at a time
}

CATCH_TEST_CASE("promoter regions merge consecutive windows at or above the threshold",
                "[windowing][promoter]") {
  auto w = PlanWindows(6500, 2000, 1000);  // starts 0..5000, last [5000, 6500)
  CATCH_REQUIRE(w.size() == 6);
  std::vector<double> scores = {0.9, 0.5, 0.2, 0.7, 0.8, 0.95};
  auto regions = MergePromoterRegions(w, scores, 0.5);
  CATCH_REQUIRE(regions.size() == 2);
  CATCH_CHECK(regions[0].start == 0);
  CATCH_CHECK(regions[0].end == 3000);  // windows 0 and 1 (0.5 counts: >=)
  CATCH_CHECK(regions[0].score == 0.9);
  CATCH_CHECK(regions[1].start == 3000);
  CATCH_CHECK(regions[1].end == 6500);  // clipped end of the padded last window
  CATCH_CHECK(regions[1].score == 0.95);
  CATCH_CHECK(MergePromoterRegions(w, scores, 0.99).empty());
  CATCH_CHECK(MergePromoterRegions(w, scores, 0.0).size() == 1);
}

CATCH_TEST_CASE("chromatin categories come from the assay field", "[windowing][chromatin]") {
  CATCH_CHECK(ChromatinCategory("8988T|DNase|None") == "DNase");
  CATCH_CHECK(ChromatinCategory("GM12878|CTCF|None") == "CTCF");
  CATCH_CHECK(ChromatinCategory("K562|CTCFL|None") == "Other");
  CATCH_CHECK(ChromatinCategory("HeLa-S3|Pol2|None") == "Pol2");
  CATCH_CHECK(ChromatinCategory("K562|Pol2(phosphoS2)|None") == "Pol2");
  CATCH_CHECK(ChromatinCategory("GM12878|Pol2-4H8|None") == "Pol2");
  CATCH_CHECK(ChromatinCategory("K562|Pol3|None") == "Other");
  CATCH_CHECK(ChromatinCategory("K562|c-Myc|IFNa6h") == "c-Myc");
  CATCH_CHECK(ChromatinCategory("Osteoblasts|H3K27ac|None") == "H3K27ac");
  CATCH_CHECK(ChromatinCategory("Osteoblasts|H3K27me3|None") == "H3K27me3");
  CATCH_CHECK(ChromatinCategory("Osteoblasts|H3K4me1|None") == "H3K4me1");
  CATCH_CHECK(ChromatinCategory("Osteoblasts|H3K4me3|None") == "Other");
  CATCH_CHECK(ChromatinCategory("feature_3|unknown|None") == "Other");
  CATCH_CHECK(ChromatinCategory("no-separators") == "Other");
  CATCH_CHECK(ChromatinCategory("cell|DNase") == "DNase");

  const float p[] = {0.2f, 0.5f, 0.51f, 0.9f};
  CATCH_CHECK(FeaturesAbove(p, 4, 0.5) == std::vector<int>{2, 3});  // strictly above
  CATCH_CHECK(FeaturesAbove(p, 4, 0.95).empty());
}

}  // namespace
}  // namespace dnaserve::worker
