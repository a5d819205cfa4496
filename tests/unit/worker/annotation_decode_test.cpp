#include "worker/windowing/annotation_decode.h"

#include <catch2/catch.hpp>
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
  AverageInto(&forward, reverse);
  CATCH_CHECK(forward.at(0, ch.plus.exon) == 0.5f);
  CATCH_CHECK(forward.at(0, ch.minus.exon) == 25.5f);  // (0 + 51) / 2, from RC position 5
}

CATCH_TEST_CASE("DecodeTranscripts builds exons, introns and CDS per strand", "[annotation]") {
  const AnnotationChannels ch = Channels();
  PositionScores s(60, ch.count);
  // Plus strand: exon [5, 10), intron [10, 20), exon [20, 30); CDS over [7, 25) but only
  // exonic bases count. Leading intron-only bases [2, 5) are trimmed off.
  Fill(&s, ch.plus.intron, 2, 5, 0.8f);
  Fill(&s, ch.plus.exon, 5, 10, 0.9f);
  Fill(&s, ch.plus.intron, 10, 20, 0.7f);
  Fill(&s, ch.plus.exon, 20, 30, 0.9f);
  Fill(&s, ch.plus.cds, 7, 25, 0.6f);
  // Minus strand: one exon [40, 52).
  Fill(&s, ch.minus.exon, 40, 52, 0.6f);
  // Below threshold noise and a too-short plus candidate.
  Fill(&s, ch.plus.exon, 35, 37, 0.9f);
  Fill(&s, ch.minus.exon, 55, 60, 0.4f);

  auto transcripts = DecodeTranscripts(s, ch, DecodeOptions{0.5, 5});
  CATCH_REQUIRE(transcripts.size() == 2);
  const auto& plus = transcripts[0];
  CATCH_CHECK(plus.strand == '+');
  CATCH_CHECK(plus.span == Span{5, 30});
  CATCH_CHECK(plus.tss_position == 5);
  CATCH_CHECK(plus.polya_position == 29);
  CATCH_REQUIRE(plus.exons.size() == 2);
  CATCH_CHECK(plus.exons[0] == Span{5, 10});
  CATCH_CHECK(plus.exons[1] == Span{20, 30});
  CATCH_REQUIRE(plus.introns.size() == 1);
  CATCH_CHECK(plus.introns[0] == Span{10, 20});
  CATCH_REQUIRE(plus.cds.size() == 2);
  CATCH_CHECK(plus.cds[0] == Span{7, 10});
  CATCH_CHECK(plus.cds[1] == Span{20, 25});
  CATCH_CHECK(plus.score == Approx((15 * 0.9 + 10 * 0.7) / 25.0));

  const auto& minus = transcripts[1];
  CATCH_CHECK(minus.strand == '-');
  CATCH_CHECK(minus.span == Span{40, 52});
  CATCH_CHECK(minus.tss_position == 51);  // 5' end of a minus-strand transcript
  CATCH_CHECK(minus.polya_position == 40);
  CATCH_CHECK(minus.introns.empty());
  CATCH_CHECK(minus.cds.empty());

  // A higher minimum drops the short minus transcript; a higher threshold drops both.
  CATCH_CHECK(DecodeTranscripts(s, ch, DecodeOptions{0.5, 20}).size() == 1);
  CATCH_CHECK(DecodeTranscripts(s, ch, DecodeOptions{0.95, 5}).empty());
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

}  // namespace
}  // namespace dnaserve::worker
