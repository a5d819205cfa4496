#include "worker/windowing/annotation_decode.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

#include "common/sequence.h"

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

constexpr double kProbabilityFloor = 1e-4;

double FlooredLog(double p) { return std::log(std::max(p, kProbabilityFloor)); }

bool IsPair(std::string_view sequence, size_t at, const char* pair) {
  auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
  return upper(sequence[at]) == pair[0] && upper(sequence[at + 1]) == pair[1];
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

void DecodeChainStrand(const PositionScores& scores, const StrandChannels& ch, char strand,
                       const DecodeOptions& options, std::string_view sequence,
                       std::vector<DecodedTranscript>* out);

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

void AverageInto(PositionScores* out, const PositionScores& other) {
  const int64_t length = std::min(out->length, other.length);
  const int channels = std::min(out->channels, other.channels);
  for (int64_t i = 0; i < length; ++i) {
    const float w = out->weights[i];
    const float v = other.weights[i];
    const float total = w + v;
    for (int c = 0; c < channels; ++c) {
      float& a = out->at(i, c);
      a = (a * w + other.at(i, c) * v) / total;
    }
    out->weights[i] = total;
  }
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

// ------------------------------------------------------------------ the exon-chain decoder
// scripts/training/annotation_decode.py mirrors this step for step (chain_paths, best_orf,
// decode_chain_strand): the same sums in the same order, in doubles.

double LengthPrior(int64_t length, double log_mean, double log_sd) {
  const double z = (std::log(static_cast<double>(length)) - log_mean) / log_sd;
  return -0.5 * z * z;
}

std::vector<int64_t> BlockPeaks(const std::vector<double>& values, int64_t block,
                                double minimum) {
  std::vector<int64_t> out;
  const int64_t n = static_cast<int64_t>(values.size());
  for (int64_t lo = 0; lo < n; lo += block) {
    int64_t best = lo;
    for (int64_t i = lo + 1; i < std::min(n, lo + block); ++i) {
      if (values[i] > values[best]) best = i;
    }
    if (values[best] >= minimum) out.push_back(best);
  }
  return out;
}

SenseChannels ReadSense(const PositionScores& scores, const StrandChannels& ch, char strand) {
  const int64_t n = scores.length;
  SenseChannels s;
  for (auto [channel, target] : {std::pair{ch.exon, &s.exon},
                                 {ch.intron, &s.intron},
                                 {ch.cds, &s.cds},
                                 {ch.tss, &s.tss},
                                 {ch.transcript_end, &s.transcript_end},
                                 {ch.donor, &s.donor},
                                 {ch.acceptor, &s.acceptor}}) {
    target->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = strand == '+' ? i : n - 1 - i;
      (*target)[i] = static_cast<double>(scores.at(at, channel));
    }
  }
  return s;
}

std::string SenseSequence(std::string_view sequence, char strand) {
  return strand == '+' ? std::string(sequence) : ReverseComplement(sequence);
}

namespace {

char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

double LogFloored(double p) { return std::log(std::max(p, kProbabilityFloor)); }

// A node of ChainParse: its best score and where that came from.
struct ChainNode {
  int64_t position = 0;
  double value = -std::numeric_limits<double>::infinity();
  int from_kind = -1;  // exon origin of an end or donor: 0 a start, 1 an acceptor
  int64_t from = -1;   // index of that origin, of the donor (acceptor), of the end (start)
};

}  // namespace

std::vector<std::vector<Span>> ChainParse(const SenseChannels& sense,
                                          std::string_view sense_sequence,
                                          const DecodeOptions& o) {
  const int64_t n = static_cast<int64_t>(sense.exon.size());
  std::vector<std::vector<Span>> chains;
  // No sequence of the channels' length: no motifs to pair, so no chain.
  if (n == 0 || static_cast<int64_t>(sense_sequence.size()) != n) return chains;
  const double w = o.emission_weight, xw = o.exon_weight, pw = o.site_pass_weight;
  std::vector<bool> donor_motif(n, false), acceptor_motif(n, false);
  for (int64_t i = 0; i + 1 < n; ++i) {
    const char a = Upper(sense_sequence[i]), b = Upper(sense_sequence[i + 1]);
    donor_motif[i] = a == 'G' && (b == 'T' || b == 'C');
    if (i + 2 < n) acceptor_motif[i + 2] = a == 'A' && b == 'G';
  }
  // Acceptor probability of the base before i (an intron's last base when an exon resumes at i).
  std::vector<double> acceptor_before(n, 0.0);
  for (int64_t i = 1; i < n; ++i) acceptor_before[i] = sense.acceptor[i - 1];
  // Prefix sums of the per-base exon and intron scores.
  std::vector<double> ce(n + 1, 0.0), ci(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double outside = 1.0 - sense.exon[i] - sense.intron[i];
    const double log_outside = std::log(std::max(outside, kProbabilityFloor));
    const double genic = std::max(sense.exon[i] + sense.intron[i], kProbabilityFloor);
    const double inside = w * (std::log(genic) - log_outside);
    double exon_score = inside + xw * std::log(std::max(sense.exon[i] / genic, kProbabilityFloor));
    double intron_score =
        inside + xw * std::log(std::max(sense.intron[i] / genic, kProbabilityFloor));
    exon_score = exon_score + (donor_motif[i] ? pw * LogFloored(1.0 - sense.donor[i]) : 0.0);
    intron_score =
        intron_score + (acceptor_motif[i] ? pw * LogFloored(1.0 - acceptor_before[i]) : 0.0);
    ce[i + 1] = ce[i] + exon_score;
    ci[i + 1] = ci[i] + intron_score;
  }

  std::vector<ChainNode> starts, ends, donors, acceptors;
  std::vector<int64_t> start_positions = BlockPeaks(sense.tss, o.terminal_block_bp, o.terminal_min);
  if (start_positions.empty() || start_positions.front() != 0) {
    start_positions.insert(start_positions.begin(), 0);
  }
  std::vector<int64_t> end_positions =
      BlockPeaks(sense.transcript_end, o.terminal_block_bp, o.terminal_min);
  for (int64_t& p : end_positions) ++p;
  if (end_positions.empty() || end_positions.back() != n) end_positions.push_back(n);
  std::vector<double> start_term, end_term, donor_term, acceptor_term;
  for (int64_t p : start_positions) {
    starts.push_back({p});
    start_term.push_back(p == 0 ? 0.0 : o.terminal_weight * LogFloored(sense.tss[p]));
  }
  for (int64_t p : end_positions) {
    ends.push_back({p});
    end_term.push_back(p == n ? 0.0 : o.terminal_weight * LogFloored(sense.transcript_end[p - 1]));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (donor_motif[i] && sense.donor[i] >= o.site_min) {
      donors.push_back({i});
      donor_term.push_back(o.site_weight * LogFloored(sense.donor[i]));
    }
    if (acceptor_motif[i] && acceptor_before[i] >= o.site_min) {
      acceptors.push_back({i});
      acceptor_term.push_back(o.site_weight * LogFloored(acceptor_before[i]));
    }
  }
  // Events in position order; at one position ends, donors, acceptors, then starts (a start may
  // follow an end at the same base; the others look strictly back).
  std::vector<std::tuple<int64_t, int, int64_t>> events;
  for (size_t k = 0; k < ends.size(); ++k) events.emplace_back(ends[k].position, 0, k);
  for (size_t k = 0; k < donors.size(); ++k) events.emplace_back(donors[k].position, 1, k);
  for (size_t k = 0; k < acceptors.size(); ++k) events.emplace_back(acceptors[k].position, 2, k);
  for (size_t k = 0; k < starts.size(); ++k) events.emplace_back(starts[k].position, 3, k);
  std::sort(events.begin(), events.end());

  auto lower = [](const std::vector<ChainNode>& nodes, int64_t position) {
    return static_cast<int64_t>(
        std::lower_bound(nodes.begin(), nodes.end(), position,
                         [](const ChainNode& node, int64_t p) { return node.position < p; }) -
        nodes.begin());
  };
  auto upper = [](const std::vector<ChainNode>& nodes, int64_t position) {
    return static_cast<int64_t>(
        std::upper_bound(nodes.begin(), nodes.end(), position,
                         [](int64_t p, const ChainNode& node) { return p < node.position; }) -
        nodes.begin());
  };
  // The best exon ending at p (exclusive): from a start (first or single exon, `first` prior)
  // or an acceptor (internal or last exon, `inner` prior).
  auto best_exon = [&](int64_t p, double first_mean, double first_sd, double inner_mean,
                       double inner_sd, ChainNode* node) {
    const std::vector<ChainNode>* origins[2] = {&starts, &acceptors};
    const double means[2] = {first_mean, inner_mean}, sds[2] = {first_sd, inner_sd};
    for (int kind = 0; kind < 2; ++kind) {
      const auto& nodes = *origins[kind];
      const int64_t lo = lower(nodes, p - o.max_exon_bp), hi = lower(nodes, p);
      double best = -std::numeric_limits<double>::infinity();
      int64_t at = -1;
      for (int64_t j = lo; j < hi; ++j) {
        const double candidate = nodes[j].value + (ce[p] - ce[nodes[j].position]) +
                                 o.length_weight * LengthPrior(p - nodes[j].position, means[kind],
                                                               sds[kind]);
        if (at < 0 || candidate > best) best = candidate, at = j;
      }
      if (at >= 0 && best > node->value) {
        node->value = best, node->from_kind = kind, node->from = at;
      }
    }
  };
  const double none = -std::numeric_limits<double>::infinity();
  double best_before = 0.0;  // the best parse of the bases before: 0 (no transcript) or an end
  int64_t best_end = -1;
  for (const auto& [p, kind, k] : events) {
    if (kind == 0) {
      ChainNode& node = ends[k];
      best_exon(p, o.single_exon_log_mean, o.single_exon_log_sd, o.last_exon_log_mean,
                o.last_exon_log_sd, &node);
      if (node.value > none) {
        node.value = node.value + end_term[k];
        if (node.value > best_before) best_before = node.value, best_end = k;
      }
    } else if (kind == 1) {
      ChainNode& node = donors[k];
      best_exon(p, o.first_exon_log_mean, o.first_exon_log_sd, o.internal_exon_log_mean,
                o.internal_exon_log_sd, &node);
      if (node.value > none) node.value = node.value + donor_term[k];
    } else if (kind == 2) {
      ChainNode& node = acceptors[k];
      const int64_t lo = lower(donors, p - o.max_intron_bp);
      const int64_t hi = upper(donors, p - kMinChainIntronBp);
      double best = none;
      int64_t at = -1;
      for (int64_t j = lo; j < hi; ++j) {
        const double candidate =
            donors[j].value + (ci[p] - ci[donors[j].position]) +
            o.length_weight * LengthPrior(p - donors[j].position, o.intron_log_mean,
                                          o.intron_log_sd);
        if (at < 0 || candidate > best) best = candidate, at = j;
      }
      if (at >= 0 && best > none) {
        node.value = best - o.splice_cost + acceptor_term[k];
        node.from = at;
      }
    } else {
      ChainNode& node = starts[k];
      node.value = best_before - o.start_cost + start_term[k];
      node.from = best_end;
    }
  }
  for (int64_t end = best_end; end >= 0;) {
    std::vector<Span> exons;
    int64_t stop = ends[end].position;
    int kind = ends[end].from_kind;
    int64_t index = ends[end].from;
    while (true) {
      if (kind == 0) {
        exons.push_back({starts[index].position, stop});
        end = starts[index].from;
        break;
      }
      exons.push_back({acceptors[index].position, stop});
      const ChainNode& donor = donors[acceptors[index].from];
      stop = donor.position;
      kind = donor.from_kind;
      index = donor.from;
    }
    std::reverse(exons.begin(), exons.end());
    chains.push_back(std::move(exons));
  }
  std::reverse(chains.begin(), chains.end());
  return chains;
}

std::vector<std::vector<Span>> AlternativeStartChains(
    const SenseChannels& sense, std::string_view sense_sequence, const DecodeOptions& o,
    const std::vector<std::vector<Span>>& chains) {
  std::vector<std::vector<Span>> out;
  const int64_t n = static_cast<int64_t>(sense.tss.size());
  if (n == 0 || static_cast<int64_t>(sense_sequence.size()) != n) return out;
  std::vector<int64_t> peaks = BlockPeaks(sense.tss, o.terminal_block_bp, o.alternative_start_min);
  std::stable_sort(peaks.begin(), peaks.end(),
                   [&](int64_t a, int64_t b) { return sense.tss[a] > sense.tss[b]; });
  auto near = [&](const std::vector<int64_t>& positions, int64_t p) {
    for (int64_t q : positions) {
      if (std::abs(p - q) <= o.alternative_start_spacing_bp) return true;
    }
    return false;
  };
  std::vector<int64_t> kept;
  for (int64_t p : peaks) {
    if (!near(kept, p)) kept.push_back(p);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<int64_t> starts;
  for (const auto& chain : chains) {
    if (!chain.empty()) starts.push_back(chain.front().start);
  }
  for (int64_t p : kept) {
    if (near(starts, p)) continue;
    const int64_t end = std::min(n, p + o.alternative_span_bp);
    auto slice = [p, end](const std::vector<double>& v) {
      return std::vector<double>(v.begin() + p, v.begin() + end);
    };
    SenseChannels sub{slice(sense.exon),  slice(sense.intron), slice(sense.cds),
                      std::vector<double>(end - p, 0.0), slice(sense.transcript_end),
                      slice(sense.donor), slice(sense.acceptor)};
    std::vector<std::vector<Span>> found =
        ChainParse(sub, sense_sequence.substr(p, end - p), o);
    if (found.empty() || found.front().front().start != 0) continue;
    std::vector<Span> chain = std::move(found.front());
    for (Span& e : chain) e = {e.start + p, e.end + p};
    out.push_back(std::move(chain));
  }
  return out;
}

std::optional<Span> BestOrf(std::string_view spliced, const std::vector<double>& coding,
                            int64_t min_orf_bp) {
  const int64_t n = static_cast<int64_t>(spliced.size());
  std::vector<double> cum(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    cum[i + 1] = cum[i] + (LogFloored(coding[i]) - LogFloored(1.0 - coding[i]));
  }
  auto codon_is = [&](int64_t k, const char* codon) {
    return Upper(spliced[k]) == codon[0] && Upper(spliced[k + 1]) == codon[1] &&
           Upper(spliced[k + 2]) == codon[2];
  };
  double best = 0.0;
  std::optional<Span> found;
  for (int64_t frame = 0; frame < 3; ++frame) {
    int64_t open = -1;
    for (int64_t k = frame; k + 2 < n; k += 3) {
      if (codon_is(k, "TAA") || codon_is(k, "TAG") || codon_is(k, "TGA")) {
        if (open >= 0 && k + 3 - open >= min_orf_bp) {
          const double score = cum[k + 3] - cum[open];
          if (score > best) best = score, found = Span{open, k + 3};
        }
        open = -1;
      } else if (codon_is(k, "ATG") && (open < 0 || cum[k] < cum[open])) {
        open = k;
      }
    }
  }
  return found;
}

namespace {

// The CDS of a chain (sense coordinates): its best ORF, cut at the exon boundaries.
std::vector<Span> OrfCds(const std::vector<Span>& exons, std::string_view sense_sequence,
                         const std::vector<double>& cds, int64_t min_orf_bp) {
  std::string spliced;
  std::vector<double> coding;
  for (const Span& e : exons) {
    spliced.append(sense_sequence.substr(e.start, e.end - e.start));
    coding.insert(coding.end(), cds.begin() + e.start, cds.begin() + e.end);
  }
  const std::optional<Span> orf = BestOrf(spliced, coding, min_orf_bp);
  std::vector<Span> out;
  if (!orf) return out;
  int64_t offset = 0;
  for (const Span& e : exons) {
    const int64_t lo = std::max(orf->start, offset), hi = std::min(orf->end, offset + e.end - e.start);
    if (lo < hi) out.push_back({e.start + lo - offset, e.start + hi - offset});
    offset += e.end - e.start;
  }
  return out;
}

void DecodeChainStrand(const PositionScores& scores, const StrandChannels& ch, char strand,
                       const DecodeOptions& options, std::string_view sequence,
                       std::vector<DecodedTranscript>* out) {
  const int64_t n = scores.length;
  const SenseChannels sense = ReadSense(scores, ch, strand);
  const std::string sense_sequence = SenseSequence(sequence, strand);
  std::vector<std::vector<Span>> chains = ChainParse(sense, sense_sequence, options);
  if (options.alternative_starts) {
    for (auto& chain : AlternativeStartChains(sense, sense_sequence, options, chains)) {
      chains.push_back(std::move(chain));
    }
  }
  for (std::vector<Span>& exons : chains) {
    const int64_t start = exons.front().start, end = exons.back().end;
    if (end - start < options.min_transcript_bp) continue;
    double exon_sum = 0;
    int64_t exon_bases = 0;
    for (const Span& e : exons) {
      for (int64_t i = e.start; i < e.end; ++i) exon_sum += sense.exon[i];
      exon_bases += e.end - e.start;
    }
    if (exon_sum / static_cast<double>(exon_bases) < options.min_exon_mean) continue;
    DecodedTranscript t;
    t.strand = strand;
    if (options.orf_cds) {
      t.cds = OrfCds(exons, sense_sequence, sense.cds, options.min_orf_bp);
    } else {
      PositionScores coding(n, 1);
      for (int64_t i = 0; i < n; ++i) coding.at(i, 0) = static_cast<float>(sense.cds[i]);
      t.cds = CodingSpan(exons, coding, 0, options.cds_threshold);
    }
    double sum = 0;
    for (int64_t i = start; i < end; ++i) sum += std::max(sense.exon[i], sense.intron[i]);
    t.score = sum / static_cast<double>(end - start);
    if (strand == '-') {
      auto flip = [n](std::vector<Span>* spans) {
        std::reverse(spans->begin(), spans->end());
        for (Span& s : *spans) s = {n - s.end, n - s.start};
      };
      flip(&exons);
      flip(&t.cds);
    }
    t.exons = std::move(exons);
    t.span = {t.exons.front().start, t.exons.back().end};
    for (size_t e = 0; e + 1 < t.exons.size(); ++e) {
      t.introns.push_back({t.exons[e].end, t.exons[e + 1].start});
    }
    t.tss_position = strand == '+' ? t.span.start : t.span.end - 1;
    t.polya_position = strand == '+' ? t.span.end - 1 : t.span.start;
    out->push_back(std::move(t));
  }
}

}  // namespace

}  // namespace dnaserve::worker
