#include "worker/windowing/annotation_decode.h"
#include "worker/windowing/exon_chain.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dnaserve::worker {
namespace {

AnnotationChannels Channels() {
  auto c = ResolveAnnotationChannels(
      std::vector<std::string>(kAnnotationLabels.begin(), kAnnotationLabels.end()));
  return *c;
}

void Fill(PositionScores* s, int channel, int64_t from, int64_t to, float value) {
  for (int64_t i = from; i < to; ++i) s->at(i, channel) = value;
}

CATCH_TEST_CASE("annotation channels resolve by name in any order", "[annotation]") {
  std::vector<std::string> labels(kAnnotationLabels.rbegin(), kAnnotationLabels.rend());
  auto c = ResolveAnnotationChannels(labels);
  CATCH_REQUIRE(c.ok());
  CATCH_CHECK(c->count == 13);
  CATCH_CHECK(c->intergenic == 12);
  CATCH_CHECK(c->plus.exon == 11);
  CATCH_CHECK(c->minus.transcript_end == 0);
  labels.pop_back();
  auto missing = ResolveAnnotationChannels(labels);
  CATCH_REQUIRE_FALSE(missing.ok());
  CATCH_CHECK(missing.status().message().find("\"intergenic\"") != std::string::npos);
}

CATCH_TEST_CASE("PlaceWindow maps reverse-complement windows back to plus coordinates",
                "[annotation]") {
  const AnnotationChannels ch = Channels();
  // Sequence of 6 bp, windows of 4 bp: [0, 4) and [4, 6) + 2 bp padding.
  auto windows = PlanWindows(6, 4, 4);
  // Row j of a window: value 10 * (window start + j) + 1 in the plus-exon channel.
  auto rows_for = [&](const WindowSpan& w) {
    std::vector<float> rows(4 * ch.count, 0.0f);
    for (int j = 0; j < 4; ++j) rows[j * ch.count + ch.plus.exon] = 10.0f * (w.start + j) + 1;
    return rows;
  };
  PositionScores forward(6, ch.count);
  PositionScores reverse(6, ch.count);
  for (const auto& w : windows) {
    auto rows = rows_for(w);
    PlaceWindow(w, rows.data(), ch, false, &forward);
    PlaceWindow(w, rows.data(), ch, true, &reverse);
  }
  for (int64_t i = 0; i < 6; ++i) {
    CATCH_CHECK(forward.at(i, ch.plus.exon) == 10.0f * i + 1);
    CATCH_CHECK(forward.at(i, ch.minus.exon) == 0.0f);
    // RC position j is plus position 5 - j, and its "plus exon" is our minus exon.
    CATCH_CHECK(reverse.at(5 - i, ch.minus.exon) == 10.0f * i + 1);
    CATCH_CHECK(reverse.at(5 - i, ch.plus.exon) == 0.0f);
  }
  // Both passes' rows weigh EdgeWeight of their offset; at plus position 0 the forward row is
  // offset 0 of a 4-base window (1/256) and the reverse row offset 1 of a 2-base one (1/256 too).
  CATCH_CHECK(forward.weights[0] == EdgeWeight(0, 4));
  CATCH_CHECK(reverse.weights[0] == EdgeWeight(1, 2));
  AverageInto(&forward, reverse);
  CATCH_CHECK(forward.at(0, ch.plus.exon) == 0.5f);
  CATCH_CHECK(forward.at(0, ch.minus.exon) == 25.5f);  // (0 + 51) / 2, from RC position 5
  CATCH_CHECK(forward.weights[0] == 2 * EdgeWeight(0, 4));
}

CATCH_TEST_CASE("EdgeWeight ramps up over kEdgeRampBp from both ends of a window", "[annotation]") {
  CATCH_CHECK(EdgeWeight(0, 4096) == Approx(1.0 / kEdgeRampBp));
  CATCH_CHECK(EdgeWeight(4095, 4096) == Approx(1.0 / kEdgeRampBp));
  CATCH_CHECK(EdgeWeight(127, 4096) == Approx(0.5));
  CATCH_CHECK(EdgeWeight(kEdgeRampBp - 1, 4096) == 1.0f);
  CATCH_CHECK(EdgeWeight(2048, 4096) == 1.0f);
  CATCH_CHECK(EdgeWeight(0, 1) == Approx(1.0 / kEdgeRampBp));  // a one-base window
}

CATCH_TEST_CASE("AverageInto weighs each pass by its rows' weights", "[annotation]") {
  const AnnotationChannels ch = Channels();
  PositionScores a(3, ch.count), b(3, ch.count);
  Fill(&a, ch.plus.exon, 0, 3, 0.8f);
  Fill(&b, ch.plus.exon, 0, 3, 0.2f);
  a.weights = {1.0f, 0.25f, 0.0f};
  b.weights = {1.0f, 0.75f, 1.0f};
  AverageInto(&a, b);
  CATCH_CHECK(a.at(0, ch.plus.exon) == Approx(0.5));   // equal weights: the plain mean
  CATCH_CHECK(a.at(1, ch.plus.exon) == Approx(0.35));  // 0.25 * 0.8 + 0.75 * 0.2
  CATCH_CHECK(a.at(2, ch.plus.exon) == Approx(0.2));   // a weightless row defers entirely
  CATCH_CHECK(a.weights[1] == 1.0f);
}

// A plus-strand track from a string, one character per base: 'e' exon (0.9), 'i' intron (0.9),
// 'x' exon 0.6 and intron 0.3 (a weak exon), '.' outside (0.02 each); 'T' and 'P' are outside
// bases that also carry a strong TSS / transcript_end call (0.9).
PositionScores Track(const std::string& pattern, const StrandChannels& s, int channels) {
  PositionScores scores(static_cast<int64_t>(pattern.size()), channels);
  for (size_t i = 0; i < pattern.size(); ++i) {
    float exon = 0.02f, intron = 0.02f;
    if (pattern[i] == 'e') exon = 0.9f;
    if (pattern[i] == 'i') intron = 0.9f;
    if (pattern[i] == 'x') exon = 0.6f, intron = 0.3f;
    scores.at(i, s.exon) = exon;
    scores.at(i, s.intron) = intron;
    scores.at(i, s.tss) = pattern[i] == 'T' ? 0.9f : 0.01f;
    scores.at(i, s.transcript_end) = pattern[i] == 'P' ? 0.9f : 0.01f;
  }
  return scores;
}

std::string Parsed(const std::vector<StrandState>& path) {
  std::string out;
  for (StrandState s : path)
    out += s == StrandState::kExon ? 'e' : s == StrandState::kIntron ? 'i' : '.';
  return out;
}

CATCH_TEST_CASE("ParseStrand smooths exon/intron calls into a transcript structure",
                "[annotation]") {
  const AnnotationChannels ch = Channels();
  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 4;
  // A clean two-exon gene.
  std::string gene = std::string(10, '.') + std::string(20, 'e') + std::string(30, 'i') +
                     std::string(20, 'e') + std::string(10, '.');
  CATCH_CHECK(Parsed(ParseStrand(Track(gene, ch.plus, ch.count), ch.plus, '+', options)) == gene);
  // One intron-looking base inside an exon and one exon-looking base inside the intron do not
  // pay two switches each: the structure is unchanged.
  std::string noisy = gene;
  noisy[15] = 'i';
  noisy[45] = 'e';
  CATCH_CHECK(Parsed(ParseStrand(Track(noisy, ch.plus, ch.count), ch.plus, '+', options)) == gene);
  // Weak-exon bases still beat the outside state when they are many.
  std::string weak = std::string(5, '.') + std::string(40, 'x') + std::string(5, '.');
  std::string expected = std::string(5, '.') + std::string(40, 'e') + std::string(5, '.');
  CATCH_CHECK(Parsed(ParseStrand(Track(weak, ch.plus, ch.count), ch.plus, '+', options)) ==
              expected);
  // A 2-base exon blip in the open is not worth a transcript's start and end.
  std::string blip = std::string(20, '.') + "ee" + std::string(20, '.');
  CATCH_CHECK(Parsed(ParseStrand(Track(blip, ch.plus, ch.count), ch.plus, '+', options)) ==
              std::string(42, '.'));
}

CATCH_TEST_CASE("ParseStrand splits adjacent genes at transcript_end and TSS calls",
                "[annotation]") {
  const AnnotationChannels ch = Channels();
  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 4;
  // Two exons with 4 intron-looking bases between them: one transcript with an intron...
  std::string joined = std::string(5, '.') + std::string(20, 'e') + "iiii" + std::string(20, 'e') +
                       std::string(5, '.');
  CATCH_CHECK(Parsed(ParseStrand(Track(joined, ch.plus, ch.count), ch.plus, '+', options)) ==
              joined);
  // ... unless the gap holds a strong 3' end then a strong TSS: two transcripts on '+'.
  std::string split = std::string(5, '.') + std::string(20, 'e') + "PiiT" + std::string(20, 'e') +
                      std::string(5, '.');
  // (P and T are outside-looking bases: the first gene ends before P, the second starts at the
  // base after T, where the TSS call is. On '+' the TSS is the leftmost base of a transcript.)
  std::string parsed = Parsed(ParseStrand(Track(split, ch.plus, ch.count), ch.plus, '+', options));
  CATCH_CHECK(parsed.substr(0, 25) == std::string(5, '.') + std::string(20, 'e'));
  CATCH_CHECK(parsed.substr(25, 4).find('i') == std::string::npos);
  CATCH_CHECK(parsed.substr(29) == std::string(20, 'e') + std::string(5, '.'));
  // On the minus strand the leftmost base is the 3' end: the same calls in the minus channels
  // with TSS and transcript_end exchanged split the same way.
  std::string mirrored = std::string(5, '.') + std::string(20, 'e') + "TiiP" +
                         std::string(20, 'e') + std::string(5, '.');
  CATCH_CHECK(Parsed(ParseStrand(Track(mirrored, ch.minus, ch.count), ch.minus, '-', options)) ==
              parsed);
  // Without terminal evidence (weight 0) ending and restarting costs more than crossing the
  // 4-base gap inside the transcript: one transcript again.
  options.terminal_weight = 0;
  options.start_cost = 10;
  const std::string one =
      Parsed(ParseStrand(Track(split, ch.plus, ch.count), ch.plus, '+', options));
  CATCH_CHECK(one.substr(5, 44).find('.') == std::string::npos);
}

std::vector<std::string> LabelsWithSites() {
  std::vector<std::string> labels(kAnnotationLabels.begin(), kAnnotationLabels.end());
  labels.insert(labels.end(), kSpliceSiteLabels.begin(), kSpliceSiteLabels.end());
  return labels;
}

CATCH_TEST_CASE("splice-site channels are used only when all four are present", "[annotation]") {
  auto with = ResolveAnnotationChannels(LabelsWithSites());
  CATCH_REQUIRE(with.ok());
  CATCH_CHECK(with->count == 17);
  CATCH_CHECK(with->plus.donor == 13);
  CATCH_CHECK(with->plus.acceptor == 14);
  CATCH_CHECK(with->minus.donor == 15);
  CATCH_CHECK(with->minus.acceptor == 16);
  auto partial = LabelsWithSites();
  partial.pop_back();
  auto without = ResolveAnnotationChannels(partial);
  CATCH_REQUIRE(without.ok());
  CATCH_CHECK(without->count == 16);
  CATCH_CHECK(without->plus.donor == -1);
  CATCH_CHECK(without->minus.donor == -1);
  CATCH_CHECK(Channels().plus.acceptor == -1);
}

CATCH_TEST_CASE("PlaceWindow swaps the splice-site channels with the strands", "[annotation]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  auto windows = PlanWindows(4, 4, 4);
  std::vector<float> rows(4 * ch.count, 0.0f);
  rows[1 * ch.count + ch.plus.donor] = 0.7f;  // RC base 1 = plus base 2
  rows[3 * ch.count + ch.minus.acceptor] = 0.3f;
  PositionScores out(4, ch.count);
  PlaceWindow(windows[0], rows.data(), ch, true, &out);
  CATCH_CHECK(out.at(2, ch.minus.donor) == 0.7f);
  CATCH_CHECK(out.at(2, ch.plus.donor) == 0.0f);
  CATCH_CHECK(out.at(0, ch.plus.acceptor) == 0.3f);
}

CATCH_TEST_CASE("FindSpliceMotifs marks GT/GC-AG introns per strand", "[annotation]") {
  //                    0123456789012
  const std::string seq = "AAGTCCCAGTTgc";
  auto plus = FindSpliceMotifs(seq, '+');
  // '+': an intron may begin at 2 and 8 (GT) and 11 (gc, lower case counts), an exon resume at
  // 3 and 9 (after AG at 1-2 and 7-8).
  std::vector<int> begins, resumes;
  for (size_t i = 0; i < seq.size(); ++i) {
    if (plus.intron_may_begin[i]) begins.push_back(static_cast<int>(i));
    if (plus.exon_may_resume[i]) resumes.push_back(static_cast<int>(i));
  }
  CATCH_CHECK(begins == std::vector<int>{2, 8, 11});
  CATCH_CHECK(resumes == std::vector<int>{3, 9});
  // '-': an intron (its leftmost base) may begin at CT (the acceptor AG read backwards), an exon
  // resume after AC or GC (the donor GT/GC read backwards).
  auto minus = FindSpliceMotifs("ACTTTTTACGA", '-');
  begins.clear();
  resumes.clear();
  for (size_t i = 0; i < 11; ++i) {
    if (minus.intron_may_begin[i]) begins.push_back(static_cast<int>(i));
    if (minus.exon_may_resume[i]) resumes.push_back(static_cast<int>(i));
  }
  CATCH_CHECK(begins == std::vector<int>{1});
  CATCH_CHECK(resumes == std::vector<int>{2, 9});  // after "AC" at 0-1 and at 7-8
  CATCH_CHECK(FindSpliceMotifs("", '+').intron_may_begin.empty());
}

CATCH_TEST_CASE("ParseStrand puts introns on splice motifs and follows the site channels",
                "[annotation]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 4;
  // The model's exon/intron edge is at 22 and 42, but the sequence has GT at 20 and AG ending at
  // 44: the intron becomes [20, 44).
  std::string pattern = std::string(5, '.') + std::string(17, 'e') + std::string(20, 'i') +
                        std::string(18, 'e') + std::string(5, '.');
  PositionScores scores = Track(pattern, ch.plus, ch.count);
  std::string sequence(pattern.size(), 'C');
  sequence.replace(20, 2, "GT");
  sequence.replace(42, 2, "AG");
  SpliceMotifs motifs = FindSpliceMotifs(sequence, '+');
  for (int64_t i = 0; i < scores.length; ++i) {
    scores.at(i, ch.plus.donor) = 0.5f;
    scores.at(i, ch.plus.acceptor) = 0.5f;
  }
  std::string parsed = Parsed(ParseStrand(scores, ch.plus, '+', options, &motifs));
  CATCH_CHECK(parsed == std::string(5, '.') + std::string(15, 'e') + std::string(24, 'i') +
                            std::string(16, 'e') + std::string(5, '.'));
  // Two GT candidates, at 20 and 24: a strong donor call at 24 and a weak one at 20 pick 24.
  sequence.replace(24, 2, "GT");
  motifs = FindSpliceMotifs(sequence, '+');
  scores.at(20, ch.plus.donor) = 0.001f;
  scores.at(24, ch.plus.donor) = 0.99f;
  parsed = Parsed(ParseStrand(scores, ch.plus, '+', options, &motifs));
  CATCH_CHECK(parsed.substr(0, 25) == std::string(5, '.') + std::string(19, 'e') + "i");
  // Without motifs the edges stay where the exon/intron calls change.
  parsed = Parsed(ParseStrand(scores, ch.plus, '+', options, nullptr));
  CATCH_CHECK(parsed.substr(20, 24) == std::string(2, 'e') + std::string(20, 'i') + "ee");
}

CATCH_TEST_CASE("a low emission_weight lets the site channels place the introns", "[annotation]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 0;
  // The per-base calls put the intron at [25, 40); the site channels say [20, 45) with
  // confidence, and give every other base 1e-3.
  std::string pattern = std::string(5, '.') + std::string(20, 'e') + std::string(15, 'i') +
                        std::string(20, 'e') + std::string(5, '.');
  PositionScores scores = Track(pattern, ch.plus, ch.count);
  for (int64_t i = 0; i < scores.length; ++i) {
    scores.at(i, ch.plus.donor) = i == 20 ? 0.9f : 0.001f;
    scores.at(i, ch.plus.acceptor) = i == 44 ? 0.9f : 0.001f;
  }
  // At full weight ten bases of confident exon calls outweigh the sites' evidence ...
  std::string parsed = Parsed(ParseStrand(scores, ch.plus, '+', options));
  CATCH_CHECK(parsed.substr(5, 35) == std::string(20, 'e') + std::string(15, 'i'));
  // ... at a low weight the sites decide where the intron begins and ends.
  options.emission_weight = 0.05;
  parsed = Parsed(ParseStrand(scores, ch.plus, '+', options));
  CATCH_CHECK(parsed.substr(10, 45) ==
              std::string(10, 'e') + std::string(25, 'i') + std::string(10, 'e'));
}

CATCH_TEST_CASE("site_pass_weight makes skipping a confident exon cost", "[annotation]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 0;
  options.emission_weight = 0.05;
  // Three exons, the middle one [40, 50) with confident sites on both sides, but the per-base
  // calls see only intron there.
  std::string pattern = std::string(5, '.') + std::string(15, 'e') + std::string(45, 'i') +
                        std::string(15, 'e') + std::string(5, '.');
  PositionScores scores = Track(pattern, ch.plus, ch.count);
  for (int64_t i = 0; i < scores.length; ++i) {
    const bool intron_start = i == 20 || i == 50;  // first bases of the two introns
    const bool intron_end = i == 39 || i == 64;    // last bases
    scores.at(i, ch.plus.donor) = intron_start ? 0.95f : 0.0001f;
    scores.at(i, ch.plus.acceptor) = intron_end ? 0.95f : 0.0001f;
  }
  // Taking the middle exon costs two switches at -log(0.95) plus ten bases of weak exon
  // evidence; skipping it costs nothing: it is skipped ...
  std::string parsed = Parsed(ParseStrand(scores, ch.plus, '+', options));
  CATCH_CHECK(parsed.substr(20, 45) == std::string(45, 'i'));
  // ... until passing a 0.95 site costs log(0.05) each time.
  options.site_pass_weight = 1.0;
  parsed = Parsed(ParseStrand(scores, ch.plus, '+', options));
  CATCH_CHECK(parsed.substr(15, 55) == std::string(5, 'e') + std::string(20, 'i') +
                                           std::string(10, 'e') + std::string(15, 'i') +
                                           std::string(5, 'e'));
}

CATCH_TEST_CASE("CodingSpan is one reading frame across exons", "[annotation]") {
  const AnnotationChannels ch = Channels();
  PositionScores s(100, ch.count);
  std::vector<Span> exons = {{10, 20}, {40, 50}, {70, 90}};
  Fill(&s, ch.plus.cds, 15, 18, 0.9f);
  Fill(&s, ch.plus.cds, 75, 80, 0.9f);  // the middle exon has no CDS call but lies between
  Fill(&s, ch.plus.cds, 25, 35, 0.9f);  // intronic calls do not count
  auto cds = CodingSpan(exons, s, ch.plus.cds, 0.5);
  CATCH_REQUIRE(cds.size() == 3);
  CATCH_CHECK(cds[0] == Span{15, 20});
  CATCH_CHECK(cds[1] == Span{40, 50});
  CATCH_CHECK(cds[2] == Span{70, 80});
  CATCH_CHECK(CodingSpan(exons, s, ch.plus.cds, 0.95).empty());
  CATCH_CHECK(CodingSpan({{40, 50}}, s, ch.plus.cds, 0.5).empty());
}

CATCH_TEST_CASE("DecodeTranscripts builds exons, introns and CDS per strand", "[annotation]") {
  const AnnotationChannels ch = Channels();
  PositionScores s(160, ch.count);
  // Everything starts as clearly outside on both strands.
  for (int64_t i = 0; i < 160; ++i) {
    for (const StrandChannels* strand : {&ch.plus, &ch.minus}) {
      s.at(i, strand->exon) = 0.02f;
      s.at(i, strand->intron) = 0.02f;
    }
  }
  // Plus strand: intron calls [15, 35), exon [35, 50), intron [50, 70), exon [70, 90); CDS over
  // [40, 80), of which only exonic bases count. A parse can only enter a transcript through an
  // exon, so it enters the leading intron calls through a 1-base exon at 15, which the minimum
  // terminal exon length removes again: the transcript starts at its first real exon.
  Fill(&s, ch.plus.intron, 15, 35, 0.9f);
  Fill(&s, ch.plus.exon, 35, 50, 0.9f);
  Fill(&s, ch.plus.intron, 50, 70, 0.9f);
  Fill(&s, ch.plus.exon, 70, 90, 0.9f);
  Fill(&s, ch.plus.cds, 40, 80, 0.6f);
  // Minus strand: one exon [100, 124).
  Fill(&s, ch.minus.exon, 100, 124, 0.8f);
  // A weak minus-strand stretch that the parse takes but whose exon mean (0.45) is too low.
  Fill(&s, ch.minus.exon, 140, 160, 0.45f);
  Fill(&s, ch.minus.intron, 140, 160, 0.45f);

  DecodeOptions options;
  options.start_cost = 6;
  options.splice_cost = 4;
  options.min_transcript_bp = 10;
  auto transcripts = DecodeTranscripts(s, ch, options);
  CATCH_REQUIRE(transcripts.size() == 2);
  const auto& plus = transcripts[0];
  CATCH_CHECK(plus.strand == '+');
  CATCH_CHECK(plus.span == Span{35, 90});
  CATCH_CHECK(plus.tss_position == 35);
  CATCH_CHECK(plus.polya_position == 89);
  CATCH_REQUIRE(plus.exons.size() == 2);
  CATCH_CHECK(plus.exons[0] == Span{35, 50});
  CATCH_CHECK(plus.exons[1] == Span{70, 90});
  CATCH_REQUIRE(plus.introns.size() == 1);
  CATCH_CHECK(plus.introns[0] == Span{50, 70});
  CATCH_REQUIRE(plus.cds.size() == 2);
  CATCH_CHECK(plus.cds[0] == Span{40, 50});
  CATCH_CHECK(plus.cds[1] == Span{70, 80});
  CATCH_CHECK(plus.score == Approx(0.9));

  const auto& minus = transcripts[1];
  CATCH_CHECK(minus.strand == '-');
  CATCH_CHECK(minus.span == Span{100, 124});
  CATCH_CHECK(minus.tss_position == 123);  // 5' end of a minus-strand transcript
  CATCH_CHECK(minus.polya_position == 100);
  CATCH_CHECK(minus.introns.empty());
  CATCH_CHECK(minus.cds.empty());

  // Without the terminal-exon minimum the 1-base entry exon stays and becomes the TSS.
  options.min_terminal_exon_bp = 1;
  CATCH_CHECK(DecodeTranscripts(s, ch, options)[0].span.start == 15);
  CATCH_CHECK(DecodeTranscripts(s, ch, options)[0].exons.size() == 3);
  options.min_terminal_exon_bp = 10;
  // A higher minimum length drops the 24 bp minus transcript; a higher exon-mean bar drops both.
  options.min_transcript_bp = 30;
  CATCH_CHECK(DecodeTranscripts(s, ch, options).size() == 1);
  options.min_exon_mean = 0.95;
  CATCH_CHECK(DecodeTranscripts(s, ch, options).empty());
}

CATCH_TEST_CASE("transcript type is the overlap-weighted mean of window types", "[annotation]") {
  std::vector<WindowTypeScores> windows = {{{0, 10}, {0.8f, 0.2f}}, {{10, 20}, {0.2f, 0.8f}}};
  TypeCall call = AssignTranscriptType({5, 20}, windows);
  CATCH_CHECK(call.index == 1);
  CATCH_CHECK(call.score == Approx((5 * 0.2 + 10 * 0.8) / 15.0));
  call = AssignTranscriptType({0, 8}, windows);
  CATCH_CHECK(call.index == 0);
  CATCH_CHECK(call.score == Approx(0.8));
  call = AssignTranscriptType({30, 40}, windows);  // no overlap
  CATCH_CHECK(call.score == 0.0);
}

// ------------------------------------------------------------------ the exon-chain decoder

CATCH_TEST_CASE("LengthPrior is 0 at the typical length and falls off in log space",
                "[annotation]") {
  CATCH_CHECK(LengthPrior(100, std::log(100.0), 1.0) == Approx(0.0).margin(1e-12));
  CATCH_CHECK(LengthPrior(272, std::log(100.0), 1.0) == Approx(-0.5 * std::pow(std::log(2.72), 2)));
  // One sd either way (x e, x 1/e) costs the same half nat.
  CATCH_CHECK(LengthPrior(1000, std::log(1000.0), 0.5) == Approx(0.0).margin(1e-12));
  const double longer =
      LengthPrior(static_cast<int64_t>(std::round(100 * std::exp(1.0))), std::log(100.0), 1.0);
  const double shorter =
      LengthPrior(static_cast<int64_t>(std::round(100 / std::exp(1.0))), std::log(100.0), 1.0);
  CATCH_CHECK(longer == Approx(-0.5).epsilon(0.01));
  CATCH_CHECK(shorter == Approx(-0.5).epsilon(0.02));
}

CATCH_TEST_CASE("BlockPeaks keeps each block's first maximum above the minimum", "[annotation]") {
  const std::vector<double> values = {0.1, 0.5, 0.5, 0.2, /**/ 0.0, 0.01, 0.0, 0.0, /**/ 0.3, 0.9};
  CATCH_CHECK(BlockPeaks(values, 4, 0.0) == std::vector<int64_t>{1, 5, 9});
  CATCH_CHECK(BlockPeaks(values, 4, 0.05) == std::vector<int64_t>{1, 9});
  CATCH_CHECK(BlockPeaks(values, 100, 0.0) == std::vector<int64_t>{9});
  CATCH_CHECK(BlockPeaks({}, 4, 0.0).empty());
}

CATCH_TEST_CASE("BestOrf picks the ATG..stop frame the CDS channel supports", "[annotation]") {
  // ATG at 3, in-frame TAA at 99: ORF [3, 102). Another ORF in frame 1, [22, 121), less
  // supported by the channel.
  std::string spliced(130, 'C');
  spliced.replace(3, 3, "ATG");
  spliced.replace(99, 3, "TAA");
  spliced.replace(22, 3, "ATG");
  spliced.replace(118, 3, "TGA");
  std::vector<double> coding(spliced.size(), 0.1);
  for (int i = 3; i < 102; ++i) coding[i] = 0.9;
  auto orf = BestOrf(spliced, coding, 90);
  CATCH_REQUIRE(orf.has_value());
  CATCH_CHECK(*orf == Span{3, 102});
  // The channel now backs the other frame.
  for (int i = 0; i < 130; ++i) coding[i] = i >= 22 && i < 121 ? 0.9 : 0.1;
  CATCH_CHECK(*BestOrf(spliced, coding, 90) == Span{22, 121});
  // Too short for the minimum, or no support at all: none.
  CATCH_CHECK(!BestOrf(spliced, coding, 120).has_value());
  CATCH_CHECK(!BestOrf(spliced, std::vector<double>(spliced.size(), 0.1), 90).has_value());
  // Lower case counts; no ATG: none.
  std::string lower = spliced;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  CATCH_CHECK(*BestOrf(lower, coding, 90) == Span{22, 121});
  CATCH_CHECK(!BestOrf(std::string(130, 'C'), coding, 90).has_value());
}

// A three-exon gene in sense coordinates (length 400): exons [50, 100), [200, 260), [320, 360);
// GT donors at 100 and 260, AG before 200 and 320; confident sites, TSS at 50, end at 359; an
// ORF from the ATG at 60 to the TAA at 331 (spliced [10, 124)), backed by the CDS channel.
struct SenseGene {
  SenseChannels sense;
  std::string sequence;
};

SenseGene ThreeExonGene() {
  const int64_t n = 400;
  SenseGene g;
  g.sequence = std::string(n, 'C');
  g.sequence.replace(100, 2, "GT");
  g.sequence.replace(260, 2, "GT");
  g.sequence.replace(198, 2, "AG");
  g.sequence.replace(318, 2, "AG");
  g.sequence.replace(60, 3, "ATG");
  g.sequence.replace(331, 3, "TAA");
  SenseChannels& s = g.sense;
  for (auto* v : {&s.exon, &s.intron, &s.cds, &s.tss, &s.transcript_end, &s.donor, &s.acceptor}) {
    v->assign(n, 0.01);
  }
  for (const Span& e : {Span{50, 100}, Span{200, 260}, Span{320, 360}}) {
    for (int64_t i = e.start; i < e.end; ++i) s.exon[i] = 0.9, s.intron[i] = 0.05;
  }
  for (const Span& in : {Span{100, 200}, Span{260, 320}}) {
    for (int64_t i = in.start; i < in.end; ++i) s.intron[i] = 0.9, s.exon[i] = 0.05;
  }
  for (const Span& c : {Span{60, 100}, Span{200, 260}, Span{320, 334}}) {
    for (int64_t i = c.start; i < c.end; ++i) s.cds[i] = 0.9;
  }
  s.tss[50] = 0.9;
  s.transcript_end[359] = 0.9;
  s.donor[100] = s.donor[260] = 0.95;
  s.acceptor[199] = s.acceptor[319] = 0.95;  // an intron's last base
  return g;
}

// The first chain of a parse (none: empty).
std::vector<Span> First(const std::vector<std::vector<Span>>& chains) {
  return chains.empty() ? std::vector<Span>{} : chains.front();
}

DecodeOptions ChainOptions() {
  DecodeOptions o;
  o.exon_chain = true;
  o.emission_weight = 0.1;
  o.start_cost = 4;
  o.splice_cost = 0;
  o.terminal_weight = 1;
  o.terminal_block_bp = 50;
  o.length_weight = 0;
  o.site_pass_weight = 1;
  o.min_orf_bp = 90;
  return o;
}

CATCH_TEST_CASE("ChainParse pairs donors with acceptors into one exon chain", "[annotation]") {
  SenseGene g = ThreeExonGene();
  DecodeOptions o = ChainOptions();
  auto chains = ChainParse(g.sense, g.sequence, o);
  CATCH_REQUIRE(chains.size() == 1);
  CATCH_CHECK(chains[0] == std::vector<Span>{{50, 100}, {200, 260}, {320, 360}});

  // Without its motif a site is no candidate: an "AC" instead of the AG before 200 makes the
  // middle exon unreachable, so the chain skips it.
  SenseGene no_motif = g;
  no_motif.sequence.replace(198, 2, "AC");
  CATCH_CHECK(First(ChainParse(no_motif.sense, no_motif.sequence, o)) ==
              std::vector<Span>{{50, 100}, {320, 360}});

  // Weak sites around the middle exon: the sites alone skip it ...
  g.sense.acceptor[199] = 0.02;
  g.sense.donor[260] = 0.02;
  CATCH_CHECK(First(ChainParse(g.sense, g.sequence, o)) ==
              std::vector<Span>{{50, 100}, {320, 360}});
  // ... the per-base exon calls (exon_weight) bring it back.
  o.exon_weight = 1.0;
  CATCH_CHECK(First(ChainParse(g.sense, g.sequence, o)).size() == 3);

  // An intron prior far from these introns (about 1 Mb) with a heavy weight: one exon instead.
  o.exon_weight = 0;
  g.sense.acceptor[199] = g.sense.donor[260] = 0.95;
  o.length_weight = 50;
  o.intron_log_mean = std::log(1e6);
  o.intron_log_sd = 1.0;
  CATCH_CHECK(First(ChainParse(g.sense, g.sequence, o)) == std::vector<Span>{{50, 360}});

  // Nothing genic: no transcript.
  SenseChannels empty = g.sense;
  for (auto* v : {&empty.exon, &empty.intron}) v->assign(v->size(), 0.02);
  for (auto* v : {&empty.donor, &empty.acceptor}) v->assign(v->size(), 0.0);
  CATCH_CHECK(ChainParse(empty, g.sequence, ChainOptions()).empty());
  CATCH_CHECK(ChainParse(SenseChannels{}, "", ChainOptions()).empty());
  CATCH_CHECK(ChainParse(g.sense, g.sequence.substr(0, 100), ChainOptions()).empty());
}

CATCH_TEST_CASE("splice signal scores weigh each candidate site's term", "[annotation]") {
  SenseGene g = ThreeExonGene();
  DecodeOptions o = ChainOptions();
  // Weak network sites around the middle exon: the chain skips it.
  g.sense.acceptor[199] = 0.02;
  g.sense.donor[260] = 0.02;
  const std::vector<Span> skipped{{50, 100}, {320, 360}};
  CATCH_REQUIRE(First(ChainParse(g.sense, g.sequence, o)) == skipped);
  // Strong sequence signals at those two sites (an acceptor at the exon's first base, a donor
  // at the intron's): ignored at signal_weight 0, they bring the exon back at weight 1.
  const int64_t n = static_cast<int64_t>(g.sequence.size());
  g.sense.donor_signal.assign(n, 0.0);
  g.sense.acceptor_signal.assign(n, 0.0);
  g.sense.acceptor_signal[200] = 6.0;
  g.sense.donor_signal[260] = 6.0;
  CATCH_CHECK(First(ChainParse(g.sense, g.sequence, o)) == skipped);
  o.signal_weight = 1.0;
  CATCH_CHECK(First(ChainParse(g.sense, g.sequence, o)) ==
              std::vector<Span>{{50, 100}, {200, 260}, {320, 360}});
  // A signal against confident network sites takes the exon away again.
  SenseGene h = ThreeExonGene();
  h.sense.donor_signal.assign(n, 0.0);
  h.sense.acceptor_signal.assign(n, 0.0);
  h.sense.acceptor_signal[200] = -20.0;
  CATCH_CHECK(First(ChainParse(h.sense, h.sequence, o)) == skipped);
  o.signal_weight = 0.0;
  CATCH_CHECK(First(ChainParse(h.sense, h.sequence, o)).size() == 3);
}

CATCH_TEST_CASE("AlternativeStartChains starts a chain at each TSS peak no chain starts near",
                "[annotation]") {
  SenseGene g = ThreeExonGene();
  DecodeOptions o = ChainOptions();
  o.alternative_start_min = 0.5;
  o.alternative_start_spacing_bp = 20;
  const std::vector<Span> gene = {{50, 100}, {200, 260}, {320, 360}};
  // No chain yet: the gene from its TSS peak at 50.
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {}) ==
              std::vector<std::vector<Span>>{gene});
  // A chain starting within the spacing of the peak: nothing; farther: the gene again.
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {{{60, 100}}}).empty());
  o.alternative_start_spacing_bp = 5;
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {{{60, 100}}}) ==
              std::vector<std::vector<Span>>{gene});
  // A peak below the minimum is none.
  o.alternative_start_min = 0.95;
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {}).empty());
  // A second peak inside the second intron, the gene already parsed: an alternative first exon
  // from that peak to the end (no donor follows it).
  o.alternative_start_min = 0.5;
  o.alternative_start_spacing_bp = 20;
  g.sense.tss[300] = 0.8;
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {gene}) ==
              std::vector<std::vector<Span>>{{{300, 360}}});
  // Two peaks within the spacing of each other: only the stronger one is tried.
  o.alternative_start_spacing_bp = 300;
  CATCH_CHECK(AlternativeStartChains(g.sense, g.sequence, o, {}) ==
              std::vector<std::vector<Span>>{gene});
  CATCH_CHECK(AlternativeStartChains(SenseChannels{}, "", o, {}).empty());
}

