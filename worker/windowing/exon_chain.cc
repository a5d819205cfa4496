#include "worker/windowing/exon_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "common/sequence.h"

namespace dnaserve::worker {

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

// A node of ChainParse: its best score and where that came from.
struct ChainNode {
  int64_t position = 0;
  double value = -std::numeric_limits<double>::infinity();
  int from_kind = -1;  // exon origin of an end or donor: 0 a start, 1 an acceptor
  int64_t from = -1;   // index of that origin, of the donor (acceptor), of the end (start)
};

// What ChainParse and ChainParseFramed score: per-base prefix sums of the exon and intron
// scores, the candidate nodes and their terms. REQUIRES sense_sequence.size() == n > 0.
struct ChainInputs {
  std::vector<double> ce, ci;
  std::vector<ChainNode> starts, ends, donors, acceptors;
  std::vector<double> start_term, end_term, donor_term, acceptor_term;
};

ChainInputs BuildChainInputs(const SenseChannels& sense, std::string_view sense_sequence,
                             const DecodeOptions& o) {
  const int64_t n = static_cast<int64_t>(sense.exon.size());
  ChainInputs in;
  auto& ce = in.ce;
  auto& ci = in.ci;
  auto& starts = in.starts;
  auto& ends = in.ends;
  auto& donors = in.donors;
  auto& acceptors = in.acceptors;
  auto& start_term = in.start_term;
  auto& end_term = in.end_term;
  auto& donor_term = in.donor_term;
  auto& acceptor_term = in.acceptor_term;
  const double w = o.emission_weight, xw = o.exon_weight, pw = o.site_pass_weight;
  std::vector<bool> donor_motif(n, false), acceptor_motif(n, false);
  for (int64_t i = 0; i + 1 < n; ++i) {
    const char a = CanonicalBase(sense_sequence[i]), b = CanonicalBase(sense_sequence[i + 1]);
    donor_motif[i] = a == 'G' && (b == 'T' || b == 'C');
    if (i + 2 < n) acceptor_motif[i + 2] = a == 'A' && b == 'G';
  }
  // Acceptor probability of the base before i (an intron's last base when an exon resumes at i).
  std::vector<double> acceptor_before(n, 0.0);
  for (int64_t i = 1; i < n; ++i) acceptor_before[i] = sense.acceptor[i - 1];
  // Prefix sums of the per-base exon and intron scores.
  ce.assign(n + 1, 0.0);
  ci.assign(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double outside = 1.0 - sense.exon[i] - sense.intron[i];
    const double log_outside = std::log(std::max(outside, kProbabilityFloor));
    const double genic = std::max(sense.exon[i] + sense.intron[i], kProbabilityFloor);
    const double inside = w * (std::log(genic) - log_outside);
    double exon_score = inside + xw * std::log(std::max(sense.exon[i] / genic, kProbabilityFloor));
    double intron_score =
        inside + xw * std::log(std::max(sense.intron[i] / genic, kProbabilityFloor));
    exon_score = exon_score + (donor_motif[i] ? pw * FlooredLog(1.0 - sense.donor[i]) : 0.0);
    intron_score =
        intron_score + (acceptor_motif[i] ? pw * FlooredLog(1.0 - acceptor_before[i]) : 0.0);
    ce[i + 1] = ce[i] + exon_score;
    ci[i + 1] = ci[i] + intron_score;
  }

  std::vector<int64_t> start_positions = BlockPeaks(sense.tss, o.terminal_block_bp, o.terminal_min);
  if (start_positions.empty() || start_positions.front() != 0) {
    start_positions.insert(start_positions.begin(), 0);
  }
  std::vector<int64_t> end_positions =
      BlockPeaks(sense.transcript_end, o.terminal_block_bp, o.terminal_min);
  for (int64_t& p : end_positions) ++p;
  if (end_positions.empty() || end_positions.back() != n) end_positions.push_back(n);
  for (int64_t p : start_positions) {
    starts.push_back({p});
    start_term.push_back(p == 0 ? 0.0 : o.terminal_weight * FlooredLog(sense.tss[p]));
  }
  for (int64_t p : end_positions) {
    ends.push_back({p});
    end_term.push_back(p == n ? 0.0 : o.terminal_weight * FlooredLog(sense.transcript_end[p - 1]));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (donor_motif[i] && sense.donor[i] >= o.site_min) {
      donors.push_back({i});
      donor_term.push_back(
          o.site_weight * FlooredLog(sense.donor[i]) +
          (sense.donor_signal.empty() ? 0.0 : o.signal_weight * sense.donor_signal[i]));
    }
    if (acceptor_motif[i] && acceptor_before[i] >= o.site_min) {
      acceptors.push_back({i});
      acceptor_term.push_back(
          o.site_weight * FlooredLog(acceptor_before[i]) +
          (sense.acceptor_signal.empty() ? 0.0 : o.signal_weight * sense.acceptor_signal[i]));
    }
  }
  return in;
}

}  // namespace

