// Isoforms of one gene: transcripts on one strand whose exons share a base, transitively.
#include "worker/windowing/gene_groups.h"

#include <catch2/catch.hpp>
#include <vector>

namespace dnaserve::worker {
namespace {

DecodedTranscript Transcript(char strand, std::vector<Span> exons) {
  DecodedTranscript t;
  t.strand = strand;
  t.exons = std::move(exons);
  t.span = {t.exons.front().start, t.exons.back().end};
  return t;
}

}  // namespace

CATCH_TEST_CASE("gene groups: shared exonic bases on one strand make one gene", "[gene-groups]") {
  const std::vector<DecodedTranscript> transcripts = {
      Transcript('+', {{100, 200}, {500, 600}}),    // gene 0
      Transcript('+', {{300, 350}, {550, 700}}),    // shares 550-600: gene 0
      Transcript('-', {{100, 200}, {500, 600}}),    // the other strand: gene 1
      Transcript('+', {{5000, 5100}}),              // far, but joined by the last one
      Transcript('+', {{210, 290}, {360, 400}}),    // in gene 0's introns only: gene 2
      Transcript('+', {{699, 800}, {5050, 5060}}),  // bridges gene 0 and the far one
  };
  const std::vector<int> gene = GeneOfTranscript(transcripts);
  CATCH_CHECK(gene == std::vector<int>{0, 0, 1, 0, 2, 0});
}

CATCH_TEST_CASE(
    "gene groups: touching exons share no base, and genes are numbered by first transcript",
    "[gene-groups]") {
  const std::vector<DecodedTranscript> transcripts = {
      Transcript('-', {{1000, 1100}}),
      Transcript('-', {{1100, 1200}}),  // half-open: 1100 is not in the first exon
      Transcript('-', {{1050, 1150}}),  // overlaps both: all three become gene 0
      Transcript('+', {{0, 10}}),
  };
  CATCH_CHECK(GeneOfTranscript(transcripts) == std::vector<int>{0, 0, 0, 1});
  CATCH_CHECK(GeneOfTranscript({Transcript('+', {{0, 10}}), Transcript('+', {{10, 20}})}) ==
              std::vector<int>{0, 1});
  CATCH_CHECK(GeneOfTranscript({}).empty());
}

}  // namespace dnaserve::worker
