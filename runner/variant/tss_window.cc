#include "runner/variant/tss_window.h"

#include <algorithm>
#include <cctype>

#include "common/sequence.h"

namespace dnaserve::variant {
namespace {

// Genomic half-open window around `tss` (in whatever coordinates tss is) for the strand.
int64_t WindowStart(Strand strand, int64_t tss) {
  return TssWindowSpan(tss, strand != Strand::kPlus).start;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string SenseStrand(Strand strand, std::string genomic) {
  return strand == Strand::kPlus ? genomic : ReverseComplement(genomic);
}

}  // namespace

StatusOr<std::string> ReferenceWindow(const StartSite& site, const FetchBases& fetch) {
  const int64_t start = WindowStart(site.strand, site.tss);
  auto bases = fetch(start, start + kExpressionWindowBp);
  if (!bases.ok()) return bases.status();
  return SenseStrand(site.strand, std::move(*bases));
}

StatusOr<std::string> AlternateWindow(const StartSite& site, const AlleleChange& change,
                                      const FetchBases& fetch) {
  const int64_t s = change.start;
  const int64_t ref_len = static_cast<int64_t>(change.ref.size());
  const int64_t alt_len = static_cast<int64_t>(change.alt.size());
  const int64_t delta = alt_len - ref_len;
  // Where the TSS lands on the alternate haplotype.
  int64_t tss = site.tss;
  if (site.tss >= s + ref_len) {
    tss = site.tss + delta;
  } else if (site.tss >= s) {
    const int64_t offset = site.tss - s;
    if (offset < alt_len) {
      tss = s + offset;
    } else {  // the TSS base itself is deleted
      tss = site.strand == Strand::kPlus ? s + alt_len : s + alt_len - 1;
    }
  }
  const int64_t w0 = WindowStart(site.strand, tss);
  const int64_t w1 = w0 + kExpressionWindowBp;
  // Alternate haplotype = reference before s, ALT, reference from s+len(REF) on (shifted).
  std::string genomic;
  genomic.reserve(kExpressionWindowBp);
  if (w0 < std::min(w1, s)) {
    auto left = fetch(w0, std::min(w1, s));
    if (!left.ok()) return left.status();
    genomic += *left;
  }
  const int64_t a0 = std::max(w0, s);
  const int64_t a1 = std::min(w1, s + alt_len);
  if (a0 < a1)
    genomic += Upper(change.alt.substr(static_cast<size_t>(a0 - s), static_cast<size_t>(a1 - a0)));
  const int64_t r0 = std::max(w0, s + alt_len);
  if (r0 < w1) {
    auto right = fetch(r0 - delta, w1 - delta);
    if (!right.ok()) return right.status();
    genomic += *right;
  }
  if (static_cast<int64_t>(genomic.size()) != kExpressionWindowBp) {
    return Internal("alternate window has " + std::to_string(genomic.size()) + " bp");
  }
  return SenseStrand(site.strand, std::move(genomic));
}

int64_t TssDistance(const StartSite& site, int64_t ref_start, int64_t ref_length) {
  const int64_t first = ref_start;
  const int64_t last = ref_start + std::max<int64_t>(ref_length, 1) - 1;
  int64_t genomic = 0;  // signed genomic offset of the nearest REF base from the TSS
  if (last < site.tss) {
    genomic = last - site.tss;
  } else if (first > site.tss) {
    genomic = first - site.tss;
  }
  return site.strand == Strand::kPlus ? genomic : -genomic;
}

}  // namespace dnaserve::variant
