#include "worker/windowing/promoter_regions.h"

#include <algorithm>

namespace dnaserve::worker {

std::vector<ScoredSpan> MergePromoterRegions(const std::vector<WindowSpan>& windows,
                                             const std::vector<double>& scores, double threshold) {
  std::vector<ScoredSpan> regions;
  bool open = false;
  const size_t n = std::min(windows.size(), scores.size());
  for (size_t i = 0; i < n; ++i) {
    if (scores[i] < threshold) {
      open = false;
      continue;
    }
    if (!open) {
      regions.push_back({windows[i].start, windows[i].end, scores[i]});
      open = true;
    } else {
      regions.back().end = std::max(regions.back().end, windows[i].end);
      regions.back().score = std::max(regions.back().score, scores[i]);
    }
  }
  return regions;
}

}  // namespace dnaserve::worker
