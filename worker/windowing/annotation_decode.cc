#include "worker/windowing/annotation_decode.h"

#include <algorithm>

namespace dnaserve::worker {
namespace {

int Find(const std::vector<std::string>& labels, std::string_view name) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// Maximal runs of positions in [from, to) for which pred(i) holds.
template <typename Pred>
std::vector<Span> Runs(int64_t from, int64_t to, Pred pred) {
  std::vector<Span> runs;
  int64_t open = -1;
  for (int64_t i = from; i < to; ++i) {
    if (pred(i)) {
      if (open < 0) open = i;
    } else if (open >= 0) {
      runs.push_back({open, i});
      open = -1;
    }
  }
  if (open >= 0) runs.push_back({open, to});
  return runs;
}

void DecodeStrand(const PositionScores& scores, const StrandChannels& ch, char strand,
                  const DecodeOptions& options, std::vector<DecodedTranscript>* out) {
  auto body = [&](int64_t i) { return std::max(scores.at(i, ch.exon), scores.at(i, ch.intron)); };
  auto candidates = Runs(0, scores.length, [&](int64_t i) { return body(i) >= options.threshold; });
  for (const Span& candidate : candidates) {
    DecodedTranscript t;
    t.strand = strand;
    t.exons = Runs(candidate.start, candidate.end,
                   [&](int64_t i) { return scores.at(i, ch.exon) >= scores.at(i, ch.intron); });
    if (t.exons.empty()) continue;
    t.span = {t.exons.front().start, t.exons.back().end};
    if (t.span.end - t.span.start < options.min_transcript_bp) continue;
    for (size_t e = 0; e + 1 < t.exons.size(); ++e) {
      t.introns.push_back({t.exons[e].end, t.exons[e + 1].start});
    }
    for (const Span& exon : t.exons) {
      auto coding = Runs(exon.start, exon.end,
                         [&](int64_t i) { return scores.at(i, ch.cds) >= options.threshold; });
      t.cds.insert(t.cds.end(), coding.begin(), coding.end());
    }
    double sum = 0;
    for (int64_t i = t.span.start; i < t.span.end; ++i) sum += body(i);
    t.score = sum / static_cast<double>(t.span.end - t.span.start);
    t.tss_position = strand == '+' ? t.span.start : t.span.end - 1;
    t.polya_position = strand == '+' ? t.span.end - 1 : t.span.start;
    out->push_back(std::move(t));
  }
}

}  // namespace

StatusOr<AnnotationChannels> ResolveAnnotationChannels(const std::vector<std::string>& labels) {
  std::array<int, kAnnotationLabels.size()> index{};
  for (size_t i = 0; i < kAnnotationLabels.size(); ++i) {
    index[i] = Find(labels, kAnnotationLabels[i]);
    if (index[i] < 0) {
      return Status(ErrorCode::kInternal, "'output_labels' of an annotation model must include \"" +
                                              std::string(kAnnotationLabels[i]) + "\"");
    }
  }
  AnnotationChannels c;
  c.count = static_cast<int>(labels.size());
  c.intergenic = index[0];
  c.plus = {index[1], index[2], index[3], index[4], index[5], index[6]};
  c.minus = {index[7], index[8], index[9], index[10], index[11], index[12]};
  return c;
}

void PlaceWindow(const WindowSpan& window, const float* rows, const AnnotationChannels& channels,
                 bool reverse_complement, PositionScores* out) {
  // twin[c] = the channel that c becomes on the other strand.
  std::vector<int> twin(static_cast<size_t>(channels.count));
  for (int c = 0; c < channels.count; ++c) twin[c] = c;
  if (reverse_complement) {
    const StrandChannels& p = channels.plus;
    const StrandChannels& m = channels.minus;
    for (auto [a, b] : {std::pair{p.exon, m.exon},
                        {p.intron, m.intron},
                        {p.cds, m.cds},
                        {p.utr, m.utr},
                        {p.tss, m.tss},
                        {p.transcript_end, m.transcript_end}}) {
      twin[a] = b;
      twin[b] = a;
    }
  }
  const int64_t real = window.end - window.start;
  for (int64_t j = 0; j < real; ++j) {
    const int64_t position =
        reverse_complement ? out->length - 1 - (window.start + j) : window.start + j;
    const float* row = rows + j * channels.count;
    for (int c = 0; c < channels.count && c < out->channels; ++c) {
      out->at(position, twin[c]) = row[c];
    }
  }
}

void AverageInto(PositionScores* out, const PositionScores& other) {
  const size_t n = std::min(out->values.size(), other.values.size());
  for (size_t i = 0; i < n; ++i) out->values[i] = (out->values[i] + other.values[i]) * 0.5f;
}

std::vector<DecodedTranscript> DecodeTranscripts(const PositionScores& scores,
                                                 const AnnotationChannels& channels,
                                                 const DecodeOptions& options) {
  std::vector<DecodedTranscript> out;
  DecodeStrand(scores, channels.plus, '+', options, &out);
  DecodeStrand(scores, channels.minus, '-', options, &out);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.span.start != b.span.start) return a.span.start < b.span.start;
    return a.strand == '+' && b.strand == '-';
  });
  return out;
}

TypeCall AssignTranscriptType(const Span& transcript,
                              const std::vector<WindowTypeScores>& windows) {
  std::vector<double> sums;
  double total = 0;
  for (const auto& w : windows) {
    int64_t overlap =
        std::min(w.span.end, transcript.end) - std::max(w.span.start, transcript.start);
    if (overlap <= 0) continue;
    if (sums.size() < w.probabilities.size()) sums.resize(w.probabilities.size(), 0.0);
    for (size_t k = 0; k < w.probabilities.size(); ++k) sums[k] += overlap * w.probabilities[k];
    total += static_cast<double>(overlap);
  }
  TypeCall call;
  if (total <= 0) return call;
  for (size_t k = 0; k < sums.size(); ++k) {
    if (sums[k] > sums[call.index]) call.index = static_cast<int>(k);
  }
  call.score = sums[call.index] / total;
  return call;
}

}  // namespace dnaserve::worker
