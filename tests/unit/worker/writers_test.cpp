#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "worker/writers/bed.h"
#include "worker/writers/bedgraph.h"
#include "worker/writers/gff3.h"
#include "worker/writers/text_util.h"

namespace dnaserve::worker {
namespace {

CATCH_TEST_CASE("BED6 lines", "[writers]") {
  std::vector<BedRecord> records = {BedRecord("chr1", 0, 2000, "promoter", 912, '.'),
                                    BedRecord("my seq", 6, 12, "donor", 1000, '+')};
  CATCH_CHECK(WriteBed(records) ==
              "chr1\t0\t2000\tpromoter\t912\t.\n"
              "my_seq\t6\t12\tdonor\t1000\t+\n");
  CATCH_CHECK(WriteBed({}).empty());
}

CATCH_TEST_CASE("BED12 blocks are relative to the record start", "[writers]") {
  BedRecord tx("chr2", 100, 300, "tx_1", 750, '-');
  tx.thick_start = 120;
  tx.thick_end = 250;
  tx.blocks = {{100, 150}, {200, 300}};
  CATCH_CHECK(WriteBed({tx}) == "chr2\t100\t300\ttx_1\t750\t-\t120\t250\t0\t2\t50,100,\t0,100,\n");
}

CATCH_TEST_CASE("BED scores and values", "[writers]") {
  CATCH_CHECK(BedScore(0.9126) == 913);
  CATCH_CHECK(BedScore(0.5) == 500);
  CATCH_CHECK(BedScore(0.0) == 0);
  CATCH_CHECK(BedScore(-1.0) == 0);
  CATCH_CHECK(BedScore(1.5) == 1000);
  CATCH_CHECK(FormatValue(0.5) == "0.5");
  CATCH_CHECK(FormatValue(-0.56818181) == "-0.568182");
  CATCH_CHECK(FormatValue(1e-7) == "1e-07");
}

CATCH_TEST_CASE("values are formatted exactly as printf's %.6g", "[writers]") {
  std::vector<double> values = {0,      -0.0,   1,       0.1,        1e-4,      9.999995e-5,
                                1e-5,   123456, 1234567, 999999.5,   0.5,       2.5e-300,
                                1e300,  -7.25,  0.3f,    0.999999949, 0.1234565, 0.00012345};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (int i = 0; i < 20000; ++i) values.push_back(unit(rng));  // scores as models emit them
  for (int i = 0; i < 2000; ++i) values.push_back(std::ldexp(unit(rng) - 0.5, i % 80 - 40));
  values.push_back(std::numeric_limits<double>::infinity());
  values.push_back(-std::numeric_limits<double>::infinity());
  for (double v : values) {
    char expected[64];
    std::snprintf(expected, sizeof(expected), "%.6g", v);
    CATCH_INFO("value " << v);
    CATCH_REQUIRE(FormatValue(v) == expected);
  }
  std::string appended = "x";
  AppendValue(0.25, &appended);
  AppendInt(-42, &appended);
  CATCH_CHECK(appended == "x0.25-42");
}

CATCH_TEST_CASE("bedGraph track line and rows with empty spans skipped", "[writers]") {
  BedGraphTrack track{
      "dev", "model \"x\" dev", "seq1", {{0, 249, 0.25}, {249, 249, 9}, {249, 300, -1.5}}};
  CATCH_CHECK(WriteBedGraph(track) ==
              "track type=bedGraph name=\"dev\" description=\"model 'x' dev\"\n"
              "seq1\t0\t249\t0.25\n"
              "seq1\t249\t300\t-1.5\n");
  BedGraphTrack hk{"hk", "h", "seq1", {{0, 10, 1}}};
  CATCH_CHECK(WriteBedGraphs({track, hk}) == WriteBedGraph(track) + WriteBedGraph(hk));
}

CATCH_TEST_CASE("bedGraph written row by row equals the collected track", "[writers]") {
  BedGraphTrack track{"donor", "say \"hi\"", "my seq", {{0, 1, 0.5}, {1, 1, 0.9}, {1, 7, 1e-7}}};
  BedGraphWriter writer(track.name, track.description, track.chrom);
  for (const auto& v : track.values) writer.Add(v.start, v.end, v.value);
  const std::string rows = writer.Take();
  CATCH_CHECK(rows == WriteBedGraph(track));
  CATCH_CHECK(rows ==
              "track type=bedGraph name=\"donor\" description=\"say 'hi'\"\n"
              "my_seq\t0\t1\t0.5\n"
              "my_seq\t1\t7\t1e-07\n");
}

CATCH_TEST_CASE("GFF3: header, 1-based closed coordinates, escaped attributes", "[writers]") {
  Gff3Feature site;
  site.seqid = "chr1";
  site.source = "splice-human-tiny";
  site.type = "five_prime_cis_splice_site";
  site.start = 6;
  site.end = 12;
  site.score = 0.75;
  site.strand = '+';
  site.attributes = {{"ID", "site_1"}, {"Name", "donor"}, {"note", "a;b=c,d"}};
  Gff3Feature cds;
  cds.seqid = "chr1";
  cds.source = "m";
  cds.type = "CDS";
  cds.start = 0;
  cds.end = 3;
  cds.strand = '-';
  cds.phase = 2;
  CATCH_CHECK(WriteGff3({{"chr1", 0, 100}}, {site, cds}) ==
              "##gff-version 3\n"
              "##sequence-region chr1 1 100\n"
              "chr1\tsplice-human-tiny\tfive_prime_cis_splice_site\t7\t12\t0.75\t+\t.\t"
              "ID=site_1;Name=donor;note=a%3Bb%3Dc%2Cd\n"
              "chr1\tm\tCDS\t1\t3\t.\t-\t2\t.\n");
  CATCH_CHECK(WriteGff3({}, {}) == "##gff-version 3\n");
}

CATCH_TEST_CASE("GFF3 seqids are percent-encoded outside the allowed set", "[writers]") {
  CATCH_CHECK(Gff3Escape("chr1:100-200", Gff3Field::kSeqid) == "chr1:100-200");
  CATCH_CHECK(Gff3Escape("my seq", Gff3Field::kSeqid) == "my%20seq");
  CATCH_CHECK(Gff3Escape("a\tb%", Gff3Field::kColumn) == "a%09b%25");
  CATCH_CHECK(Gff3Escape("x y", Gff3Field::kColumn) == "x y");
}

}  // namespace
}  // namespace dnaserve::worker
