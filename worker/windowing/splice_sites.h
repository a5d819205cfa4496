// Splice-site calls from per-token (neither, acceptor, donor) scores, accumulated window by
// window under the response-size cap.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {

enum class SiteType { kDonor, kAcceptor };

struct SpliceCall {
  SiteType type = SiteType::kDonor;
  int64_t start = 0;  // the token's span in sequence coordinates, clipped to the sequence
  int64_t end = 0;
  int64_t token_index = 0;  // index of the token within its window's model input
  double score = 0;         // score of `type`
  double donor_score = 0;
  double acceptor_score = 0;
  int window_index = 0;
};

struct SpliceCallOptions {
  double threshold = 0.5;
  bool donor = true;
  bool acceptor = true;
  int64_t max_sites = 20000;
};

class SpliceSiteCollector {
 public:
  SpliceSiteCollector(SpliceCallOptions options, int64_t sequence_length)
      : options_(options), sequence_length_(sequence_length) {}

  // Adds one window's sites. `tokens` are the window's tokens with spans relative to the window
  // start (TokenizeWindows); `scores` holds one row of `columns` values per token, row t for
  // tokens[t] (rows past tokens.size() are batch padding and are not read). donor_column and
  // acceptor_column pick the two classes. A token emits a donor site when its donor score is
  // >= threshold and an acceptor site when its acceptor score is (both can happen); the site is
  // the token's span, so BPE tokens of any length work. Tokens covering no base (special tokens)
  // and tokens wholly inside the N padding are ignored; a token crossing the sequence end is
  // clipped. Once the total exceeds max_sites the window is still counted to its end, then the
  // result is validation_failed with RecordCapDetails{record_count = that total,
  // maximum_records, threshold}; the collector must not be used afterwards.
  // Returns the number of sites this window added.
  StatusOr<int> AddWindow(const WindowSpan& window, const std::vector<Token>& tokens,
                          const float* scores, int columns, int donor_column, int acceptor_column);

  const std::vector<SpliceCall>& sites() const { return sites_; }

 private:
  SpliceCallOptions options_;
  int64_t sequence_length_;
  std::vector<SpliceCall> sites_;
  int64_t count_ = 0;
};

// Where each token's scores go in the per-token bedGraph tracks, whose rows must not overlap:
// from the token's start to the next token's start, or to its own end when it is the last token
// or the next one does not start later (overlapping k-mers thus speak for `stride` bases each,
// the last one for all of its k). Sequence coordinates, clipped to the sequence; tokens covering
// no base or only padding get no slice.
struct TokenSlice {
  int64_t token_index = 0;
  int64_t start = 0;
  int64_t end = 0;
};
std::vector<TokenSlice> TrackSlices(const WindowSpan& window, const std::vector<Token>& tokens,
                                    int64_t sequence_length);

}  // namespace dnaserve::worker
