#include "worker/windowing/annotation_decode.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "common/sequence.h"
#include "worker/windowing/exon_chain.h"

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

bool IsPair(std::string_view sequence, size_t at, const char* pair) {
  return CanonicalBase(sequence[at]) == pair[0] && CanonicalBase(sequence[at + 1]) == pair[1];
}

void DecodeStrand(const PositionScores& scores, const StrandChannels& ch, char strand,
                  const DecodeOptions& options, std::string_view sequence,
                  std::vector<DecodedTranscript>* out) {
  // Motifs constrain a model that calls splice sites; one without them may not place exon edges
  // to the base, and snapping its edges to the nearest motif would only move them arbitrarily.
  const bool constrained = ch.donor >= 0 && ch.acceptor >= 0 &&
                           static_cast<int64_t>(sequence.size()) == scores.length;
  const SpliceMotifs motifs = constrained ? FindSpliceMotifs(sequence, strand) : SpliceMotifs{};
  const std::vector<StrandState> path =
      ParseStrand(scores, ch, strand, options, constrained ? &motifs : nullptr);
  auto inside = Runs(0, scores.length,
                     [&](int64_t i) { return path[i] != StrandState::kOutside; });
  for (const Span& candidate : inside) {
    DecodedTranscript t;
    t.strand = strand;
    t.exons = Runs(candidate.start, candidate.end,
                   [&](int64_t i) { return path[i] == StrandState::kExon; });
    auto short_exon = [&](const Span& e) {
      return e.end - e.start < options.min_terminal_exon_bp;
    };
    while (!t.exons.empty() && short_exon(t.exons.back())) t.exons.pop_back();
    while (!t.exons.empty() && short_exon(t.exons.front())) t.exons.erase(t.exons.begin());
    if (t.exons.empty()) continue;
    t.span = {t.exons.front().start, t.exons.back().end};
    if (t.span.end - t.span.start < options.min_transcript_bp) continue;
    double exon_sum = 0;
    int64_t exon_bases = 0;
    for (const Span& exon : t.exons) {
      for (int64_t i = exon.start; i < exon.end; ++i) exon_sum += scores.at(i, ch.exon);
      exon_bases += exon.end - exon.start;
    }
    if (exon_sum / static_cast<double>(exon_bases) < options.min_exon_mean) continue;
    for (size_t e = 0; e + 1 < t.exons.size(); ++e) {
      t.introns.push_back({t.exons[e].end, t.exons[e + 1].start});
    }
    t.cds = CodingSpan(t.exons, scores, ch.cds, options.cds_threshold);
    double sum = 0;
    for (int64_t i = t.span.start; i < t.span.end; ++i) {
      sum += std::max(scores.at(i, ch.exon), scores.at(i, ch.intron));
    }
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
  std::array<int, kSpliceSiteLabels.size()> site{};
  for (size_t i = 0; i < kSpliceSiteLabels.size(); ++i) site[i] = Find(labels, kSpliceSiteLabels[i]);
  if (std::all_of(site.begin(), site.end(), [](int i) { return i >= 0; })) {
    c.plus.donor = site[0];
    c.plus.acceptor = site[1];
    c.minus.donor = site[2];
    c.minus.acceptor = site[3];
  }
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
                        {p.transcript_end, m.transcript_end},
                        {p.donor, m.donor},
                        {p.acceptor, m.acceptor}}) {
      if (a < 0 || b < 0) continue;
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
    out->weights[position] = EdgeWeight(j, real);
  }
}

float EdgeWeight(int64_t offset, int64_t real) {
  const int64_t distance = std::min(offset, real - 1 - offset);
  return static_cast<float>(
      std::min(1.0, static_cast<double>(distance + 1) / static_cast<double>(kEdgeRampBp)));
}

void AverageInto(PositionScores* out, const PositionScores& other,
                 const std::vector<bool>& forward_only) {
  const int64_t length = std::min(out->length, other.length);
  const int channels = std::min(out->channels, other.channels);
  std::vector<bool> averaged(static_cast<size_t>(channels), true);
  for (size_t c = 0; c < forward_only.size() && c < averaged.size(); ++c) {
    averaged[c] = !forward_only[c];
  }
  for (int64_t i = 0; i < length; ++i) {
    const float w = out->weights[i];
    const float v = other.weights[i];
    const float total = w + v;
    for (int c = 0; c < channels; ++c) {
      if (!averaged[c]) continue;
      float& a = out->at(i, c);
      a = (a * w + other.at(i, c) * v) / total;
    }
    out->weights[i] = total;
  }
}

