// Gene annotation: per-position label probabilities stitched over the whole sequence (with the
// optional reverse-complement pass), then decoded into transcripts.
//
// The model emits 13 independent probabilities per base (kAnnotationLabels): intergenic, and for
// each strand exon, intron, CDS, UTR, TSS and transcript_end; optionally also splice sites
// (kSpliceSiteLabels), which the decoder then uses. Stitching and decoding need only the channel
// indices, resolved once from the manifest's output_labels.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/windowing/coding_model.h"
#include "worker/windowing/splice_signal.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {

inline constexpr std::array<std::string_view, 13> kAnnotationLabels = {
    "intergenic", "exon_plus",           "intron_plus",         "CDS_plus",     "UTR_plus",
    "TSS_plus",   "transcript_end_plus", "exon_minus",          "intron_minus", "CDS_minus",
    "UTR_minus",  "TSS_minus",           "transcript_end_minus"};

// Optional: a splice-site probability at the first (donor) and last (acceptor) base of an
// intron, in the strand's sense direction. Used only when all four are present.
inline constexpr std::array<std::string_view, 4> kSpliceSiteLabels = {
    "donor_plus", "acceptor_plus", "donor_minus", "acceptor_minus"};

struct StrandChannels {
  int exon = 0, intron = 0, cds = 0, utr = 0, tss = 0, transcript_end = 0;
  int donor = -1, acceptor = -1;  // -1: the model has no splice-site channels
};

struct AnnotationChannels {
  int count = 0;  // channels per position in the model output
  int intergenic = 0;
  StrandChannels plus;
  StrandChannels minus;
};

// Finds every name of kAnnotationLabels in `labels`; fails naming the first one missing. The
// splice-site channels are resolved when all of kSpliceSiteLabels are present.
StatusOr<AnnotationChannels> ResolveAnnotationChannels(const std::vector<std::string>& labels);

// Probabilities per base of the submitted (plus-strand) sequence: row-major [length x channels],
// and per base how far its values are trusted (`weights`, see EdgeWeight; 1 until placed).
struct PositionScores {
  PositionScores() = default;
  PositionScores(int64_t length_bp, int channel_count)
      : length(length_bp),
        channels(channel_count),
        values(static_cast<size_t>(length_bp) * channel_count, 0.0f),
        weights(static_cast<size_t>(length_bp), 1.0f) {}
  float at(int64_t position, int channel) const { return values[position * channels + channel]; }
  float& at(int64_t position, int channel) { return values[position * channels + channel]; }

  int64_t length = 0;
  int channels = 0;
  std::vector<float> values;
  std::vector<float> weights;
};

// A convolutional model sees only one side of the context of bases near its window's edges, so
// their rows are less reliable. Weight of row `offset` of a window holding `real` real bases:
// min(1, (distance to the nearer end + 1) / kEdgeRampBp).
inline constexpr int64_t kEdgeRampBp = 256;
float EdgeWeight(int64_t offset, int64_t real);

// Copies one window's rows ([context x channels], row-major) into `out`, dropping the N padding,
// and sets each base's weight to its row's EdgeWeight. A forward window lands at its own
// coordinates. A reverse-complement window is a window over ReverseComplement(sequence): its row
// j describes plus-strand base length - 1 - (start + j), and what it calls plus strand is the
// minus strand of the submitted sequence, so each strand-specific channel is swapped with its
// twin.
void PlaceWindow(const WindowSpan& window, const float* rows, const AnnotationChannels& channels,
                 bool reverse_complement, PositionScores* out);

// Per base, the weighted mean of the two passes: (w a + w' b) / (w + w') (float arithmetic),
// so a base near an edge of its forward window takes its value mostly from the reverse pass,
// whose windows are cut elsewhere (unless the length is a multiple of the context). Equal
// weights give the plain mean. The weights become w + w'. Channels c with `forward_only[c]`
// keep `out`'s values: the reverse pass did not compute them (StrandCompleteChannels).
// REQUIRES equal shapes.
void AverageInto(PositionScores* out, const PositionScores& other,
                 const std::vector<bool>& forward_only = {});

// Strand-complete channels (the manifest's `strand_complete_labels`, worker/README.md): a model
// may compute some channels for both strands of its window in every forward pass, e.g. a
// composite that runs a network on the window and again on its reverse complement. The reverse
// pass would only compute them again on windows cut elsewhere, so the worker asks the model to
// skip them there and takes them from the forward pass alone.
//
// A manifest's list is valid when it is non-empty, names each label once, names only
// `output_labels`, and names strand pairs: a label ending in `_plus` or `_minus` whose twin
// (the other suffix) is listed too, since what one pass computes for both strands is both
// strands' channels. Fails with a message naming the first offending label.
Status CheckStrandCompleteLabels(const std::vector<std::string>& listed,
                                 const std::vector<std::string>& output_labels);