// Scores that hold `sense` as a gene on the minus strand (sense base i at n - 1 - i) and a weak
// plus strand, as the worker's reverse-complement pass would have averaged them.
PositionScores MinusStrandScores(const SenseChannels& s, const AnnotationChannels& ch) {
  const int64_t n = static_cast<int64_t>(s.exon.size());
  PositionScores scores(n, ch.count);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = n - 1 - i;
    for (auto [channel, value] : {std::pair{ch.minus.exon, s.exon[i]},
                                  {ch.minus.intron, s.intron[i]},
                                  {ch.minus.cds, s.cds[i]},
                                  {ch.minus.tss, s.tss[i]},
                                  {ch.minus.transcript_end, s.transcript_end[i]},
                                  {ch.minus.donor, s.donor[i]},
                                  {ch.minus.acceptor, s.acceptor[i]}}) {
      scores.at(p, channel) = static_cast<float>(value);
    }
    scores.at(i, ch.plus.exon) = scores.at(i, ch.plus.intron) = 0.02f;
  }
  return scores;
}

CATCH_TEST_CASE("an exon chain on the minus strand comes back in plus coordinates with its ORF",
                "[annotation]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  const SenseGene g = ThreeExonGene();
  const int64_t n = static_cast<int64_t>(g.sequence.size());
  const PositionScores scores = MinusStrandScores(g.sense, ch);
  const std::string plus_sequence = SenseSequence(g.sequence, '-');
  CATCH_CHECK(SenseSequence(plus_sequence, '-') == g.sequence);
  DecodeOptions o = ChainOptions();
  o.orf_cds = true;
  o.min_exon_mean = 0.5;
  auto transcripts = DecodeTranscripts(scores, ch, o, plus_sequence);
  CATCH_REQUIRE(transcripts.size() == 1);
  const DecodedTranscript& t = transcripts[0];
  CATCH_CHECK(t.strand == '-');
  auto mirror = [n](int64_t a, int64_t b) { return Span{n - b, n - a}; };
  CATCH_CHECK(t.exons == std::vector<Span>{mirror(320, 360), mirror(200, 260), mirror(50, 100)});
  CATCH_CHECK(t.introns == std::vector<Span>{mirror(260, 320), mirror(100, 200)});
  CATCH_CHECK(t.span == Span{n - 360, n - 50});
  CATCH_CHECK(t.tss_position == n - 51);  // sense base 50
  CATCH_CHECK(t.cds == std::vector<Span>{mirror(320, 334), mirror(200, 260), mirror(60, 100)});

  // Without the sequence (or with exon_chain off) the per-base parse decodes instead.
  o.exon_chain = false;
  auto parsed = DecodeTranscripts(scores, ch, o, plus_sequence);
  CATCH_CHECK(!parsed.empty());
  // The CDS-probability span instead of the ORF: from the first to the last CDS call.
  o.exon_chain = true;
  o.orf_cds = false;
  CATCH_CHECK(DecodeTranscripts(scores, ch, o, plus_sequence)[0].cds.front() == mirror(320, 334));
  // A higher exon-mean bar drops it.
  o.min_exon_mean = 0.95;
  CATCH_CHECK(DecodeTranscripts(scores, ch, o, plus_sequence).empty());
}