Status CheckStrandCompleteLabels(const std::vector<std::string>& listed,
                                 const std::vector<std::string>& output_labels) {
  auto invalid = [](const std::string& message) {
    return Status(ErrorCode::kInternal, "'strand_complete_labels': " + message);
  };
  if (listed.empty()) return invalid("must name at least one label");
  auto named = [](const std::vector<std::string>& list, const std::string& label) {
    return std::find(list.begin(), list.end(), label) != list.end();
  };
  auto ends_with = [](const std::string& s, std::string_view suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                 suffix.data(), suffix.size()) == 0;
  };
  for (const std::string& label : listed) {
    if (std::count(listed.begin(), listed.end(), label) > 1) {
      return invalid("\"" + label + "\" is named twice");
    }
    if (!named(output_labels, label)) {
      return invalid("\"" + label + "\" is not one of 'output_labels'");
    }
    std::string twin;
    if (ends_with(label, "_plus")) {
      twin = label.substr(0, label.size() - 5) + "_minus";
    } else if (ends_with(label, "_minus")) {
      twin = label.substr(0, label.size() - 6) + "_plus";
    } else {
      return invalid("\"" + label +
                     "\" names no strand (a strand-complete channel ends in _plus or _minus)");
    }
    if (!named(listed, twin)) {
      return invalid("\"" + label + "\" is listed without its twin \"" + twin +
                     "\" (one pass computes both strands)");
    }
  }
  return Status::Ok();
}

std::vector<bool> StrandCompleteChannels(const std::vector<std::string>& listed,
                                         const std::vector<std::string>& output_labels) {
  std::vector<bool> out(output_labels.size(), false);
  for (size_t c = 0; c < output_labels.size(); ++c) {
    out[c] = std::find(listed.begin(), listed.end(), output_labels[c]) != listed.end();
  }
  return out;
}

SpliceMotifs FindSpliceMotifs(std::string_view sequence, char strand) {
  const size_t n = sequence.size();
  SpliceMotifs m{std::vector<bool>(n, false), std::vector<bool>(n, false)};
  // Sense donors GT/GC and acceptors AG, read on the plus strand left to right.
  const std::vector<const char*> begins =
      strand == '+' ? std::vector<const char*>{"GT", "GC"} : std::vector<const char*>{"CT"};
  const std::vector<const char*> ends =
      strand == '+' ? std::vector<const char*>{"AG"} : std::vector<const char*>{"AC", "GC"};
  for (size_t i = 0; i + 1 < n; ++i) {
    for (const char* pair : begins) m.intron_may_begin[i] = m.intron_may_begin[i] || IsPair(sequence, i, pair);
    if (i + 2 < n) {
      for (const char* pair : ends) m.exon_may_resume[i + 2] = m.exon_may_resume[i + 2] || IsPair(sequence, i, pair);
    }
  }
  return m;
}

