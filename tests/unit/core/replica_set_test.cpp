// Rotation of one task family's worker replicas: round-robin over those in rotation, health
// verdicts and failed calls moving replicas out and back, and the fall-back when none is in.
#include "core/dispatch/replica_set.h"

#include <catch2/catch.hpp>
#include <map>

namespace dnaserve::core {
namespace {

std::map<size_t, int> PickMany(core::ReplicaSet& set, int n) {
  std::map<size_t, int> picks;
  for (int i = 0; i < n; ++i) {
    auto pick = set.Pick();
    REQUIRE(pick.has_value());
    ++picks[*pick];
  }
  return picks;
}

TEST_CASE("calls alternate over the replicas in rotation", "[replicas]") {
  core::ReplicaSet set(3);
  CHECK(set.in_rotation() == 3);  // optimistic until the first health check
  auto picks = PickMany(set, 300);
  CHECK(picks == std::map<size_t, int>{{0, 100}, {1, 100}, {2, 100}});

  CHECK(set.Report(1, core::HealthVerdict::kNotServing));
  CHECK_FALSE(set.Report(1, core::HealthVerdict::kNotServing));  // no change, nothing to log
  CHECK(set.in_rotation() == 2);
  picks = PickMany(set, 200);
  CHECK(picks == std::map<size_t, int>{{0, 100}, {2, 100}});

  CHECK(set.Report(1, core::HealthVerdict::kServing));  // back at once
  picks = PickMany(set, 300);
  CHECK(picks == std::map<size_t, int>{{0, 100}, {1, 100}, {2, 100}});
}

TEST_CASE("a failed call ejects at once, timeouts only after enough in a row", "[replicas]") {
  core::ReplicaSet set(2, /*timeouts_to_eject=*/3);
  CHECK(set.Eject(0));
  CHECK_FALSE(set.Eject(0));
  CHECK_FALSE(set.InRotation(0));
  CHECK(PickMany(set, 10) == std::map<size_t, int>{{1, 10}});

  CHECK_FALSE(set.Report(1, core::HealthVerdict::kNoAnswer));
  CHECK_FALSE(set.Report(1, core::HealthVerdict::kNoAnswer));
  CHECK_FALSE(set.Report(1, core::HealthVerdict::kServing));  // an answer resets the count
  CHECK_FALSE(set.Report(1, core::HealthVerdict::kNoAnswer));
  CHECK_FALSE(set.Report(1, core::HealthVerdict::kNoAnswer));
  CHECK(set.InRotation(1));
  CHECK(set.Report(1, core::HealthVerdict::kNoAnswer));
  CHECK_FALSE(set.InRotation(1));
  CHECK(set.in_rotation() == 0);
}

TEST_CASE("with none in rotation every replica is still tried, each once per call",
          "[replicas]") {
  core::ReplicaSet set(3);
  for (size_t i = 0; i < 3; ++i) set.Eject(i);
  // A call's retries: each replica once, then nothing.
  std::vector<size_t> tried;
  while (auto pick = set.Pick(tried)) tried.push_back(*pick);
  std::sort(tried.begin(), tried.end());
  CHECK(tried == std::vector<size_t>{0, 1, 2});
  // Successive calls still spread.
  CHECK(PickMany(set, 30) == std::map<size_t, int>{{0, 10}, {1, 10}, {2, 10}});
}

TEST_CASE("a retry prefers replicas in rotation, then falls back to the others", "[replicas]") {
  core::ReplicaSet set(3);
  set.Eject(2);
  auto first = set.Pick();
  REQUIRE(first);
  CHECK(*first != 2);
  auto second = set.Pick({*first});
  REQUIRE(second);
  CHECK(*second != 2);
  CHECK(*second != *first);
  CHECK(set.Pick({*first, *second}) == std::optional<size_t>(2));
  CHECK_FALSE(set.Pick({0, 1, 2}).has_value());
  CHECK_FALSE(core::ReplicaSet(0).Pick().has_value());
}

}  // namespace
}  // namespace dnaserve::core