// ThreeExonGene's coding log-ratios: +0.5 at the codon position each base of its ORF (60..333,
// spliced) has, -0.5 at the two others and everywhere outside it.
void TrueFrameRatios(SenseGene* g) {
  const int64_t n = static_cast<int64_t>(g->sequence.size());
  for (auto& row : g->sense.coding) row.assign(n, -0.5);
  int64_t k = 0;  // spliced ORF offset
  for (const Span& part : {Span{60, 100}, Span{200, 260}, Span{320, 334}}) {
    for (int64_t i = part.start; i < part.end; ++i, ++k) g->sense.coding[k % 3][i] = 0.5;
  }
}

CATCH_TEST_CASE("ChainParseFramed keeps one reading frame from the ATG to the stop codon",
                "[annotation][coding]") {
  SenseGene g = ThreeExonGene();
  TrueFrameRatios(&g);
  DecodeOptions o = ChainOptions();
  o.coding_weight = 1.0;
  const std::vector<Span> gene = {{50, 100}, {200, 260}, {320, 360}};
  auto chains = ChainParseFramed(g.sense, g.sequence, o);
  CATCH_REQUIRE(chains.size() == 1);
  CATCH_CHECK(chains[0].exons == gene);
  CATCH_REQUIRE(chains[0].cds.has_value());
  CATCH_CHECK(*chains[0].cds == Span{60, 334});  // ATG at 60, TAA at 331 (included)

  // An in-frame stop in the second exon (its codon position 0 bases are 202, 205, ...): the CDS
  // ends there and the rest is 3' UTR; the exons stay.
  SenseGene stopped = g;
  stopped.sequence.replace(229, 3, "TAA");
  chains = ChainParseFramed(stopped.sense, stopped.sequence, o);
  CATCH_REQUIRE(chains.size() == 1);
  CATCH_CHECK(chains[0].exons == gene);
  CATCH_CHECK(chains[0].cds == std::optional<Span>(Span{60, 232}));
  // A stop out of frame (codon position 1) changes nothing.
  SenseGene out_of_frame = g;
  out_of_frame.sequence.replace(230, 3, "TAA");
  CATCH_CHECK(ChainParseFramed(out_of_frame.sense, out_of_frame.sequence, o)[0].cds ==
              std::optional<Span>(Span{60, 334}));

  // A stronger acceptor two bases before the third exon: the plain parse takes it, the framed
  // one keeps the exon whose frame reaches the stop codon.
  SenseGene shifted = g;
  shifted.sequence.replace(316, 2, "AG");
  shifted.sense.acceptor[317] = 0.99;
  CATCH_CHECK(First(ChainParse(shifted.sense, shifted.sequence, o)) ==
              std::vector<Span>{{50, 100}, {200, 260}, {318, 360}});
  chains = ChainParseFramed(shifted.sense, shifted.sequence, o);
  CATCH_REQUIRE(chains.size() == 1);
  CATCH_CHECK(chains[0].exons == gene);
  CATCH_CHECK(chains[0].cds == std::optional<Span>(Span{60, 334}));

  // No ATG: a non-coding chain, the plain parse's exons.
  SenseGene no_atg = g;
  no_atg.sequence.replace(60, 3, "CCC");
  chains = ChainParseFramed(no_atg.sense, no_atg.sequence, o);
  CATCH_REQUIRE(chains.size() == 1);
  CATCH_CHECK(chains[0].exons == First(ChainParse(no_atg.sense, no_atg.sequence, o)));
  CATCH_CHECK_FALSE(chains[0].cds.has_value());

  // Ratios that do not match the sequence, or no sequence: nothing.
  SenseGene short_ratios = g;
  short_ratios.sense.coding[1].pop_back();
  CATCH_CHECK(ChainParseFramed(short_ratios.sense, short_ratios.sequence, o).empty());
  CATCH_CHECK(ChainParseFramed(g.sense, "", o).empty());
}

