// Interval outputs moved to contig coordinates (runner/workflows/interval_coordinates.h) and the
// contig alias table (runner/genome/contig_name.h). The expected values are worked out by hand
// from the mapping the header states, for an interval of 1,000 bp at chr20:1,001-2,000.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <string>

#include "runner/genome/contig_name.h"
#include "runner/workflows/interval_coordinates.h"

namespace dnaserve::runner {
namespace {

IntervalFrame Frame(char strand) {
  core::GenomeInterval interval;
  interval.contig = "chr20";
  interval.start = 1001;
  interval.end = 2000;
  interval.strand = strand;
  return IntervalFrame::Of(interval);
}

}  // namespace

TEST_CASE("interval frame: spans and points on both strands", "[interval]") {
  const IntervalFrame plus = Frame('+');
  CHECK(plus.Span(0, 10) == std::make_pair<int64_t, int64_t>(1000, 1010));
  CHECK(plus.Point(0) == 1000);
  CHECK(plus.Strand('+') == '+');
  const IntervalFrame minus = Frame('-');
  // Analysed base 0 is the interval's last base (0-based 1999).
  CHECK(minus.Point(0) == 1999);
  CHECK(minus.Point(999) == 1000);
  CHECK(minus.Span(0, 10) == std::make_pair<int64_t, int64_t>(1990, 2000));
  CHECK(minus.Span(0, 1000) == std::make_pair<int64_t, int64_t>(1000, 2000));
  CHECK(minus.Strand('+') == '-');
  CHECK(minus.Strand('-') == '+');
  CHECK(minus.Strand('.') == '.');
}

TEST_CASE("interval text: BED, bedGraph and GFF3 rows on the contig", "[interval]") {
  const std::string bed =
      "chr20\t0\t10\tdonor\t900\t+\n"
      "chr20\t100\t300\ttx_1\t500\t+\t150\t250\t0\t2\t50,60,\t0,140,\n";
  CHECK(MapBedText(bed, Frame('+')) ==
        "chr20\t1000\t1010\tdonor\t900\t+\n"
        "chr20\t1100\t1300\ttx_1\t500\t+\t1150\t1250\t0\t2\t50,60,\t0,140,\n");
  // '-': rows sorted by start, strands flipped, blocks reversed and re-based:
  // [100,300) -> [1700,1900); blocks [100,150) [240,300) -> [1850,1900) [1700,1760).
  CHECK(MapBedText(bed, Frame('-')) ==
        "chr20\t1700\t1900\ttx_1\t500\t-\t1750\t1850\t0\t2\t60,50,\t0,150,\n"
        "chr20\t1990\t2000\tdonor\t900\t-\n");

  const std::string bedgraph =
      "track type=bedGraph name=\"dev\"\nsequence\t0\t100\t0.5\nsequence\t100\t200\t0.25\n"
      "track type=bedGraph name=\"hk\"\nsequence\t0\t200\t1\n";
  CHECK(MapBedText(bedgraph, Frame('-')) ==
        "track type=bedGraph name=\"dev\"\nchr20\t1800\t1900\t0.25\nchr20\t1900\t2000\t0.5\n"
        "track type=bedGraph name=\"hk\"\nchr20\t1800\t2000\t1\n");

  const std::string gff3 =
      "##gff-version 3\n##sequence-region chr20 1 1000\n"
      "chr20\tm\tgene\t101\t300\t0.9\t+\t.\tID=gene_1\n"
      "chr20\tm\tmRNA\t101\t300\t0.9\t+\t.\tID=tx_1;Parent=gene_1;tss_position=100;"
      "polya_position=299\n"
      "chr20\tm\tCDS\t151\t250\t.\t+\t0\tID=tx_1.cds;Parent=tx_1\n";
  CHECK(MapGff3Text(gff3, Frame('+')) ==
        "##gff-version 3\n##sequence-region chr20 1001 2000\n"
        "chr20\tm\tgene\t1101\t1300\t0.9\t+\t.\tID=gene_1\n"
        "chr20\tm\tmRNA\t1101\t1300\t0.9\t+\t.\tID=tx_1;Parent=gene_1;tss_position=1100;"
        "polya_position=1299\n"
        "chr20\tm\tCDS\t1151\t1250\t.\t+\t0\tID=tx_1.cds;Parent=tx_1\n");
  // '-': 1-based [101, 300] is 0-based [100, 300) -> [1700, 1900) -> 1-based [1701, 1900];
  // the TSS (analysed 100) is contig 1899, the polyA (299) is 1700.
  CHECK(MapGff3Text(gff3, Frame('-')) ==
        "##gff-version 3\n##sequence-region chr20 1001 2000\n"
        "chr20\tm\tgene\t1701\t1900\t0.9\t-\t.\tID=gene_1\n"
        "chr20\tm\tmRNA\t1701\t1900\t0.9\t-\t.\tID=tx_1;Parent=gene_1;tss_position=1899;"
        "polya_position=1700\n"
        "chr20\tm\tCDS\t1751\t1850\t.\t-\t0\tID=tx_1.cds;Parent=tx_1\n");
}

TEST_CASE("interval JSON: every position of a response, and the echo in meta", "[interval]") {
  const std::string body = R"({"data":{"task":"annotation","input":{"sequence_name":"chr20"},
    "transcripts":[{"id":"tx_1","strand":"+","start":100,"end":300,"tss_position":100,
      "polya_position":299,"exons":[{"start":100,"end":150},{"start":240,"end":300}],
      "introns":[{"start":150,"end":240}],"cds":[]}],
    "formats":{"gff3":"##sequence-region chr20 1 1000\n"}},"meta":{"task":"annotation"}})";
  auto mapped = MapPredictJson(Task::kAnnotation, body, Frame('-'), R"({"strand":"-"})");
  REQUIRE(mapped.ok());
  rapidjson::Document doc;
  doc.Parse(mapped->c_str());
  REQUIRE(doc.IsObject());
  const auto& t = doc["data"]["transcripts"][0];
  CHECK(std::string(t["strand"].GetString()) == "-");
  CHECK(t["start"].GetInt64() == 1700);
  CHECK(t["end"].GetInt64() == 1900);
  CHECK(t["tss_position"].GetInt64() == 1899);
  CHECK(t["polya_position"].GetInt64() == 1700);
  REQUIRE(t["exons"].Size() == 2);
  CHECK(t["exons"][0]["start"].GetInt64() == 1700);  // ascending on the contig
  CHECK(t["exons"][0]["end"].GetInt64() == 1760);
  CHECK(t["exons"][1]["start"].GetInt64() == 1850);
  CHECK(t["introns"][0]["start"].GetInt64() == 1760);
  CHECK(std::string(doc["data"]["formats"]["gff3"].GetString()) ==
        "##sequence-region chr20 1001 2000\n");
  CHECK(std::string(doc["meta"]["interval"]["strand"].GetString()) == "-");

  const std::string expression = R"({"data":{"input":{"tss_index":4599,"scored_window":[0,9198]}},
    "meta":{"task_specific_counts":{"scored_window":[0,9198]}}})";
  core::GenomeInterval e;
  e.contig = "20";
  e.start = 5750001;
  e.end = 5759198;
  auto ex = MapPredictJson(Task::kExpression, expression, IntervalFrame::Of(e), "{}");
  REQUIRE(ex.ok());
  doc.Parse(ex->c_str());
  CHECK(doc["data"]["input"]["scored_window"][0].GetInt64() == 5750000);
  CHECK(doc["data"]["input"]["scored_window"][1].GetInt64() == 5759198);
  CHECK(doc["data"]["input"]["tss_index"].GetInt64() == 4599);  // an offset, as sent
  CHECK(doc["meta"]["task_specific_counts"]["scored_window"][0].GetInt64() == 5750000);

  const std::string genes = R"({"data":{"annotation":{"transcripts":[]},
    "expression_predictions":[{"strand":"-","tss_position":10}]},"meta":{}})";
  auto fg = MapFindGenesJson(genes, Frame('-'), "{}");
  REQUIRE(fg.ok());
  doc.Parse(fg->c_str());
  CHECK(doc["data"]["expression_predictions"][0]["tss_position"].GetInt64() == 1989);
  CHECK(std::string(doc["data"]["expression_predictions"][0]["strand"].GetString()) == "+");
  CHECK(doc["meta"].HasMember("interval"));
  CHECK_FALSE(MapPredictJson(Task::kPromoter, "not json", Frame('+'), "{}").ok());
}

