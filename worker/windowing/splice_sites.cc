#include "worker/windowing/splice_sites.h"

#include <algorithm>
#include <cstdio>

namespace dnaserve::worker {

StatusOr<int> SpliceSiteCollector::AddWindow(const WindowSpan& window, const float* scores,
                                             int64_t tokens, int columns, int donor_column,
                                             int acceptor_column) {
  int added = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t start = window.start + tokenizer_.TokenStart(t);
    if (start >= sequence_length_) break;  // the rest is padding
    const int64_t end = std::min(window.start + tokenizer_.TokenEnd(t), sequence_length_);
    const float* row = scores + t * columns;
    const double donor = row[donor_column];
    const double acceptor = row[acceptor_column];
    auto emit = [&](SiteType type, double score) {
      ++count_;
      ++added;
      // Past the cap we only count: the request fails, so the calls are never returned.
      if (count_ > options_.max_sites) return;
      sites_.push_back({type, start, end, t, score, donor, acceptor, window.index});
    };
    if (options_.donor && donor >= options_.threshold) emit(SiteType::kDonor, donor);
    if (options_.acceptor && acceptor >= options_.threshold) emit(SiteType::kAcceptor, acceptor);
  }
  if (count_ > options_.max_sites) {
    RecordCapDetails cap;
    cap.task = "splice";
    cap.record_count = count_;
    cap.maximum_records = options_.max_sites;
    cap.threshold = options_.threshold;
    char threshold[32];
    std::snprintf(threshold, sizeof(threshold), "%g", options_.threshold);
    return Status(ErrorCode::kValidationFailed,
                  "the splice response would hold more than " + std::to_string(options_.max_sites) +
                      " sites (" + std::to_string(count_) + " found by window " +
                      std::to_string(window.index + 1) + " at threshold " + threshold +
                      "); raise options.threshold",
                  cap);
  }
  return added;
}

}  // namespace dnaserve::worker