std::vector<std::vector<Span>> ChainParse(const SenseChannels& sense,
                                          std::string_view sense_sequence,
                                          const DecodeOptions& o) {
  const int64_t n = static_cast<int64_t>(sense.exon.size());
  std::vector<std::vector<Span>> chains;
  // No sequence of the channels' length: no motifs to pair, so no chain.
  if (n == 0 || static_cast<int64_t>(sense_sequence.size()) != n) return chains;
  ChainInputs in = BuildChainInputs(sense, sense_sequence, o);
  const auto& ce = in.ce;
  const auto& ci = in.ci;
  auto& starts = in.starts;
  auto& ends = in.ends;
  auto& donors = in.donors;
  auto& acceptors = in.acceptors;
  const auto& start_term = in.start_term;
  const auto& end_term = in.end_term;
  const auto& donor_term = in.donor_term;
  const auto& acceptor_term = in.acceptor_term;
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

namespace {

// Coding states of ChainParseFramed's acceptor and donor nodes.
constexpr int kBeforeCds = 0, kAfterCds = 4, kCodingStates = 5;  // in it: 1 + codon position

int Mod3(int64_t x) { return static_cast<int>(((x % 3) + 3) % 3); }

// A framed node: per coding state its best score and where that came from.
struct FramedNode {
  int64_t position = 0;
  std::array<double, kCodingStates> value;
  // Per state: origin kind (0 start, 1 acceptor), origin index, origin state, and the mark: the
  // ATG of an exon entering the CDS, the stop codon's end of one leaving it, else -1. For an
  // acceptor only `from` (the donor) is used.
  std::array<int, kCodingStates> from_kind, from_state;
  std::array<int64_t, kCodingStates> from, mark;
  explicit FramedNode(int64_t p) : position(p) {
    value.fill(-std::numeric_limits<double>::infinity());
    from_kind.fill(-1), from_state.fill(-1), from.fill(-1), mark.fill(-1);
  }
};

// The best exon into one target, as a candidate of FramedNode fields.
struct ExonChoice {
  double value = -std::numeric_limits<double>::infinity();
  int kind = -1, state = -1;
  int64_t from = -1, mark = -1;
};

}  // namespace

std::vector<FramedChain> ChainParseFramed(const SenseChannels& sense,
                                          std::string_view sense_sequence,
                                          const DecodeOptions& o) {
  const int64_t n = static_cast<int64_t>(sense.exon.size());
  std::vector<FramedChain> chains;
  if (n == 0 || static_cast<int64_t>(sense_sequence.size()) != n) return chains;
  for (const auto& row : sense.coding) {
    if (static_cast<int64_t>(row.size()) != n) return chains;
  }
  const ChainInputs in = BuildChainInputs(sense, sense_sequence, o);
  const CodingTables tables = BuildCodingTables(sense_sequence, sense.coding);
  const auto& sums = tables.frame_sums;
  const auto& next_stop = tables.next_stop;
  const double none = -std::numeric_limits<double>::infinity();
  const double lw = o.length_weight, cw = o.coding_weight;
  // Starts are before the CDS: one value each (state kBeforeCds).
  std::vector<double> start_value(in.starts.size(), none);
  std::vector<int64_t> start_from(in.starts.size(), -1);
  std::vector<FramedNode> donors, acceptors;
  for (const auto& d : in.donors) donors.emplace_back(d.position);
  for (const auto& a : in.acceptors) acceptors.emplace_back(a.position);
  std::vector<ExonChoice> ends(in.ends.size());

  auto lower = [](const auto& nodes, int64_t position) {
    return static_cast<int64_t>(
        std::lower_bound(nodes.begin(), nodes.end(), position,
                         [](const auto& node, int64_t p) { return node.position < p; }) -
        nodes.begin());
  };
  auto upper = [](const auto& nodes, int64_t position) {
    return static_cast<int64_t>(
        std::upper_bound(nodes.begin(), nodes.end(), position,
                         [](int64_t p, const auto& node) { return p < node.position; }) -
        nodes.begin());
  };
  auto exon_base = [&](double value, int64_t from, int64_t p, double mean, double sd) {
    return value + (in.ce[p] - in.ce[from]) + lw * LengthPrior(p - from, mean, sd);
  };
  // One group of candidates: the best (first on ties) replaces `best` when strictly better.
  auto offer = [](ExonChoice* best, const ExonChoice& group_best) {
    if (group_best.kind >= 0 && group_best.value > best->value) *best = group_best;
  };
  // Per origin position: the best ATG of frame g in [max(origin, the last in-frame stop's end),
  // p - 3] (smallest prefix sum, leftmost on ties), -1: none.
  struct AtgRange {
    std::vector<int64_t> positions, best;  // ATGs in range, best ATG from each on
    int64_t floor = 0;
  };
  auto atg_range = [&](int64_t p, int g) {
    AtgRange r;
    r.floor = p >= 3 ? tables.previous_stop[g][p - 3] + 3 : 0;
    const auto& atgs = tables.atg[g];
    auto lo = std::lower_bound(atgs.begin(), atgs.end(), r.floor);
    auto hi = std::upper_bound(atgs.begin(), atgs.end(), p - 3);
    if (lo < hi) r.positions.assign(lo, hi);
    r.best.resize(r.positions.size());
    int64_t keep = static_cast<int64_t>(r.positions.size()) - 1;
    for (int64_t k = keep; k >= 0; --k) {
      if (sums[g][r.positions[k]] <= sums[g][r.positions[keep]]) keep = k;
      r.best[k] = r.positions[keep];
    }
    return r;
  };
  auto best_atg = [](const AtgRange& r, int64_t origin) -> int64_t {
    auto at = std::lower_bound(r.positions.begin(), r.positions.end(), std::max(origin, r.floor));
    return at == r.positions.end() ? -1 : r.best[at - r.positions.begin()];
  };

  // The best exon ending at p into `target` (a coding state, or -1: a transcript end).
  auto exon_into = [&](int64_t p, int target, double first_mean, double first_sd,
                       double inner_mean, double inner_sd) {
    const int64_t s_lo = lower(in.starts, p - o.max_exon_bp), s_hi = lower(in.starts, p);
    const int64_t a_lo = lower(acceptors, p - o.max_exon_bp), a_hi = lower(acceptors, p);
    ExonChoice best;
    // Exons outside the CDS: from starts (state kBeforeCds) or acceptors in `state`.
    auto plain = [&](int kind, int state) {
      ExonChoice g;
      const int64_t lo = kind == 0 ? s_lo : a_lo, hi = kind == 0 ? s_hi : a_hi;
      for (int64_t j = lo; j < hi; ++j) {
        const int64_t from = kind == 0 ? in.starts[j].position : acceptors[j].position;
        const double value = kind == 0 ? start_value[j] : acceptors[j].value[state];
        const double c = kind == 0 ? exon_base(value, from, p, first_mean, first_sd)
                                   : exon_base(value, from, p, inner_mean, inner_sd);
        if (g.kind < 0 || c > g.value) g = {c, kind, state, j, -1};
      }
      offer(&best, g);
    };
    if (target == kBeforeCds || target == -1) {
      plain(0, kBeforeCds);
      plain(1, kBeforeCds);
    }
    if (target == kAfterCds || target == -1) {
      plain(1, kAfterCds);
      for (int q = 0; q < 3; ++q) {  // leaving the CDS: its first in-frame stop lies inside
        ExonChoice g;
        for (int64_t j = a_lo; j < a_hi; ++j) {
          const int64_t a = acceptors[j].position;
          const int f = Mod3(a - q);
          const int64_t stop = next_stop[f][a];
          if (stop + 3 > p) continue;
          const double c = exon_base(acceptors[j].value[1 + q], a, p, inner_mean, inner_sd) +
                           cw * (sums[f][stop + 3] - sums[f][a]);
          if (g.kind < 0 || c > g.value) g = {c, 1, 1 + q, j, stop + 3};
        }
        offer(&best, g);
      }
    }
    if (target >= 1 && target <= 3) {
      const int f = Mod3(p - (target - 1));
      const AtgRange range = atg_range(p, f);
      for (int kind = 0; kind < 2; ++kind) {  // entering the CDS at an ATG
        ExonChoice g;
        const int64_t lo = kind == 0 ? s_lo : a_lo, hi = kind == 0 ? s_hi : a_hi;
        for (int64_t j = lo; j < hi; ++j) {
          const int64_t from = kind == 0 ? in.starts[j].position : acceptors[j].position;
          const int64_t atg = best_atg(range, from);
          if (atg < 0) continue;
          const double value = kind == 0 ? start_value[j] : acceptors[j].value[kBeforeCds];
          const double c = (kind == 0 ? exon_base(value, from, p, first_mean, first_sd)
                                      : exon_base(value, from, p, inner_mean, inner_sd)) +
                           cw * (sums[f][p] - sums[f][atg]);
          if (g.kind < 0 || c > g.value) g = {c, kind, kBeforeCds, j, atg};
        }
        offer(&best, g);
      }
      ExonChoice g;  // staying in it: no in-frame stop
      for (int64_t j = a_lo; j < a_hi; ++j) {
        const int64_t a = acceptors[j].position;
        if (next_stop[f][a] + 3 <= p) continue;
        const int q = Mod3(a - f);
        const double c = exon_base(acceptors[j].value[1 + q], a, p, inner_mean, inner_sd) +
                         cw * (sums[f][p] - sums[f][a]);
        if (g.kind < 0 || c > g.value) g = {c, 1, 1 + q, j, -1};
      }
      offer(&best, g);
    }
    return best;
  };

  std::vector<std::tuple<int64_t, int, int64_t>> events;
  for (size_t k = 0; k < in.ends.size(); ++k) events.emplace_back(in.ends[k].position, 0, k);
  for (size_t k = 0; k < donors.size(); ++k) events.emplace_back(donors[k].position, 1, k);
  for (size_t k = 0; k < acceptors.size(); ++k) events.emplace_back(acceptors[k].position, 2, k);
  for (size_t k = 0; k < in.starts.size(); ++k) events.emplace_back(in.starts[k].position, 3, k);
  std::sort(events.begin(), events.end());
  double best_before = 0.0;
  int64_t best_end = -1;
  std::vector<double> end_value(in.ends.size(), none);
  for (const auto& [p, kind, k] : events) {
    if (kind == 0) {
      const ExonChoice c = exon_into(p, -1, o.single_exon_log_mean, o.single_exon_log_sd,
                                     o.last_exon_log_mean, o.last_exon_log_sd);
      if (c.value > none) {
        ends[k] = c;
        end_value[k] = c.value + in.end_term[k];
        if (end_value[k] > best_before) best_before = end_value[k], best_end = k;
      }
    } else if (kind == 1) {
      FramedNode& node = donors[k];
      for (int target = 0; target < kCodingStates; ++target) {
        const ExonChoice c = exon_into(p, target, o.first_exon_log_mean, o.first_exon_log_sd,
                                       o.internal_exon_log_mean, o.internal_exon_log_sd);
        if (c.value > none) {
          node.value[target] = c.value + in.donor_term[k];
          node.from_kind[target] = c.kind, node.from[target] = c.from;
          node.from_state[target] = c.state, node.mark[target] = c.mark;
        }
      }
    } else if (kind == 2) {
      FramedNode& node = acceptors[k];
      const int64_t lo = lower(donors, p - o.max_intron_bp);
      const int64_t hi = upper(donors, p - kMinChainIntronBp);
      for (int state = 0; state < kCodingStates; ++state) {
        double best = none;
        int64_t at = -1;
        for (int64_t j = lo; j < hi; ++j) {
          const double candidate =
              donors[j].value[state] + (in.ci[p] - in.ci[donors[j].position]) +
              lw * LengthPrior(p - donors[j].position, o.intron_log_mean, o.intron_log_sd);
          if (at < 0 || candidate > best) best = candidate, at = j;
        }
        if (at >= 0 && best > none) {
          node.value[state] = best - o.splice_cost + in.acceptor_term[k];
          node.from[state] = at;
        }
      }
    } else {
      start_value[k] = best_before - o.start_cost + in.start_term[k];
      start_from[k] = best_end;
    }
  }
  for (int64_t end = best_end; end >= 0;) {
    FramedChain chain;
    int64_t cds_start = -1, cds_end = ends[end].mark;
    int64_t stop = in.ends[end].position;
    int kind = ends[end].kind, state = ends[end].state;
    int64_t index = ends[end].from;
    while (true) {
      if (kind == 0) {
        chain.exons.push_back({in.starts[index].position, stop});
        end = start_from[index];
        break;
      }
      chain.exons.push_back({acceptors[index].position, stop});
      const FramedNode& donor = donors[acceptors[index].from[state]];
      stop = donor.position;
      if (donor.mark[state] >= 0) {
        // This exon left the CDS (its end is after it) or entered it.
        (state == kBeforeCds || state == kAfterCds ? cds_end : cds_start) = donor.mark[state];
      }
      kind = donor.from_kind[state];
      index = donor.from[state];
      state = donor.from_state[state];
    }
    std::reverse(chain.exons.begin(), chain.exons.end());
    if (cds_start >= 0 && cds_end >= 0) chain.cds = Span{cds_start, cds_end};
    chains.push_back(std::move(chain));
  }
  std::reverse(chains.begin(), chains.end());
  return chains;
}

namespace {

// AlternativeStartChains over `parse` (ChainParse as FramedChains, or ChainParseFramed).
template <typename Parse>
std::vector<FramedChain> AlternativeStarts(const SenseChannels& sense,
                                           std::string_view sense_sequence,
                                           const DecodeOptions& o,
                                           const std::vector<std::vector<Span>>& chains,
                                           Parse parse) {
  std::vector<FramedChain> out;
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
      return v.empty() ? v : std::vector<double>(v.begin() + p, v.begin() + end);
    };
    SenseChannels sub{slice(sense.exon),  slice(sense.intron), slice(sense.cds),
                      std::vector<double>(end - p, 0.0), slice(sense.transcript_end),
                      slice(sense.donor), slice(sense.acceptor),
                      {slice(sense.coding[0]), slice(sense.coding[1]), slice(sense.coding[2])},
                      slice(sense.donor_signal), slice(sense.acceptor_signal)};
    std::vector<FramedChain> found = parse(sub, sense_sequence.substr(p, end - p), o);
    if (found.empty() || found.front().exons.front().start != 0) continue;
    FramedChain chain = std::move(found.front());
    for (Span& e : chain.exons) e = {e.start + p, e.end + p};
    if (chain.cds) chain.cds = Span{chain.cds->start + p, chain.cds->end + p};
    out.push_back(std::move(chain));
  }
  return out;
}

