#include "worker/windowing/coding_model.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

// An order-1 table: every group flat (ln 1/4), except after a C: at codon position 0 a C is
// likely (0.7), at position 2 unlikely (0.1); the non-coding groups stay flat.
std::string Table() {
  const std::string flat = " -1.386294 -1.386294 -1.386294 -1.386294";
  const std::string likely_c = " -2.302585 -0.356675 -2.302585 -2.302585";    // 0.1 0.7 0.1 0.1
  const std::string unlikely_c = " -1.203973 -2.302585 -1.203973 -1.203973";  // 0.3 0.1 0.3 0.3
  std::string t = "# test table\n\norder 1\n";
  for (const char* context : {"A", "C", "G", "T"}) {
    const bool c = std::string(context) == "C";
    t +=
        std::string(context) + (c ? likely_c : flat) + flat + (c ? unlikely_c : flat) + flat + "\n";
  }
  return t;
}

std::string ErrorOf(const std::string& text) {
  auto parsed = ParseCodingModel(text, "t.tsv");
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

CATCH_TEST_CASE("ParseCodingModel reads a table and names the line of what is wrong",
                "[annotation][coding]") {
  auto model = ParseCodingModel(Table(), "t.tsv");
  CATCH_INFO((model.ok() ? "" : model.status().message()));
  CATCH_REQUIRE(model.ok());
  CATCH_CHECK(model->order == 1);
  CATCH_CHECK(model->noncoding.size() == 16);
  CATCH_CHECK(model->coding[0][1 * 4 + 1] == Approx(std::log(0.7)).margin(1e-6));
  CATCH_CHECK(model->coding[2][1 * 4 + 1] == Approx(std::log(0.1)).margin(1e-6));

  std::string text = Table();
  CATCH_CHECK(Contains(ErrorOf(""), "t.tsv: line 0: no \"order K\" line"));
  CATCH_CHECK(Contains(ErrorOf("order 9\n"), "line 1: expected \"order K\" with K in 1..8"));
  CATCH_CHECK(Contains(ErrorOf("order 1.5\n"), "line 1: expected \"order K\""));
  CATCH_CHECK(Contains(ErrorOf("A -1\n"), "line 1: expected \"order K\""));
  // Contexts out of order, a missing one, one too many, a short line.
  std::string swapped = text;
  swapped.replace(swapped.find("\nG "), 3, "\nT ");
  CATCH_CHECK(Contains(ErrorOf(swapped), "line 6: expected context \"G\""));
  CATCH_CHECK(Contains(ErrorOf(text.substr(0, text.rfind("T "))), "holds 3 contexts, expected 4"));
  CATCH_CHECK(Contains(ErrorOf(text + "A -1\n"), "line 8: more contexts than 4^order"));
  CATCH_CHECK(Contains(ErrorOf("order 1\nA -1.386294\n"), "line 2: expected context \"A\" and 16"));
  // Not numbers, positive, infinite, or a group that is no distribution.
  std::string word = text;
  word.replace(word.find("-1.386294"), 9, "-1.3x6294");
  CATCH_CHECK(Contains(ErrorOf(word), "line 4: log-probabilities must be finite numbers <= 0"));
  std::string positive = text;
  positive.replace(positive.find("-1.386294"), 9, "0.5");
  CATCH_CHECK(Contains(ErrorOf(positive), "finite numbers <= 0"));
  std::string infinite = text;
  infinite.replace(infinite.find("-1.386294"), 9, "-inf");
  CATCH_CHECK(Contains(ErrorOf(infinite), "finite numbers <= 0"));
  std::string unnormalised = text;
  unnormalised.replace(unnormalised.find("-1.386294"), 9, "-2.000000");
  CATCH_CHECK(Contains(ErrorOf(unnormalised),
                       "line 4: a group of four log-probabilities does not "
                       "sum to 1"));

  auto absent = LoadCodingModel("/nonexistent/dir/c.tsv");
  CATCH_REQUIRE_FALSE(absent.ok());
  CATCH_CHECK(Contains(absent.status().message(), "c.tsv: cannot be read"));
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-coding-model");
  testing::WriteFile(dir + "/c.tsv", Table());
  auto loaded = LoadCodingModel(dir + "/c.tsv");
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->coding[0] == model->coding[0]);
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("CodingLogRatios scores each base at each codon position against non-coding",
                "[annotation][coding]") {
  const CodingModel model = *ParseCodingModel(Table(), "t.tsv");
  const auto r = CodingLogRatios(model, "ACCNCcG");
  for (const auto& row : r) CATCH_REQUIRE(row.size() == 7);
  const double likely = std::log(0.7) - std::log(0.25), unlikely = std::log(0.1) - std::log(0.25);
  auto near = [](double a, double b) { return std::abs(a - b) < 1e-5; };
  // Base 0 has no context; base 1 follows an A (flat); base 2 a C.
  for (int q = 0; q < 3; ++q) {
    CATCH_CHECK(r[q][0] == 0.0);
    CATCH_CHECK(near(r[q][1], 0.0));
  }
  CATCH_CHECK(near(r[0][2], likely));
  CATCH_CHECK(near(r[1][2], 0.0));
  CATCH_CHECK(near(r[2][2], unlikely));
  // N scores 0 and breaks the context of the base after it; lower case counts.
  for (int q = 0; q < 3; ++q) CATCH_CHECK((r[q][3] == 0.0 && r[q][4] == 0.0));
  CATCH_CHECK(near(r[0][5], likely));
  // A G after a C: 0.1 at position 0, 0.3 at position 2.
  CATCH_CHECK(near(r[0][6], std::log(0.1) - std::log(0.25)));
  CATCH_CHECK(near(r[2][6], std::log(0.3) - std::log(0.25)));
  CATCH_CHECK(CodingLogRatios(model, "")[0].empty());
}

CATCH_TEST_CASE("BuildCodingTables sums by frame and finds in-frame stops and ATGs",
                "[annotation][coding]") {
  //                       0123456789012345
  const std::string seq = "ATGAAATAGCTGAtaa";
  std::array<std::vector<double>, 3> r;
  for (int q = 0; q < 3; ++q) r[q].assign(seq.size(), static_cast<double>(q + 1));
  const CodingTables t = BuildCodingTables(seq, r);
  const int64_t n = static_cast<int64_t>(seq.size());
  // Frame 0: codon positions 0, 1, 2 repeat from base 0, so three bases sum to 1 + 2 + 3.
  CATCH_CHECK(t.frame_sums[0][3] == 6.0);
  CATCH_CHECK(t.frame_sums[0][4] == 7.0);
  // Frame 1: base 0 is at position 2, base 1 at 0.
  CATCH_CHECK(t.frame_sums[1][1] == 3.0);
  CATCH_CHECK(t.frame_sums[1][2] == 4.0);
  // Stops: TGA at 1 (frame 1), TAG at 6 (frame 0), TGA at 10 and taa at 13 (frame 1).
  CATCH_CHECK(t.next_stop[0][0] == 6);
  CATCH_CHECK(t.next_stop[0][7] == n + 3);
  CATCH_CHECK(t.next_stop[1][0] == 1);
  CATCH_CHECK(t.next_stop[1][2] == 10);
  CATCH_CHECK(t.next_stop[1][11] == 13);
  CATCH_CHECK(t.next_stop[2][0] == n + 3);
  CATCH_CHECK(t.next_stop[0][n] == n + 3);
  CATCH_CHECK(t.previous_stop[0][5] == -3);
  CATCH_CHECK(t.previous_stop[0][15] == 6);
  CATCH_CHECK(t.previous_stop[1][12] == 10);
  CATCH_CHECK(t.previous_stop[1][15] == 13);
  CATCH_CHECK(t.atg[0] == std::vector<int64_t>{0});
  CATCH_CHECK(t.atg[1].empty());
  CATCH_CHECK(t.atg[2].empty());
}

}  // namespace
}  // namespace dnaserve::worker
