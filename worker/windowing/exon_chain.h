// The exon-chain decoder of gene annotation: one strand read in its sense direction and parsed
// into whole transcripts, each a chain of exons between candidate splice sites, scored as a whole
// (DecodeTranscripts uses it when the manifest's decoder sets exon_chain and the model has
// splice-site channels). The stitched scores, channels and settings are annotation_decode.h's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker {

// It reads one strand in its sense direction (5' to 3'; the minus strand's channels and
// sequence reversed and complemented), so donors open introns and acceptors close them on both.

// Shortest intron the chain decoder considers (bp).
inline constexpr int64_t kMinChainIntronBp = 30;

// -z^2 / 2 for z = (ln length - log_mean) / log_sd: the log density of the log length less its
// maximum, so a segment of the typical length costs nothing and the number of segments is not
// itself penalised (the splice sites decide it). REQUIRES length > 0, log_sd > 0.
double LengthPrior(int64_t length, double log_mean, double log_sd);

// Per block [k block, (k + 1) block) of `values`, the first position of its maximum, when that
// is >= minimum; ascending. REQUIRES block > 0.
std::vector<int64_t> BlockPeaks(const std::vector<double>& values, int64_t block, double minimum);

// One strand's channels in its sense direction (double), as ChainParse reads them.
struct SenseChannels {
  std::vector<double> exon, intron, cds, tss, transcript_end, donor, acceptor;
  // CodingLogRatios of the sense sequence (empty without a coding model).
  std::array<std::vector<double>, 3> coding;
  // SignalScores of the sense sequence for donors and acceptors (empty without a signal model).
  std::vector<double> donor_signal, acceptor_signal;
};
SenseChannels ReadSense(const PositionScores& scores, const StrandChannels& channels, char strand);

// The sense sequence of a strand: `sequence` itself on '+', ReverseComplement(sequence) on '-'.
std::string SenseSequence(std::string_view sequence, char strand);

// The best parse of one strand into transcripts, each a chain of exons (sense coordinates,
// ascending), by dynamic programming over candidate positions:
//   transcript starts: 0 and BlockPeaks of TSS; ends: the sequence end and 1 + BlockPeaks of
//   transcript_end; donors (an intron's first base: GT/GC there, P(donor) >= site_min);
//   acceptors (the base after an intron: AG before it, P(acceptor) of its last base >=
//   site_min).
// A transcript is start, (exon, intron)*, exon, end. Its score: per base, exon and intron bases
// get emission_weight x (log P(exon or intron) - log P(outside)), plus exon_weight x the log of
// their share, exon bases passing a donor candidate's motif site_pass_weight x log(1 - P(donor))
// and intron bases passing an acceptor's likewise; per intron site_weight x (log P(donor) + log
// P(acceptor)) - splice_cost (plus signal_weight x the sites' donor_signal / acceptor_signal
// when those are filled) and length_weight x LengthPrior; per exon length_weight x
// LengthPrior by kind (first, internal, last, single); per transcript -start_cost +
// terminal_weight x (log P(TSS) at its first base + log P(transcript_end) at its last), the
// terminal terms 0 at the sequence edges. Bases outside transcripts score 0. Exons are at most
// max_exon_bp, introns kMinChainIntronBp..max_intron_bp. Ties keep the first (leftmost
// candidate; starts before acceptors). Probabilities are floored at 1e-4 before their logs.
// Empty when the sequence's length is not the channels'.
std::vector<std::vector<Span>> ChainParse(const SenseChannels& sense, std::string_view sense_sequence,
                                          const DecodeOptions& options);

// A chain of ChainParseFramed: its exons and, when it is coding, its CDS [ATG start, stop codon
// end) (sense coordinates; the stop codon included).
struct FramedChain {
  std::vector<Span> exons;
  std::optional<Span> cds;
};

// ChainParse with a reading frame kept through the CDS (coding_weight > 0, `sense.coding`
// filled). Acceptor and donor nodes carry a coding state: before the CDS (5' UTR, or a
// non-coding transcript), in it with the codon position of the next exonic base (3 states), or
// after it (3' UTR); starts are before it. An exon that enters the CDS holds an ATG in the frame
// of its end's state with no in-frame stop after it; one that stays in it holds no in-frame stop
// (the codon position runs on from its origin's); one that leaves it ends it at its first
// in-frame stop codon, and a transcript may end only before or after its CDS. Each exon adds
// coding_weight x the sum of its coding bases' log-ratios at their codon positions (the
// coding bases from the ATG or the exon start to the exon end or the stop codon's end;
// CodingTables); exons outside the CDS add 0, so a chain is coding only where that pays. Stop
// codons split by an intron are not seen, and a CDS within a single exon is not considered (such
// an exon counts as non-coding). Candidates are compared in this order, the first kept on ties:
// for a state before the CDS starts then acceptors before it; for after it (or an end) acceptors
// after it then those in it leaving it (codon position 0, 1, 2), after those before it for an end;
// for a state in it starts then acceptors before it entering, then acceptors in it staying.
std::vector<FramedChain> ChainParseFramed(const SenseChannels& sense,
                                          std::string_view sense_sequence,
                                          const DecodeOptions& options);

// Transcripts from the TSS peaks a parse passed by: the peaks are BlockPeaks of TSS (block
// terminal_block_bp) >= alternative_start_min, taken strongest first (leftmost on ties) and each
// dropped when within alternative_start_spacing_bp of one taken; in ascending order, each that
// lies farther than that from the first base of every chain in `chains` gets the first chain of
// ChainParse over [peak, peak + alternative_span_bp) (clipped to the sequence) with TSS set to 0
// there, so a chain can begin only at the peak (the sequence edge), when that chain begins at
// it. Sense coordinates; the chains may overlap those of `chains` (alternative first exons of a
// gene, or a gene the parse joined to a neighbour). Used by DecodeTranscripts when
// alternative_starts is set.
std::vector<std::vector<Span>> AlternativeStartChains(
    const SenseChannels& sense, std::string_view sense_sequence, const DecodeOptions& options,
    const std::vector<std::vector<Span>>& chains);

// In a spliced sense sequence, the ORF [ATG, stop codon] (stop included, half-open) with the
// largest sum of log(P(CDS) / (1 - P(CDS))) (`coding`, one per base), when that sum is > 0 and
// the ORF at least min_orf_bp; per frame and stop, the ATG with the smallest prefix sum since
// the frame's last stop. Ties keep the first found (frame 0, 1, 2; leftmost stop). nullopt:
// none.
std::optional<Span> BestOrf(std::string_view spliced, const std::vector<double>& coding,
                            int64_t min_orf_bp);

// One strand of DecodeTranscripts with the exon-chain decoder: the chains of ChainParseFramed
// (coding_weight > 0 and a coding model) or ChainParse, plus AlternativeStartChains when
// alternative_starts is set, as transcripts in plus-strand coordinates appended to `out`.
// REQUIRES sequence.size() == scores.length > 0 and the strand's splice-site channels.
void DecodeChainStrand(const PositionScores& scores, const StrandChannels& channels, char strand,
                       const DecodeOptions& options, std::string_view sequence,
                       std::vector<DecodedTranscript>* out);

}  // namespace dnaserve::worker
