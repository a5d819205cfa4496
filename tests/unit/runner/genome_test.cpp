// The start-site catalogue (format, errors, md5, contig naming, range queries), gene panels
// (symbols in any case, Ensembl ids with or without version, every unresolved id named), the
// faidx reference (plain and bgzip, N padding, chr prefixes), and scripts/build-catalogue on
// the real Debian packages and ../shared data.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "runner/genome/contig_name.h"
#include "runner/genome/gene_panel.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/unit/runner/variant_test_support.h"

namespace dnaserve::variant {
namespace {

constexpr const char* kHeader =
    "##dnaserve-tss-catalogue=1\n"
    "##build=GRCh37\n"
    "##annotation_release=test release\n"
    "##transcripts=test start sites\n"
    "##description=made by genome_test\n";
constexpr const char* kColumns = "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n";

std::string WriteText(const std::string& name, const std::string& text) {
  static const std::string dir = testing::MakeTempDir("dnaserve-genome");
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TssCatalogue LoadOk(const std::string& text) {
  auto catalogue = TssCatalogue::Load(WriteText("ok.tsv", text));
  if (!catalogue.ok()) FAIL(catalogue.status().message());
  return std::move(*catalogue);
}

TEST_CASE("contig names match with or without chr", "[genome]") {
  CHECK(ContigKey("chr20") == "20");
  CHECK(ContigKey("CHR20") == "20");
  CHECK(ContigKey("20") == "20");
  CHECK(ContigKey("chrX") == "X");
  CHECK(ContigKey("chrM") != ContigKey("MT"));
  CHECK(ContigKey("chr") == "chr");
}

TEST_CASE("a catalogue loads with its positions rebased, md5 and counts", "[genome]") {
  const std::string text = std::string(kHeader) + "##position_base=1\n" + kColumns +
                           "chr20\t1000\t+\tGENEA\tENSG00000000001\tNM_1\n"
                           "chr20\t500\t-\tGENEB\tENSG00000000002\t.\n"
                           "chr20\t5000\t+\tGENEA\tENSG00000000001\tNM_2\n"
                           "chr21\t300\t+\tGENEC\tENSG00000000003\tNM_3\n";
  const std::string path = WriteText("one-based.tsv", text);
  auto loaded = TssCatalogue::Load(path);
  REQUIRE(loaded.ok());
  const TssCatalogue& catalogue = *loaded;
  CHECK(catalogue.info().build == "GRCh37");
  CHECK(catalogue.info().annotation_release == "test release");
  CHECK(catalogue.info().transcripts == "test start sites");
  CHECK(catalogue.info().start_sites == 4);
  std::string md5sum;
  REQUIRE(testing::RunCommand({"/usr/bin/md5sum", path}, &md5sum) == 0);
  CHECK(catalogue.info().md5 == md5sum.substr(0, 32));
  REQUIRE(catalogue.sites().size() == 4);
  CHECK(catalogue.sites()[0].tss == 999);  // 1-based 1000 -> 0-based 999
  CHECK(catalogue.sites()[1].strand == Strand::kMinus);
  CHECK(catalogue.sites()[1].transcript_id == ".");

  CHECK(catalogue.HasContig("20"));
  CHECK(catalogue.HasContig("chr20"));
  CHECK(catalogue.HasContig("21"));
  CHECK_FALSE(catalogue.HasContig("chr22"));
  auto near = catalogue.SitesBetween("20", 499, 999);
  REQUIRE(near.size() == 2);
  CHECK(near[0]->gene_symbol == "GENEB");  // in tss order, not file order
  CHECK(near[1]->gene_symbol == "GENEA");
  CHECK(catalogue.SitesBetween("chr20", 1000, 4998).empty());
  CHECK(catalogue.SitesBetween("chr20", 0, 100000).size() == 3);

  // The same sites written 0-based load to the same positions.
  auto zero = LoadOk(std::string(kHeader) + "##position_base=0\n" + kColumns +
                     "chr20\t999\t+\tGENEA\tENSG00000000001\tNM_1\n");
  CHECK(zero.sites()[0].tss == 999);
  CHECK(zero.info().md5 != catalogue.info().md5);
}

TEST_CASE("a malformed catalogue is refused with its line", "[genome]") {
  struct Bad {
    std::string text;
    std::string says;
  };
  const std::string good_head = std::string(kHeader) + "##position_base=1\n" + kColumns;
  for (const Bad& bad : std::vector<Bad>{
           {"chr20\t1\t+\tA\tB\tC\n", "line 1: not a dnaserve start-site catalogue"},
           {std::string(kHeader) + kColumns, "##position_base= ' is missing"},
           {std::string(kHeader) + "##position_base=2\n" + kColumns, "must be 0 or 1"},
           {std::string(kHeader) + "##position_base=1\n#contig\ttss\n", "column line must be"},
           {std::string(kHeader) + "##position_base=1\nchr20\t1\t+\tA\tB\tC\n",
            "line 7: data before"},
           {good_head + "chr20\t1\t+\tA\tB\n", "line 8: expected 6 tab-separated fields, found 5"},
           {good_head + "chr20\tx1\t+\tA\tB\tC\n", "line 8: tss is not a whole number"},
           {good_head + "chr20\t-5\t+\tA\tB\tC\n", "line 8: tss is not a whole number"},
           {good_head + "chr20\t0\t+\tA\tB\tC\n", "line 8: tss lies before"},
           {good_head + "chr20\t10\t*\tA\tB\tC\n", "line 8: strand must be + or -"},
           {good_head + "chr20\t10\t+\tA|B\tB\tC\n", "line 8: contig, gene_symbol"},
           {good_head + "chr20\t10\t+\t\tB\tC\n", "line 8: contig, gene_symbol"},
           {good_head, "no start sites"},
           {good_head + "chr20\t10\t+\tA\tB\tC\n##late=1\n", "line 9: '##' header lines"},
       }) {
    CAPTURE(bad.text);
    std::string says = bad.says;
    if (says.find("' is missing") != std::string::npos) says = "' is missing";
    auto loaded = TssCatalogue::Load(WriteText("bad.tsv", bad.text));
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.status().message(), Catch::Contains(says));
    CHECK_THAT(loaded.status().message(), Catch::Contains("bad.tsv"));
  }
  CHECK_FALSE(TssCatalogue::Load("/nonexistent/catalogue.tsv").ok());
}

TEST_CASE("gene panels resolve symbols and Ensembl ids and name every miss", "[genome]") {
  auto catalogue = LoadOk(std::string(kHeader) + "##position_base=1\n" + kColumns +
                          "chr20\t100\t+\tHNF4A\tENSG00000101076\tNM_1\n"
                          "chr20\t900\t+\tHNF4A\tENSG00000101076\tNM_2\n"
                          "chr20\t500\t-\tSNAP25\tENSG00000132639\t.\n"
                          "chr20\t700\t-\tDUP\tENSG00000000011\t.\n"
                          "chr21\t700\t-\tDUP\tENSG00000000012\t.\n");
  auto panel = ResolveGenePanel(catalogue,
                                {"hnf4a", "ENSG00000132639.12", "HNF4A", "ensg00000101076", "Dup"});
  REQUIRE(panel.ok());
  CHECK(panel->gene_ids == std::vector<std::string>{"ENSG00000101076", "ENSG00000132639",
                                                    "ENSG00000000011", "ENSG00000000012"});
  CHECK(panel->Contains(catalogue.sites()[0]));
  CHECK(panel->Contains(catalogue.sites()[2]));

  auto only = ResolveGenePanel(catalogue, {"SNAP25"});
  REQUIRE(only.ok());
  CHECK_FALSE(only->Contains(catalogue.sites()[0]));
  CHECK(only->Contains(catalogue.sites()[2]));

  auto missing = ResolveGenePanel(
      catalogue, {"HNF4A", "TP53", "ENSG00000141510.16", "snap", "ENSG00000101076.x"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kBadRequest);
  const std::string& message = missing.status().message();
  CHECK_THAT(message, Catch::Contains("4 identifiers match no gene"));
  for (const char* id : {"'TP53'", "'ENSG00000141510.16'", "'snap'", "'ENSG00000101076.x'"}) {
    CHECK_THAT(message, Catch::Contains(id));
  }
  CHECK_THAT(message, !Catch::Contains("'HNF4A'"));
  CHECK_THAT(message, Catch::Contains("test start sites"));
  // Which contigs the catalogue covers: a gene elsewhere is not misspelt, just not there.
  CHECK_THAT(message, Catch::Contains("on chr20 and chr21 only"));
  auto wide = LoadOk(std::string(kHeader) + "##position_base=1\n" + kColumns +
                     "chr1\t100\t+\tA1\tENSG00000000021\t.\n"
                     "chr2\t100\t+\tA2\tENSG00000000022\t.\n"
                     "chr3\t100\t+\tA3\tENSG00000000023\t.\n"
                     "chrX\t100\t+\tAX\tENSG00000000024\t.\n");
  CHECK_THAT(ResolveGenePanel(wide, {"TP53"}).status().message(), Catch::Contains("on 4 contigs"));
}

TEST_CASE("the reference reads plain and bgzip FASTA with N padding", "[genome]") {
  std::string chr1(1000, 'A');
  for (size_t i = 0; i < chr1.size(); ++i) chr1[i] = "ACGT"[(i * 7 + i / 3) % 4];
  chr1[10] = 'n';
  chr1[11] = 'R';  // IUPAC: read as N
  chr1[12] = 'c';
  std::string dir = testing::MakeTempDir("dnaserve-fasta");
  for (bool bgzip : {false, true}) {
    CAPTURE(bgzip);
    std::string path = dir + (bgzip ? "/ref.fa.gz" : "/ref.fa");
    REQUIRE(
        testing::WriteIndexedFasta(path, {{"chr1", chr1}, {"2", std::string(130, 'G')}}, bgzip));
    auto genome = ReferenceGenome::Open(path);
    REQUIRE(genome.ok());
    CHECK((*genome)->ContigLength("1") == 1000);
    CHECK((*genome)->ContigLength("chr2") == 130);
    CHECK_FALSE((*genome)->ContigLength("3").has_value());
    auto middle = (*genome)->Fetch("chr1", 100, 160);
    REQUIRE(middle.ok());
    CHECK(*middle == chr1.substr(100, 60));
    auto cased = (*genome)->Fetch("1", 9, 14);
    REQUIRE(cased.ok());
    CHECK(*cased == chr1.substr(9, 1) + "NNC" + chr1.substr(13, 1));
    auto left = (*genome)->Fetch("chr1", -5, 3);
    REQUIRE(left.ok());
    CHECK(*left == "NNNNN" + chr1.substr(0, 3));
    auto right = (*genome)->Fetch("chr2", 125, 135);
    REQUIRE(right.ok());
    CHECK(*right == "GGGGGNNNNN");
    auto outside = (*genome)->Fetch("chr2", 200, 204);
    REQUIRE(outside.ok());
    CHECK(*outside == "NNNN");
    CHECK_FALSE((*genome)->Fetch("chr3", 0, 10).ok());
  }
  std::ofstream(dir + "/unindexed.fa") << ">x\nACGT\n";
  auto unindexed = ReferenceGenome::Open(dir + "/unindexed.fa");
  REQUIRE_FALSE(unindexed.ok());
  CHECK_THAT(unindexed.status().message(), Catch::Contains(".fai"));
}

TEST_CASE("build-catalogue makes the default chr20 catalogue from Debian packages alone",
          "[genome][debian]") {
  DEFAULT_CHR20_OR_SKIP(chr20);
  const TssCatalogue* catalogue = &chr20->catalogue;
  const CatalogueInfo& info = catalogue->info();
  CHECK(info.build == "GRCh37");
  CHECK_THAT(info.transcripts, Catch::Contains("not MANE Select"));
  CHECK_THAT(info.annotation_release, Catch::Contains("subread-data"));
  CHECK_THAT(info.annotation_release, Catch::Contains("org.Hs.eg.db"));
  CHECK(info.start_sites > 500);  // chr20 has about 550 protein-coding genes
  std::set<std::string> symbols;
  for (const auto& site : catalogue->sites()) {
    CHECK(site.contig == "chr20");
    CHECK(site.gene_id.rfind("ENSG", 0) == 0);
    symbols.insert(site.gene_symbol);
  }
  CHECK(symbols.count("HNF4A") == 1);
  CHECK(symbols.count("SNAP25") == 1);

  // The reference FASTA is GRCh37 chr20, named "20", and covers every start site.
  CHECK(chr20->reference->ContigLength("chr20") == 63025520);
  for (const auto& site : catalogue->sites()) CHECK(site.tss < 63025520);

  // An independent source: hg19 refGene. Gene-level 5' ends should sit on (or within 1 kb of) a
  // refGene transcript start of the same gene and strand; different RefSeq snapshots differ.
  std::ifstream refgene_check(testing::SourceDir() +
                              "/../shared/data/annotation/hg19_refGene.txt.gz");
  if (!refgene_check) {
    WARN("refGene comparison skipped: ../shared/data is absent");
    return;
  }
  std::string table;
  REQUIRE(testing::RunCommand({"/bin/sh", "-c",
                               "zcat '" + testing::SourceDir() +
                                   "/../shared/data/annotation/hg19_refGene.txt.gz' | awk -F'\\t' "
                                   "'$3==\"chr20\"{print $13\"\\t\"$4\"\\t\"($4==\"+\"?$5+1:$6)}'"},
                              &table) == 0);
  std::map<std::pair<std::string, char>, std::vector<int64_t>> starts;
  std::istringstream lines(table);
  std::string symbol, strand;
  int64_t tss = 0;
  while (lines >> symbol >> strand >> tss) starts[{symbol, strand[0]}].push_back(tss - 1);
  int compared = 0, exact = 0, close = 0;
  for (const auto& site : catalogue->sites()) {
    auto it = starts.find({site.gene_symbol, StrandChar(site.strand)});
    if (it == starts.end()) continue;
    ++compared;
    int64_t best = INT64_MAX;
    for (int64_t s : it->second) best = std::min<int64_t>(best, std::llabs(s - site.tss));
    exact += best == 0;
    close += best <= 1000;
  }
  CHECK(compared > 500);
  CHECK(exact * 2 > compared);
  CHECK(close * 100 > compared * 95);
}

TEST_CASE("build-catalogue makes the transcript-level RefSeq/APPRIS catalogue from ../shared",
          "[genome][shared]") {
  std::string why;
  auto built = testing::BuildCatalogue({"--source", "refseq-appris"}, &why);
  if (!built) {
    WARN("skipped: " << why);
    return;
  }
  auto catalogue = TssCatalogue::Load(built->catalogue);
  REQUIRE(catalogue.ok());
  CHECK_THAT(catalogue->info().transcripts, Catch::Contains("APPRIS"));
  CHECK_THAT(catalogue->info().transcripts, Catch::Contains("not MANE Select"));
  CHECK(catalogue->info().start_sites > 500);
  std::set<std::string> transcripts;
  for (const auto& site : catalogue->sites()) {
    CHECK(site.transcript_id.rfind("N", 0) == 0);  // NM_ / NR_ accessions
    CHECK(site.gene_id.rfind("ENSG", 0) == 0);
    transcripts.insert(site.transcript_id);
  }
  CHECK(transcripts.size() > 500);
  auto panel = ResolveGenePanel(*catalogue, {"hnf4a"});
  REQUIRE(panel.ok());
  CHECK(panel->gene_ids == std::vector<std::string>{"ENSG00000101076"});
}

}  // namespace
}  // namespace dnaserve::variant
