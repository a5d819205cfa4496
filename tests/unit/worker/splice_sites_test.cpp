#include "worker/windowing/splice_sites.h"

#include <catch2/catch.hpp>
#include <vector>

namespace dnaserve::worker {
namespace {

// Token scores in (neither, acceptor, donor) order.
struct Scores {
  std::vector<float> values;
  void Add(float acceptor, float donor) {
    values.push_back(1.0f - acceptor - donor);
    values.push_back(acceptor);
    values.push_back(donor);
  }
};

// The tokens of a window of non-overlapping 6-mers: token t covers [6t, 6t + 6).
std::vector<Token> SixMers(int count) {
  std::vector<Token> tokens;
  for (int t = 0; t < count; ++t) tokens.push_back({2, 6 * t, 6 * t + 6, false});
  return tokens;
}

CATCH_TEST_CASE("splice sites: donor and acceptor calls map tokens to sequence spans", "[splice]") {
  // Two 24-bp windows (4 tokens each) over a 40-bp sequence. The second, [24, 40), is padded by
  // 8 bp: its token 2, [36, 42), is clipped to [36, 40) and its token 3 lies wholly in padding.
  auto windows = PlanWindows(40, 24, 24);
  CATCH_REQUIRE(windows.size() == 2);
  SpliceSiteCollector collector({0.5, true, true, 100}, 40);

  Scores w0;
  w0.Add(0.1f, 0.7f);  // token 0 [0, 6): donor
  w0.Add(0.6f, 0.1f);  // token 1 [6, 12): acceptor
  w0.Add(0.5f, 0.5f);  // token 2 [12, 18): both (threshold is inclusive)
  w0.Add(0.2f, 0.2f);  // token 3: nothing
  auto added = collector.AddWindow(windows[0], SixMers(4), w0.values.data(), 3, 2, 1);
  CATCH_REQUIRE(added.ok());
  CATCH_CHECK(*added == 4);

  Scores w1;
  w1.Add(0.0f, 0.0f);
  w1.Add(0.0f, 0.0f);
  w1.Add(0.9f, 0.0f);  // token 2 of window 1: [36, 42) clipped to [36, 40)
  w1.Add(0.9f, 0.9f);  // token 3: [42, 48) is padding, ignored
  added = collector.AddWindow(windows[1], SixMers(4), w1.values.data(), 3, 2, 1);
  CATCH_REQUIRE(added.ok());
  CATCH_CHECK(*added == 1);

  const auto& sites = collector.sites();
  CATCH_REQUIRE(sites.size() == 5);
  CATCH_CHECK(sites[0].type == SiteType::kDonor);
  CATCH_CHECK(sites[0].start == 0);
  CATCH_CHECK(sites[0].end == 6);
  CATCH_CHECK(sites[0].token_index == 0);
  CATCH_CHECK(sites[0].score == Approx(0.7));
  CATCH_CHECK(sites[1].type == SiteType::kAcceptor);
  CATCH_CHECK(sites[1].start == 6);
  CATCH_CHECK(sites[1].acceptor_score == Approx(0.6));
  CATCH_CHECK(sites[1].donor_score == Approx(0.1));
  CATCH_CHECK(sites[2].type == SiteType::kDonor);
  CATCH_CHECK(sites[3].type == SiteType::kAcceptor);
  CATCH_CHECK(sites[3].start == 12);
  CATCH_CHECK(sites[4].start == 36);
  CATCH_CHECK(sites[4].end == 40);
  CATCH_CHECK(sites[4].token_index == 2);
  CATCH_CHECK(sites[4].window_index == 1);
}

CATCH_TEST_CASE("splice sites: site_types filter", "[splice]") {
  auto windows = PlanWindows(24, 24, 24);
  Scores s;
  s.Add(0.9f, 0.05f);
  s.Add(0.05f, 0.9f);
  s.Add(0.0f, 0.0f);
  s.Add(0.0f, 0.0f);
  SpliceSiteCollector donors({0.5, true, false, 100}, 24);
  CATCH_REQUIRE(donors.AddWindow(windows[0], SixMers(4), s.values.data(), 3, 2, 1).ok());
  CATCH_REQUIRE(donors.sites().size() == 1);
  CATCH_CHECK(donors.sites()[0].type == SiteType::kDonor);
  CATCH_CHECK(donors.sites()[0].token_index == 1);

  SpliceSiteCollector acceptors({0.5, false, true, 100}, 24);
  CATCH_REQUIRE(acceptors.AddWindow(windows[0], SixMers(4), s.values.data(), 3, 2, 1).ok());
  CATCH_REQUIRE(acceptors.sites().size() == 1);
  CATCH_CHECK(acceptors.sites()[0].type == SiteType::kAcceptor);
  CATCH_CHECK(acceptors.sites()[0].token_index == 0);
}

CATCH_TEST_CASE("splice sites: the cap trips while accumulating", "[splice]") {
  auto windows = PlanWindows(72, 24, 24);
  Scores all;  // every token is a donor and an acceptor: 8 sites per window
  for (int t = 0; t < 4; ++t) all.Add(0.5f, 0.5f);
  SpliceSiteCollector collector({0.25, true, true, 10}, 72);
  auto first = collector.AddWindow(windows[0], SixMers(4), all.values.data(), 3, 2, 1);
  CATCH_REQUIRE(first.ok());
  CATCH_CHECK(*first == 8);
  auto second = collector.AddWindow(windows[1], SixMers(4), all.values.data(), 3, 2, 1);
  CATCH_REQUIRE_FALSE(second.ok());
  const Status& status = second.status();
  CATCH_CHECK(status.code() == ErrorCode::kValidationFailed);
  const auto* cap = std::get_if<RecordCapDetails>(&status.details());
  CATCH_REQUIRE(cap != nullptr);
  CATCH_CHECK(cap->record_count == 16);  // counted to the end of the window where it tripped
  CATCH_CHECK(cap->record_count > cap->maximum_records);
  CATCH_CHECK(cap->maximum_records == 10);
  CATCH_CHECK(cap->threshold == 0.25);
  CATCH_CHECK(status.message().find("more than 10 sites") != std::string::npos);
  CATCH_CHECK(collector.sites().size() == 10);  // nothing past the cap is kept

  // Exactly at the cap is still fine.
  SpliceSiteCollector exact({0.25, true, true, 8}, 72);
  CATCH_CHECK(exact.AddWindow(windows[0], SixMers(4), all.values.data(), 3, 2, 1).ok());
}

}  // namespace
}  // namespace dnaserve::worker