std::vector<FramedChain> UnframedChainParse(const SenseChannels& sense,
                                            std::string_view sense_sequence,
                                            const DecodeOptions& o) {
  std::vector<FramedChain> out;
  for (auto& exons : ChainParse(sense, sense_sequence, o)) out.push_back({std::move(exons), {}});
  return out;
}

}  // namespace

std::vector<std::vector<Span>> AlternativeStartChains(
    const SenseChannels& sense, std::string_view sense_sequence, const DecodeOptions& o,
    const std::vector<std::vector<Span>>& chains) {
  std::vector<std::vector<Span>> out;
  for (FramedChain& chain :
       AlternativeStarts(sense, sense_sequence, o, chains, UnframedChainParse)) {
    out.push_back(std::move(chain.exons));
  }
  return out;
}

std::optional<Span> BestOrf(std::string_view spliced, const std::vector<double>& coding,
                            int64_t min_orf_bp) {
  const int64_t n = static_cast<int64_t>(spliced.size());
  std::vector<double> cum(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    cum[i + 1] = cum[i] + (FlooredLog(coding[i]) - FlooredLog(1.0 - coding[i]));
  }
  auto codon_is = [&](int64_t k, const char* codon) {
    return CanonicalBase(spliced[k]) == codon[0] && CanonicalBase(spliced[k + 1]) == codon[1] &&
           CanonicalBase(spliced[k + 2]) == codon[2];
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

}  // namespace

void DecodeChainStrand(const PositionScores& scores, const StrandChannels& ch, char strand,
                       const DecodeOptions& options, std::string_view sequence,
                       std::vector<DecodedTranscript>* out) {
  const int64_t n = scores.length;
  SenseChannels sense = ReadSense(scores, ch, strand);
  const std::string sense_sequence = SenseSequence(sequence, strand);
  const bool framed = options.coding_weight > 0 && options.coding != nullptr;
  if (options.signal_weight > 0 && options.signal != nullptr) {
    sense.donor_signal = SignalScores(options.signal->donor, sense_sequence);
    sense.acceptor_signal = SignalScores(options.signal->acceptor, sense_sequence);
  }
  std::vector<FramedChain> chains;
  if (framed) {
    sense.coding = CodingLogRatios(*options.coding, sense_sequence);
    chains = ChainParseFramed(sense, sense_sequence, options);
  } else {
    chains = UnframedChainParse(sense, sense_sequence, options);
  }
  if (options.alternative_starts) {
    std::vector<std::vector<Span>> exon_chains;
    for (const auto& chain : chains) exon_chains.push_back(chain.exons);
    std::vector<FramedChain> more =
        framed ? AlternativeStarts(sense, sense_sequence, options, exon_chains, ChainParseFramed)
               : AlternativeStarts(sense, sense_sequence, options, exon_chains,
                                   UnframedChainParse);
    for (auto& chain : more) chains.push_back(std::move(chain));
  }
  for (FramedChain& chain : chains) {
    std::vector<Span>& exons = chain.exons;
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
    if (framed) {
      // The chain's ORF, cut at the exon boundaries (none: a non-coding chain).
      for (const Span& e : exons) {
        if (!chain.cds) break;
        const int64_t lo = std::max(e.start, chain.cds->start);
        const int64_t hi = std::min(e.end, chain.cds->end);
        if (lo < hi) t.cds.push_back({lo, hi});
      }
    } else if (options.orf_cds) {
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

}  // namespace dnaserve::worker