// Per output channel: whether `listed` names it.
std::vector<bool> StrandCompleteChannels(const std::vector<std::string>& listed,
                                         const std::vector<std::string>& output_labels);

// Decoding parameters. The costs are in nats (natural-log units) against the per-base log
// probabilities. These defaults suit a model whose own channels carry every signal; a package
// tunes them for its outputs in its manifest's "decoder" object (worker/README.md), as
// annotation-human does (chosen on chr20:48,025,520-53,025,520, inside the training part of
// chr20, never on the held-out region).
struct DecodeOptions {
  // Weight of the per-base exon / intron / outside log probabilities. Below 1 the splice-site
  // channels, rather than a run of fuzzy per-base calls, decide where exons begin and end.
  double emission_weight = 1.0;
  double start_cost = 12.0;      // a transcript starting (and again ending) at a given base
  double splice_cost = 8.0;      // an exon -> intron or intron -> exon switch
  double terminal_weight = 1.0;  // weight of log P(TSS) / log P(transcript_end) at the ends
  double site_weight = 1.0;      // weight of log P(donor) / log P(acceptor) on a switch
  // Weight of log(1 - P(site)) for passing a base where the intron could begin or end without
  // switching: a confident site that the parse skips costs it (an exon skipped, an intron run
  // on through an exon). 0 ignores what the parse does not take.
  double site_pass_weight = 0.0;
  double cds_threshold = 0.5;
  int64_t min_transcript_bp = 100;  // shorter candidates are noise, not transcripts
  double min_exon_mean = 0.5;       // transcripts whose exon probability averages less are noise
  // A parse can only enter a transcript through an exon, so intron calls at a gene's edge come
  // with a base or two of "exon" in front; first and last exons shorter than this are dropped.
  int64_t min_terminal_exon_bp = 10;

  // The exon-chain decoder (ChainParse) instead of the per-base parse: used when the model has
  // splice-site channels and the sequence is given. A strand's transcripts are chains of
  // segments between candidate sites, scored as a whole (see ChainParse).
  bool exon_chain = false;
  double site_min = 0.01;           // a splice-site candidate: P(site) >= this, and its motif
  int64_t terminal_block_bp = 100;  // one TSS / transcript-end candidate per block (BlockPeaks)
  double terminal_min = 0.0;        // ... when its probability is >= this
  double length_weight = 1.0;       // weight of the segment length priors (LengthPrior)
  // Weight of log(P(exon) / P(exon or intron)) on exon bases (of the intron share on intron
  // bases): how much the per-base channels, rather than the sites, tell exon from intron.
  double exon_weight = 0.0;
  int64_t max_intron_bp = 100000;
  int64_t max_exon_bp = 20000;
  // Log-normal length priors (mean and sd of the natural log of the length in bp) by segment
  // kind; the defaults were measured on refGene chr20 before 48,025,520 (the training part).
  double intron_log_mean = 7.446, intron_log_sd = 1.526;
  double first_exon_log_mean = 5.321, first_exon_log_sd = 0.734;
  double internal_exon_log_mean = 4.763, internal_exon_log_sd = 0.537;
  double last_exon_log_mean = 6.885, last_exon_log_sd = 0.983;
  double single_exon_log_mean = 5.583, single_exon_log_sd = 1.495;
  // CDS = the best ORF of the spliced exons (BestOrf) instead of the CDS-probability span.
  bool orf_cds = false;
  int64_t min_orf_bp = 90;
  // Alternative starts (AlternativeStartChains): a transcript also from each confident TSS peak
  // that no chain of the parse starts near.
  bool alternative_starts = false;
  double alternative_start_min = 0.5;            // a peak: BlockPeaks of TSS >= this
  int64_t alternative_start_spacing_bp = 2000;   // peaks this close to a start are not used
  int64_t alternative_span_bp = 200000;          // how far downstream of its peak a chain goes
  // The coding content sensor (ChainParseFramed): with coding_weight > 0 and a model, the chain
  // decoder keeps a reading frame through the CDS and weighs its coding log-likelihood ratios
  // by coding_weight; the CDS is then the chain's ORF. `coding_model` is the table file named
  // by the manifest (package-relative); LoadManifest reads it into `coding`.
  double coding_weight = 0.0;
  std::string coding_model;
  std::shared_ptr<const CodingModel> coding;
  // Splice-site signal sensors (BuildChainInputs): with signal_weight > 0 and a model, each
  // candidate donor's and acceptor's term adds signal_weight x SignalScores of its sequence
  // window. `splice_signal` is the table file named by the manifest (package-relative);
  // LoadManifest reads it into `signal`.
  double signal_weight = 0.0;
  std::string splice_signal;
  std::shared_ptr<const SpliceSignal> signal;
};

