// Promoter regions from per-window probabilities.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {

struct ScoredSpan {
  int64_t start = 0;
  int64_t end = 0;
  double score = 0;
};

// Runs of consecutive windows scoring >= threshold become one region spanning from the first
// window's start to the last window's (clipped) end; its score is the maximum window score.
// REQUIRES: scores.size() == windows.size().
std::vector<ScoredSpan> MergePromoterRegions(const std::vector<WindowSpan>& windows,
                                             const std::vector<double>& scores, double threshold);

}  // namespace dnaserve::worker
