#include "runner/workflows/splice_delta.h"

#include <algorithm>
#include <string>

namespace dnaserve::runner {
namespace {

enum class SiteClass { kAcceptor, kDonor };

const std::vector<float>& Scores(const SpliceTrack& track, SiteClass c) {
  return c == SiteClass::kAcceptor ? track.acceptor : track.donor;
}

bool Covers(const SpliceTrack& track, int64_t from, int64_t to) {
  const auto size = static_cast<int64_t>(track.acceptor.size());
  return static_cast<int64_t>(track.donor.size()) == size && from >= track.first_offset &&
         to < track.first_offset + size;
}

double At(const SpliceTrack& track, SiteClass c, int64_t offset) {
  return Scores(track, c)[static_cast<size_t>(offset - track.first_offset)];
}

// The ALT score lined up with genome offset `g` (see the header).
double AlignedAlt(const SpliceTrack& alt, SiteClass c, int64_t g, int64_t ref_len,
                  int64_t alt_len) {
  if (g < 0) return At(alt, c, g);
  if (g == 0) {
    double best = At(alt, c, 0);
    if (ref_len == 1) {  // an insertion: the anchor and every inserted base
      for (int64_t i = 1; i < alt_len; ++i) best = std::max(best, At(alt, c, i));
    }
    return best;
  }
  if (g < ref_len) return 0.0;  // deleted
  return At(alt, c, g + alt_len - ref_len);
}

void Pick(SiteClass c, const SpliceTrack& ref, const SpliceTrack& alt, int64_t ref_len,
          int64_t alt_len, int64_t distance, SpliceDeltaValue* gain, SpliceDeltaValue* loss) {
  bool first = true;
  for (int64_t g = -distance; g <= distance; ++g) {
    const double r = At(ref, c, g);
    const double a = AlignedAlt(alt, c, g, ref_len, alt_len);
    // Strictly greater: ties keep the first (lowest) offset, as numpy's argmax does.
    if (first || a - r > gain->score) *gain = {a - r, g, r, a};
    if (first || r - a > loss->score) *loss = {r - a, g, r, a};
    first = false;
  }
}

}  // namespace

double SpliceDelta::Max() const {
  return std::max({acceptor_gain.score, acceptor_loss.score, donor_gain.score, donor_loss.score});
}

StatusOr<SpliceDelta> ComputeSpliceDelta(const SpliceTrack& ref, const SpliceTrack& alt,
                                         int64_t ref_len, int64_t alt_len, int64_t distance) {
  if (ref_len < 1 || alt_len < 1 || (ref_len > 1 && alt_len > 1) || distance < 0) {
    return Internal("splice delta: REF or ALT must be one base (got " + std::to_string(ref_len) +
                    " and " + std::to_string(alt_len) + "), distance >= 0");
  }
  if (!Covers(ref, -distance, distance)) {
    return Internal("splice delta: the REF scores do not cover the scored positions");
  }
  const int64_t alt_last = std::max(distance + alt_len - ref_len, alt_len - 1);
  if (!Covers(alt, -distance, alt_last)) {
    return Internal("splice delta: the ALT scores do not cover the scored positions");
  }
  SpliceDelta out;
  Pick(SiteClass::kAcceptor, ref, alt, ref_len, alt_len, distance, &out.acceptor_gain,
       &out.acceptor_loss);
  Pick(SiteClass::kDonor, ref, alt, ref_len, alt_len, distance, &out.donor_gain,
       &out.donor_loss);
  return out;
}

}  // namespace dnaserve::runner