// Every probability the decoders take the log of is floored at kProbabilityFloor first, so one
// confident zero never makes a parse impossible.
inline constexpr double kProbabilityFloor = 1e-4;
inline double FlooredLog(double p) { return std::log(std::max(p, kProbabilityFloor)); }

// Per-base states of one strand's parse.
enum class StrandState : uint8_t { kOutside = 0, kExon = 1, kIntron = 2 };

// Where the sequence allows a strand's introns to begin and end (GT-AG rule, plus GC donors),
// in plus coordinates read left to right: intron_may_begin[i] when bases i, i+1 can be an
// intron's first two (on '+' a donor GT/GC; on '-' the reverse complement of an acceptor, CT),
// exon_may_resume[i] when bases i-2, i-1 can be an intron's last two (on '+' an acceptor AG; on
// '-' the reverse complement of a donor, AC/GC). Case-insensitive.
struct SpliceMotifs {
  std::vector<bool> intron_may_begin;
  std::vector<bool> exon_may_resume;
};
SpliceMotifs FindSpliceMotifs(std::string_view sequence, char strand);

// The most probable parse of one strand (Viterbi) into outside / exon / intron, where a
// transcript is outside -> exon (-> intron -> exon)* -> outside. Per-base log scores are
// log(exon), log(intron) and log(1 - exon - intron), each floored at 1e-4 and multiplied by
// emission_weight; entering a transcript
// costs start_cost minus terminal_weight x log P(5' or 3' end) at its first base, leaving it the
// same at its last base (TSS on the 5' side, transcript_end on the 3' side: on the minus strand
// the leftmost base is the 3' end), and an exon/intron switch costs splice_cost. So one base of
// evidence never makes or breaks an exon, a strong TSS or transcript-end call splits two adjacent
// genes, and a gene can start or end at the sequence edges. With splice-site channels a switch
// also adds site_weight x log P(site) of the intron's edge base (its first base on the way in,
// its last on the way out; donor or acceptor by strand), and staying in an exon or intron where
// the switch was allowed adds site_pass_weight x log(1 - P(site)); with `motifs` (not null) introns only
// begin and end where the sequence allows. Ties keep the current state, then prefer outside,
// exon, intron.
std::vector<StrandState> ParseStrand(const PositionScores& scores, const StrandChannels& channels,
                                     char strand, const DecodeOptions& options,
                                     const SpliceMotifs* motifs = nullptr);

// One reading frame: the exonic bases from the first to the last exonic base whose CDS
// probability is >= threshold, cut at the exon boundaries (ascending). Empty when none is.
std::vector<Span> CodingSpan(const std::vector<Span>& exons, const PositionScores& scores,
                             int cds_channel, double threshold);

struct DecodedTranscript {
  char strand = '+';
  Span span;                   // first exon start to last exon end
  int64_t tss_position = 0;    // 0-based coordinate of the first transcribed base (5' end)
  int64_t polya_position = 0;  // 0-based coordinate of the last transcribed base (3' end)
  std::vector<Span> exons;     // ascending coordinates on both strands
  std::vector<Span> introns;   // the gaps between consecutive exons
  std::vector<Span> cds;       // CodingSpan of the exons
  double score = 0;            // mean of max(exon, intron) over the span
};

// Per strand: each maximal run of non-outside bases of ParseStrand is a candidate, its exons
// are its exon runs (less first and last exons shorter than min_terminal_exon_bp, repeatedly),
// and it is trimmed to its first and last exon. Candidates with no exon,
// shorter than min_transcript_bp or whose exonic bases' mean exon probability is below
// min_exon_mean are dropped. With a `sequence` (the scored one, same length) and a model with
// splice-site channels, introns follow its splice motifs; otherwise they may begin anywhere. Output is sorted by start, plus strand first on ties.
std::vector<DecodedTranscript> DecodeTranscripts(const PositionScores& scores,
                                                 const AnnotationChannels& channels,
                                                 const DecodeOptions& options,
                                                 std::string_view sequence = {});

// Transcript-type probabilities of one window, placed in plus-strand coordinates.
struct WindowTypeScores {
  Span span;
  std::vector<float> probabilities;  // one per manifest transcript_types entry
};

struct TypeCall {
  int index = 0;
  double score = 0;  // the chosen type's probability
};

// Averages the type probabilities of the windows overlapping `transcript`, weighted by overlap in
// bp, and picks the most probable type.
TypeCall AssignTranscriptType(const Span& transcript, const std::vector<WindowTypeScores>& windows);

}  // namespace dnaserve::worker