std::vector<StrandState> ParseStrand(const PositionScores& scores, const StrandChannels& ch,
                                     char strand, const DecodeOptions& options,
                                     const SpliceMotifs* motifs) {
  const int64_t n = scores.length;
  std::vector<StrandState> path(static_cast<size_t>(n), StrandState::kOutside);
  if (n == 0) return path;
  // The leftmost base of a transcript is its 5' end on '+' and its 3' end on '-'.
  const int left = strand == '+' ? ch.tss : ch.transcript_end;
  const int right = strand == '+' ? ch.transcript_end : ch.tss;
  const double w = options.emission_weight;
  auto emit_outside = [&](int64_t i) {
    return w * FlooredLog(1.0 - static_cast<double>(scores.at(i, ch.exon)) -
                          static_cast<double>(scores.at(i, ch.intron)));
  };
  auto emit_exon = [&](int64_t i) { return w * FlooredLog(scores.at(i, ch.exon)); };
  auto emit_intron = [&](int64_t i) { return w * FlooredLog(scores.at(i, ch.intron)); };
  auto terminal = [&](int64_t i, int channel) {
    return options.terminal_weight * FlooredLog(scores.at(i, channel));
  };
  // An intron's leftmost base is its donor on '+' and its acceptor on '-'.
  const bool sites = ch.donor >= 0 && ch.acceptor >= 0;
  const int opening = strand == '+' ? ch.donor : ch.acceptor;
  const int closing = strand == '+' ? ch.acceptor : ch.donor;
  auto site = [&](int64_t i, int channel) {
    return sites ? options.site_weight * FlooredLog(scores.at(i, channel)) : 0.0;
  };
  auto site_passed = [&](int64_t i, int channel) {
    return sites ? options.site_pass_weight *
                       FlooredLog(1.0 - static_cast<double>(scores.at(i, channel)))
                 : 0.0;
  };
  constexpr uint8_t kO = 0, kE = 1, kI = 2;
  // back[3 * i + s]: the state at i - 1 on the best path into state s at i.
  std::vector<uint8_t> back(static_cast<size_t>(3 * n), 0);
  double o = emit_outside(0), e = emit_exon(0), in = emit_intron(0);
  for (int64_t i = 1; i < n; ++i) {
    // outside <- outside | exon (the transcript's last base was i - 1)
    const double from_exon = e - options.start_cost + terminal(i - 1, right);
    double next_o = o;
    uint8_t back_o = kO;
    if (from_exon > next_o) next_o = from_exon, back_o = kE;
    // Staying in an exon or intron where the other could begin pays for the site not taken.
    const bool may_begin = motifs == nullptr || motifs->intron_may_begin[i];
    const bool may_resume = motifs == nullptr || motifs->exon_may_resume[i];
    // exon <- exon | outside (a transcript starts at i) | intron (acceptor)
    double next_e = e + (may_begin ? site_passed(i, opening) : 0.0);
    uint8_t back_e = kE;
    const double start = o - options.start_cost + terminal(i, left);
    if (start > next_e) next_e = start, back_e = kO;
    if (may_resume) {
      const double resume = in - options.splice_cost + site(i - 1, closing);
      if (resume > next_e) next_e = resume, back_e = kI;
    }
    // intron <- intron | exon (the intron's first base is i)
    double next_in = in + (may_resume ? site_passed(i - 1, closing) : 0.0);
    uint8_t back_in = kI;
    if (may_begin) {
      const double begin = e - options.splice_cost + site(i, opening);
      if (begin > next_in) next_in = begin, back_in = kE;
    }
    o = next_o + emit_outside(i);
    e = next_e + emit_exon(i);
    in = next_in + emit_intron(i);
    back[3 * i] = back_o;
    back[3 * i + 1] = back_e;
    back[3 * i + 2] = back_in;
  }
  uint8_t state = kO;
  double best = o;
  if (e > best) state = kE, best = e;
  if (in > best) state = kI;
  for (int64_t i = n - 1; i >= 0; --i) {
    path[i] = static_cast<StrandState>(state);
    state = back[3 * i + state];
  }
  return path;
}

std::vector<Span> CodingSpan(const std::vector<Span>& exons, const PositionScores& scores,
                             int cds_channel, double threshold) {
  int64_t first = -1, last = -1;
  for (const Span& exon : exons) {
    for (int64_t i = exon.start; i < exon.end; ++i) {
      if (scores.at(i, cds_channel) >= threshold) {
        if (first < 0) first = i;
        last = i;
      }
    }
  }
  std::vector<Span> out;
  if (first < 0) return out;
  for (const Span& exon : exons) {
    const Span piece{std::max(exon.start, first), std::min(exon.end, last + 1)};
    if (piece.start < piece.end) out.push_back(piece);
  }
  return out;
}

std::vector<DecodedTranscript> DecodeTranscripts(const PositionScores& scores,
                                                 const AnnotationChannels& channels,
                                                 const DecodeOptions& options,
                                                 std::string_view sequence) {
  std::vector<DecodedTranscript> out;
  const bool chain = options.exon_chain && channels.plus.donor >= 0 &&
                     channels.plus.acceptor >= 0 && !sequence.empty() &&
                     static_cast<int64_t>(sequence.size()) == scores.length;
  auto decode_strand = chain ? DecodeChainStrand : DecodeStrand;
  decode_strand(scores, channels.plus, '+', options, sequence, &out);
  decode_strand(scores, channels.minus, '-', options, sequence, &out);
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
