#include "worker/windowing/splice_signal.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

const std::string kFlat = " -1.386294 -1.386294 -1.386294 -1.386294";
// A G is likely (0.7) whatever the base before it.
const std::string kLikelyG = " -2.302585 -2.302585 -0.356675 -2.302585";

// A row of 16 site then 16 non-site log-probabilities: `site_group` for every previous base at
// true sites (or only after a T when after_t_only), flat at non-sites.
std::string Row(int offset, const std::string& site_group, bool after_t_only = false) {
  std::string row = std::to_string(offset);
  for (int previous = 0; previous < 4; ++previous) {
    row += (!after_t_only || previous == 3) ? site_group : kFlat;
  }
  for (int previous = 0; previous < 4; ++previous) row += kFlat;
  return row + "\n";
}

// Donor window: offsets 0, 1 (a G at 0 is likely at true sites); acceptor window: offset -1,
// where a G after a T is likely.
std::string Table() {
  return "# test table\n\ndonor 0 2\n" + Row(0, kLikelyG) + Row(1, kFlat) + "acceptor -1 1\n" +
         Row(-1, kLikelyG, /*after_t_only=*/true);
}

std::string ErrorOf(const std::string& text) {
  auto parsed = ParseSpliceSignal(text, "s.tsv");
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

CATCH_TEST_CASE("ParseSpliceSignal reads both windows and names the line of what is wrong",
                "[annotation][splice_signal]") {
  auto model = ParseSpliceSignal(Table(), "s.tsv");
  CATCH_INFO((model.ok() ? "" : model.status().message()));
  CATCH_REQUIRE(model.ok());
  CATCH_CHECK(model->donor.first == 0);
  CATCH_CHECK(model->donor.site.size() == 2);
  CATCH_CHECK(model->acceptor.first == -1);
  CATCH_CHECK(model->acceptor.site.size() == 1);
  CATCH_CHECK(model->donor.site[0][1 * 4 + 2] == Approx(std::log(0.7)).margin(1e-6));
  CATCH_CHECK(model->acceptor.site[0][0 * 4 + 2] == Approx(std::log(0.25)).margin(1e-6));
  CATCH_CHECK(model->acceptor.site[0][3 * 4 + 2] == Approx(std::log(0.7)).margin(1e-6));

  const std::string text = Table();
  CATCH_CHECK(Contains(ErrorOf(""), "s.tsv: line 0: needs a donor and an acceptor section"));
  CATCH_CHECK(Contains(ErrorOf("acceptor 0 1\n"), "line 1: expected \"donor FIRST LENGTH\""));
  CATCH_CHECK(Contains(ErrorOf("donor 0 0\n"), "line 1: expected \"donor FIRST LENGTH\""));
  CATCH_CHECK(Contains(ErrorOf("donor 0 65\n"), "LENGTH 1..64"));
  CATCH_CHECK(Contains(ErrorOf("donor -65 2\n"), "|FIRST| <= 64"));
  CATCH_CHECK(Contains(ErrorOf("donor 0.5 2\n"), "expected \"donor FIRST LENGTH\""));
  // Only a donor; an acceptor short of rows; text after the acceptor.
  CATCH_CHECK(Contains(ErrorOf(text.substr(0, text.find("acceptor"))),
                       "needs a donor and an acceptor section"));
  CATCH_CHECK(
      Contains(ErrorOf(text.substr(0, text.find("acceptor")) + "acceptor -1 2\n" + Row(-1, kFlat)),
               "the acceptor section holds 1 rows, expected 2"));
  CATCH_CHECK(Contains(ErrorOf(text + Row(0, kFlat)), "line 8: text after the acceptor section"));
  // A wrong offset, a short row.
  std::string offset = text;
  offset.replace(offset.find("\n1 "), 3, "\n2 ");
  CATCH_CHECK(Contains(ErrorOf(offset), "line 5: expected offset 1 and 32 log-probabilities"));
  CATCH_CHECK(Contains(ErrorOf("donor 0 1\n0 -1.386294\n"), "line 2: expected offset 0 and 32"));
  // Not numbers, positive, infinite, or a group that is no distribution (a non-site group too).
  std::string word = text;
  word.replace(word.find("-1.386294"), 9, "-1.3x6294");
  CATCH_CHECK(Contains(ErrorOf(word), "line 4: log-probabilities must be finite numbers <= 0"));
  std::string positive = text;
  positive.replace(positive.find("-2.302585"), 9, "0.5");
  CATCH_CHECK(Contains(ErrorOf(positive), "finite numbers <= 0"));
  std::string infinite = text;
  infinite.replace(infinite.find("-2.302585"), 9, "-inf");
  CATCH_CHECK(Contains(ErrorOf(infinite), "finite numbers <= 0"));
  std::string unnormalised = text;
  unnormalised.replace(unnormalised.rfind("-1.386294"), 9, "-2.000000");
  CATCH_CHECK(Contains(ErrorOf(unnormalised),
                       "line 7: a group of four log-probabilities does not sum to 1"));

  auto absent = LoadSpliceSignal("/nonexistent/dir/s.tsv");
  CATCH_REQUIRE_FALSE(absent.ok());
  CATCH_CHECK(Contains(absent.status().message(), "s.tsv: cannot be read"));
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-splice-signal");
  testing::WriteFile(dir + "/s.tsv", Table());
  auto loaded = LoadSpliceSignal(dir + "/s.tsv");
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->donor.site == model->donor.site);
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("SignalScores sums each window's log-odds and scores 0 off the sequence",
                "[annotation][splice_signal]") {
  const SpliceSignal model = *ParseSpliceSignal(Table(), "s.tsv");
  const double likely = std::log(0.7) - std::log(0.25), unlikely = std::log(0.1) - std::log(0.25);
  auto near = [](double a, double b) { return std::abs(a - b) < 1e-5; };
  // Donor window: bases i, i + 1, context i - 1; the row at offset 1 is flat.
  const std::vector<double> donor = SignalScores(model.donor, "AGCgTNGA");
  CATCH_REQUIRE(donor.size() == 8);
  CATCH_CHECK(donor[0] == 0.0);  // no base before the window
  CATCH_CHECK(near(donor[1], likely));
  CATCH_CHECK(near(donor[2], unlikely));
  CATCH_CHECK(near(donor[3], likely));  // lower case counts
  CATCH_CHECK(donor[4] == 0.0);         // the N at 5 is in the window
  CATCH_CHECK(donor[5] == 0.0);         // the N is the window's base
  CATCH_CHECK(donor[6] == 0.0);         // the N is the context
  CATCH_CHECK(donor[7] == 0.0);         // the window runs off the end
  // Acceptor window: the base before i, with its own context: a G after a T.
  const std::vector<double> acceptor = SignalScores(model.acceptor, "TGAGC");
  CATCH_REQUIRE(acceptor.size() == 5);
  CATCH_CHECK(acceptor[0] == 0.0);
  CATCH_CHECK(acceptor[1] == 0.0);         // the window's context would be before the sequence
  CATCH_CHECK(near(acceptor[2], likely));  // T G
  CATCH_CHECK(near(acceptor[3], 0.0));     // G A: flat after a G
  CATCH_CHECK(near(acceptor[4], 0.0));     // A G: the same G, flat after an A
  CATCH_CHECK(SignalScores(model.donor, "").empty());
}

}  // namespace
}  // namespace dnaserve::worker