TEST_CASE("contig aliases: chr20, 20 and NC_000020.10 are one GRCh37 contig", "[interval]") {
  CHECK(variant::AssemblyContigKey("GRCh37", "chr20") == "20");
  CHECK(variant::AssemblyContigKey("GRCh37", "20") == "20");
  CHECK(variant::AssemblyContigKey("GRCh37", "NC_000020.10") == "20");
  CHECK(variant::AssemblyContigKey("grch37", "nc_000020.10") == "20");
  CHECK(variant::AssemblyContigKey("GRCh37", "NC_000023.10") == "X");
  // GRCh38's accession for chr20 is not GRCh37's chr20, and hg19's chrM is not MT.
  CHECK(variant::AssemblyContigKey("GRCh37", "NC_000020.11") == "NC_000020.11");
  CHECK(variant::AssemblyContigKey("GRCh38", "NC_000020.10") == "NC_000020.10");
  CHECK(variant::AssemblyContigKey("GRCh37", "chrM") == "M");
  CHECK(variant::ContigAliases("GRCh37", "20") ==
        std::vector<std::string>{"chr20", "NC_000020.10"});
  CHECK(variant::ContigAliases("GRCh37", "chrX") == std::vector<std::string>{"X", "NC_000023.10"});
  CHECK(variant::ContigAliases("other", "20") == std::vector<std::string>{"chr20"});
}

}  // namespace dnaserve::runner
