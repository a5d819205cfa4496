#include "worker/windowing/splice_sites.h"

#include <algorithm>
#include <cstdio>

namespace dnaserve::worker {

StatusOr<int> SpliceSiteCollector::AddWindow(const WindowSpan& window,
                                             const std::vector<Token>& tokens,
                                             const float* scores, int columns, int donor_column,
                                             int acceptor_column) {
  int added = 0;
  for (int64_t t = 0; t < static_cast<int64_t>(tokens.size()); ++t) {
    const Token& token = tokens[t];
    if (token.end <= token.start) continue;  // a special token: no bases to report
    const int64_t start = window.start + token.start;
    if (start >= sequence_length_) break;  // the rest is padding
    const int64_t end = std::min(window.start + token.end, sequence_length_);
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

std::vector<TokenSlice> TrackSlices(const WindowSpan& window, const std::vector<Token>& tokens,
                                    int64_t sequence_length) {
  std::vector<TokenSlice> slices;
  slices.reserve(tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    const Token& token = tokens[t];
    if (token.end <= token.start) continue;
    size_t next = t + 1;
    while (next < tokens.size() && tokens[next].end <= tokens[next].start) ++next;
    int64_t end = token.end;
    if (next < tokens.size() && tokens[next].start > token.start) {
      end = std::min(end, tokens[next].start);
    }
    const int64_t start = window.start + token.start;
    if (start >= sequence_length) break;
    slices.push_back(
        {static_cast<int64_t>(t), start, std::min(window.start + end, sequence_length)});
  }
  return slices;
}

}  // namespace dnaserve::worker