CATCH_TEST_CASE("DecodeTranscripts reads the CDS off the framed chain with a coding model",
                "[annotation][coding]") {
  const AnnotationChannels ch = *ResolveAnnotationChannels(LabelsWithSites());
  SenseGene g = ThreeExonGene();
  const int64_t n = static_cast<int64_t>(g.sequence.size());
  // The CDS channel now backs nothing: the CDS must come from the coding model. The introns
  // become A-rich (their motifs kept), which that model finds non-coding, so no exon runs on
  // through them.
  g.sense.cds.assign(n, 0.01);
  g.sequence.replace(102, 96, std::string(96, 'A'));
  g.sequence.replace(262, 56, std::string(56, 'A'));
  const PositionScores scores = MinusStrandScores(g.sense, ch);
  // Order 1: after any base a C is likely in coding sequence at every codon position, an A
  // (or G, T) unlikely.
  std::string table = "order 1\n";
  for (const char* context : {"A", "C", "G", "T"}) {
    table += context;
    for (int group = 0; group < 3; ++group) table += " -2.302585 -0.356675 -2.302585 -2.302585";
    table += " -1.386294 -1.386294 -1.386294 -1.386294\n";
  }
  DecodeOptions o = ChainOptions();
  o.coding_weight = 0.5;
  o.coding = std::make_shared<const CodingModel>(*ParseCodingModel(table, "t.tsv"));
  const std::string plus_sequence = SenseSequence(g.sequence, '-');
  auto transcripts = DecodeTranscripts(scores, ch, o, plus_sequence);
  CATCH_REQUIRE(transcripts.size() == 1);
  auto mirror = [n](int64_t a, int64_t b) { return Span{n - b, n - a}; };
  CATCH_CHECK(transcripts[0].strand == '-');
  CATCH_CHECK(transcripts[0].exons ==
              std::vector<Span>{mirror(320, 360), mirror(200, 260), mirror(50, 100)});
  CATCH_CHECK(transcripts[0].cds ==
              std::vector<Span>{mirror(320, 334), mirror(200, 260), mirror(60, 100)});
  // Off (weight 0, or no model): the CDS-probability span, empty here.
  o.coding_weight = 0;
  CATCH_CHECK(DecodeTranscripts(scores, ch, o, plus_sequence)[0].cds.empty());
  o.coding_weight = 0.5;
  o.coding = nullptr;
  CATCH_CHECK(DecodeTranscripts(scores, ch, o, plus_sequence)[0].cds.empty());
}

}  // namespace
}  // namespace dnaserve::worker
