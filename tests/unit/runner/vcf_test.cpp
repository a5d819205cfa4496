// VCF reading and writing through htslib: plain, gzip and bgzip input; bgzip output holding every
// input record in order with the GEX_* fields and header lines; already annotated input; bad
// input (not a VCF, broken header, malformed records, truncated gzip/bgzip/plain, BCF) failing
// with the record named and no output left behind; the header sniff used before acceptance.
// Real files: Debian's r-bioc-variantannotation chr22.vcf.gz and python-pyvcf-examples; outputs
// are read back with htslib and `bcftools view`.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "runner/vcf/gex_header.h"
#include "runner/vcf/line_reader.h"
#include "runner/vcf/vcf_rewriter.h"
#include "tests/support/test_env.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

namespace dnaserve::variant {
namespace {

using testing::GzipMember;
using testing::RunCommand;

constexpr const char* kPyvcfDir = "usr/share/doc/python3-vcf/test/";

std::string NewDir() { return testing::MakeTempDir("dnaserve-vcf"); }

using testing::ReadFile;
using testing::WriteFile;
bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }
// <dir>/<name> compressed beside itself as <name>.gz (plain gzip) and <name>.bgz (bgzip).
void Compress(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  REQUIRE(RunCommand({"/bin/sh", "-c", "gzip -c " + path + " > " + path + ".gz"}, nullptr) == 0);
  REQUIRE(RunCommand({"/bin/sh", "-c", "bgzip -c " + path + " > " + path + ".bgz"}, nullptr) == 0);
}
size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

const std::string kSmallVcf =
    "##fileformat=VCFv4.2\n"
    "##contig=<ID=20,length=63025520>\n"
    "##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n"
    "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n"
    "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\n"
    "20\t14370\trs6054257\tG\tA\t29\tPASS\tDP=14\tGT\t0|0\n"
    "20\t17330\t.\tT\tA,<DEL>\t3\tPASS\tDP=11\tGT\t0|1\n"
    "20\t1110696\trs6040355\tA\tG,T,*\t67\tPASS\tDP=10\tGT\t1|2\n"
    "20\t1234567\tmicrosat1\tGTC\tG,GTCT\t50\tPASS\tDP=9\tGT\t0/1\n";

GexHeader TestHeader(std::optional<std::string> model = std::nullopt) {
  GexHeader h;
  h.tissues = {"heart", "liver \"left\" lobe\nsecond line", "brain"};
  h.window = 5000;
  h.build = "GRCh37";
  h.annotation_release = "test release; with semicolon";
  h.transcripts = "test sites (not MANE Select)";
  h.catalogue_md5 = "0123456789abcdef0123456789abcdef";
  h.requested_genes = std::vector<std::string>{"ENSG00000101076", "ENSG00000132639"};
  h.model = std::move(model);
  h.distance_convention = "signed, negative upstream";
  h.fold_change = "log2 ratio";
  return h;
}

// Runs both passes; `annotate` decides each record's annotation. Returns the records seen.
StatusOr<std::vector<VariantRecord>> Rewrite(
    const std::string& input, const std::string& output,
    const std::function<RecordAnnotation(const VariantRecord&)>& annotate,
    const GexHeader& header = TestHeader()) {
  auto rewriter = VcfRewriter::Open(input);
  if (!rewriter.ok()) return rewriter.status();
  int64_t visited = 0;
  Status checked = (*rewriter)->Check([&](const VariantRecord&) {
    ++visited;
    return Status::Ok();
  });
  if (!checked.ok()) return checked;
  if (visited != (*rewriter)->record_count()) return Internal("count mismatch");
  DNASERVE_RETURN_IF_ERROR((*rewriter)->Begin(output, GexHeaderLines(header)));
  std::vector<VariantRecord> records;
  VariantRecord record;
  while (true) {
    auto more = (*rewriter)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    records.push_back(record);
    DNASERVE_RETURN_IF_ERROR((*rewriter)->Write(annotate(record)));
  }
  DNASERVE_RETURN_IF_ERROR((*rewriter)->Finish());
  return records;
}

RecordAnnotation NotRun(const VariantRecord&) {
  RecordAnnotation a;
  a.not_run_reason = "OUTSIDE_TSS_WINDOW";
  return a;
}

std::string Bcftools(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/bcftools"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  int rc = RunCommand(argv, &out, {}, /*drop_stderr=*/true);
  if (rc != 0) FAIL("bcftools failed: " << out);
  return out;
}

// A file of python-pyvcf-examples (the caller has checked the package can be had).
std::string PyvcfExample(const std::string& name) {
  std::string why;
  auto path = testing::DebianPackageFile("python-pyvcf-examples", kPyvcfDir + name, &why);
  if (!path) FAIL(why);
  return *path;
}

size_t CountLines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST_CASE("plain, gzip and bgzip input give the same annotated bgzip output", "[vcf]") {
  std::string dir = NewDir();
  WriteFile(dir + "/in.vcf", kSmallVcf);
  Compress(dir, "in.vcf");
  std::vector<std::string> outputs;
  for (const char* name : {"in.vcf", "in.vcf.gz", "in.vcf.bgz"}) {
    CAPTURE(name);
    std::string out = dir + "/" + name + ".annotated.vcf.gz";
    auto records = Rewrite(dir + "/" + name, out, [](const VariantRecord& r) {
      RecordAnnotation a;
      if (r.number == 1) a.not_run_reason = "NO_TSS_ON_CONTIG";
      if (r.number >= 2) a.gex_ann = {r.alts[0] + "|GENE|ENSG1|NM_1|100|+|-5|0.5|-0.25|0|upstream_gene_variant"};
      if (r.number == 2) a.skipped_alts = {"<DEL>"};
      if (r.number == 3) a.skipped_alts = {"*"};
      return a;
    });
    REQUIRE(records.ok());
    REQUIRE(records->size() == 4);
    CHECK((*records)[0].contig == "20");
    CHECK((*records)[0].pos == 14370);
    CHECK((*records)[0].ref == "G");
    CHECK((*records)[2].alts == std::vector<std::string>{"G", "T", "*"});
    CHECK((*records)[3].ref == "GTC");
    CHECK((*records)[3].number == 4);
    outputs.push_back(out);
  }
  // Every output is bgzip (BGZF magic with the BC extra field) and reads back the same.
  for (const auto& out : outputs) {
    std::string head = ReadFile(out).substr(0, 16);
    CHECK(static_cast<unsigned char>(head[0]) == 0x1f);
    CHECK(static_cast<unsigned char>(head[3]) == 0x04);  // FEXTRA
    CHECK(head.substr(12, 2) == "BC");
    CHECK(Bcftools({"view", "-H", out}) == Bcftools({"view", "-H", outputs[0]}));
  }
  const std::string body = Bcftools({"view", "-H", outputs[0]});
  REQUIRE(CountLines(body) == 4);
  CHECK(Bcftools({"query", "-f", "%CHROM\\t%POS\\t%REF\\t%ALT\\t%INFO/DP\\n", outputs[0]}) ==
        "20\t14370\tG\tA\t14\n20\t17330\tT\tA,<DEL>\t11\n20\t1110696\tA\tG,T,*\t10\n"
        "20\t1234567\tGTC\tG,GTCT\t9\n");
  CHECK(Bcftools({"query", "-f",
                  "%INFO/GEX_NOT_RUN\\t%INFO/GEX_NOT_RUN_REASON\\t%INFO/GEX_SKIPPED_ALT\\n",
                  outputs[0]}) == "1\tNO_TSS_ON_CONTIG\t.\n.\t.\t<DEL>\n.\t.\t*\n.\t.\t.\n");
  CHECK_THAT(body,
             Catch::Contains("GEX_ANN=A|GENE|ENSG1|NM_1|100|+|-5|0.5|-0.25|0|upstream_gene_variant"));
  CHECK_THAT(body, Catch::Contains("GT\t0|1"));  // samples pass through

  const std::string header = Bcftools({"view", "-h", outputs[0]});
  CHECK_THAT(header, Catch::Contains("##INFO=<ID=GEX_ANN,Number=.,Type=String"));
  CHECK_THAT(header, Catch::Contains("Allele|Gene|Gene_ID|Transcript_ID|TSS|Strand|TSS_distance|"
                                     "log2FC_1|log2FC_2|log2FC_3|Consequence\">"));
  CHECK_THAT(header, Catch::Contains("##INFO=<ID=GEX_NOT_RUN,Number=0,Type=Flag"));
  CHECK_THAT(header, Catch::Contains("##INFO=<ID=GEX_NOT_RUN_REASON,Number=1,Type=String"));
  CHECK_THAT(header, Catch::Contains("##INFO=<ID=GEX_SKIPPED_ALT,Number=.,Type=String"));
  CHECK_THAT(header, Catch::Contains("##GEXDistanceConvention=signed, negative upstream"));
  // The field's own reader: bcftools +split-vep lists exactly these sub-fields (nothing after
  // the list leaks into the last name) and extracts them by name.
  CHECK(Bcftools({"+split-vep", "-l", "-a", "GEX_ANN", outputs[0]}) ==
        "0\tAllele\n1\tGene\n2\tGene_ID\n3\tTranscript_ID\n4\tTSS\n5\tStrand\n"
        "6\tTSS_distance\n7\tlog2FC_1\n8\tlog2FC_2\n9\tlog2FC_3\n10\tConsequence\n");
  CHECK(Bcftools({"+split-vep", "-a", "GEX_ANN", "-f",
                  "%POS\t%Gene\t%Consequence\t%log2FC_2\n", outputs[0]}) ==
        "17330\tGENE\tupstream_gene_variant\t-0.25\n1110696\tGENE\tupstream_gene_variant\t"
        "-0.25\n1234567\tGENE\tupstream_gene_variant\t-0.25\n");
  CHECK_THAT(header, Catch::Contains("##GEXWindow=5000"));
  CHECK_THAT(header, Catch::Contains("##GEXAnnotationRelease=test release; with semicolon"));
  CHECK_THAT(header, Catch::Contains("##GEXRequestedGenes=ENSG00000101076,ENSG00000132639"));
  CHECK_THAT(header, Catch::Contains("##GEXTissue=<ID=2,Description=\"liver \\\"left\\\" lobe "
                                     "second line\">"));
  CHECK_THAT(header, !Catch::Contains("##GEXModel"));
  CHECK_THAT(header, Catch::Contains("##INFO=<ID=DP"));  // the input's own header stays

  // Read back with our own reader: an annotated file is recognised as such.
  auto again = VcfRewriter::Open(outputs[0]);
  REQUIRE(again.ok());
  CHECK((*again)->HeaderHasGexFields());
}

TEST_CASE("##GEXModel is written only when a model scored, and no panel reads ALL", "[vcf]") {
  std::string dir = NewDir();
  WriteFile(dir + "/in.vcf", kSmallVcf);
  GexHeader with_model = TestHeader("expression-test-model");
  with_model.requested_genes.reset();
  REQUIRE(Rewrite(dir + "/in.vcf", dir + "/out.vcf.gz", NotRun, with_model).ok());
  const std::string header = Bcftools({"view", "-h", dir + "/out.vcf.gz"});
  CHECK_THAT(header, Catch::Contains("##GEXModel=expression-test-model"));
  CHECK_THAT(header, Catch::Contains("##GEXRequestedGenes=ALL"));
}

TEST_CASE("each tissue's matched training context gets its own ##dnaserve_ header line",
          "[vcf]") {
  std::string dir = NewDir();
  WriteFile(dir + "/in.vcf", kSmallVcf);
  GexHeader header = TestHeader("expression-test-model");
  // heart: matched; the second tissue: unmatched; brain: the model reported nothing.
  header.tissue_matches = {
      TissueMatch{true, {{"E104", "Right Atrium", 0.51298}, {"E095", "Left Ventricle", 0.49}}},
      TissueMatch{false, {{"E003", "H1 \"Cells\"", 0.0}}},
      std::nullopt};
  REQUIRE(Rewrite(dir + "/in.vcf", dir + "/out.vcf.gz", NotRun, header).ok());
  const std::string text = Bcftools({"view", "-h", dir + "/out.vcf.gz"});
  CHECK_THAT(text, Catch::Contains("##dnaserve_description_match=<Tissue=1,Description=\"heart\","
                                   "Matched=true,Context=E104,Name=\"Right Atrium\","
                                   "Similarity=0.5130>"));
  CHECK_THAT(text, Catch::Contains("##dnaserve_description_match=<Tissue=2,Description=\"liver "
                                   "\\\"left\\\" lobe second line\",Matched=false,Context=E003,"
                                   "Name=\"H1 \\\"Cells\\\"\",Similarity=0.0000>"));
  CHECK_THAT(text, !Catch::Contains("<Tissue=3,"));
  // The GEX_ANN line is untouched by it.
  CHECK_THAT(text, Catch::Contains("##INFO=<ID=GEX_ANN,"));
}

TEST_CASE("the 1000 Genomes chr22 VCF from Debian round-trips every record", "[vcf][debian]") {
  std::string why;
  auto chr22 = testing::DebianPackageFile(
      "r-bioc-variantannotation", "usr/lib/R/site-library/VariantAnnotation/extdata/chr22.vcf.gz",
      &why);
  if (!chr22) {
    WARN("skipped: " << why);
    return;
  }
  std::string dir = NewDir();
  auto records = Rewrite(*chr22, dir + "/chr22.annotated.vcf.gz", NotRun);
  REQUIRE(records.ok());
  CHECK(records->size() == 10376);
  const std::string fields = "%CHROM\\t%POS\\t%ID\\t%REF\\t%ALT\\t%QUAL\\t%FILTER\\n";
  CHECK(Bcftools({"query", "-f", fields, dir + "/chr22.annotated.vcf.gz"}) ==
        Bcftools({"query", "-f", fields, *chr22}));
  CHECK(Bcftools({"query", "-f", "[%GT]\\n", dir + "/chr22.annotated.vcf.gz"}) ==
        Bcftools({"query", "-f", "[%GT]\\n", *chr22}));
  CHECK(CountLines(Bcftools(
            {"view", "-H", "-i", "INFO/GEX_NOT_RUN=1", dir + "/chr22.annotated.vcf.gz"})) == 10376);
}

TEST_CASE("python-pyvcf-examples: good files round-trip, broken ones fail cleanly",
          "[vcf][debian]") {
  std::string why;
  auto probe = testing::DebianPackageFile("python-pyvcf-examples",
                                          std::string(kPyvcfDir) + "example-4.0.vcf", &why);
  if (!probe) {
    WARN("skipped: " << why);
    return;
  }
  std::string dir = NewDir();
  struct Good {
    const char* name;
    size_t records;
  };
  // Includes undeclared contigs, INFO and FILTER ids, breakends, symbolic SVs, missing values.
  for (const Good& good : std::vector<Good>{{"example-4.0.vcf", 6},
                                            {"example-4.1.vcf", 5},
                                            {"example-4.1-sv.vcf", 6},
                                            {"example-4.1-ploidy.vcf", 2},
                                            {"contig_idonly.vcf", 0},
                                            {"mixed-filtering.vcf", 5},
                                            {"issue-140-file1.vcf", 17},
                                            {"samtools.vcf", 11},
                                            {"string_as_flag.vcf", 4},
                                            {"walk_left.vcf", 6},
                                            {"freebayes.vcf.gz", 104},
                                            {"gatk.vcf.gz", 37},
                                            {"issue-201.vcf.gz", 3},
                                            {"1kg.sites.vcf.gz", 171},
                                            {"tb.vcf.gz", 5}}) {
    CAPTURE(good.name);
    const std::string path = PyvcfExample(good.name), out = dir + "/" + good.name + ".out.vcf.gz";
    auto records = Rewrite(path, out, NotRun);
    if (!records.ok()) FAIL(records.status().message());
    CHECK(records->size() == good.records);
    CHECK(CountLines(Bcftools({"view", "-H", out})) == good.records);
    const std::string fields = "%CHROM\\t%POS\\t%REF\\t%ALT\\n";
    CHECK(Bcftools({"query", "-f", fields, out}) == Bcftools({"query", "-f", fields, path}));
  }
  struct Bad {
    const char* name;
    const char* says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"example-4.1-bnd.vcf", "header is malformed"},  // spaces in #CHROM line
           {"example-4.1-info-multiple-values.vcf", "header is malformed"},
           {"metadata-whitespace.vcf.gz", "header is malformed"},
           {"issue-16.vcf", "record 1 cannot be parsed"},   // FORMAT without samples
           {"issue-254.vcf", "record 1 cannot be parsed"},  // '.' inside a FORMAT value
           {"strelka.vcf.gz", "cannot be parsed"},          // sample count mismatch
       }) {
    CAPTURE(bad.name);
    const std::string out = dir + "/" + bad.name + ".bad.vcf.gz";
    auto records = Rewrite(PyvcfExample(bad.name), out, NotRun);
    REQUIRE_FALSE(records.ok());
    CHECK(records.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(records.status().message(), Catch::Contains(bad.says));
    CHECK_FALSE(Exists(out));
  }
}

TEST_CASE("bad input is a clear error and leaves no output behind", "[vcf]") {
  std::string dir = NewDir();
  struct Bad {
    std::string name;
    std::string content;
    std::string says;
  };
  const std::string header = kSmallVcf.substr(0, kSmallVcf.find("20\t14370"));
  std::vector<Bad> cases = {
      {"empty.vcf", "", "is empty"},
      {"text.vcf", "hello world\nthis is not a vcf\n", "not a VCF"},
      {"no-chrom.vcf",
       "##fileformat=VCFv4.2\n##INFO=<ID=DP,Number=1,Type=Integer,"
       "Description=\"d\">\n",
       "header is malformed"},
      {"bad-pos.vcf", header + "20\tABC\t.\tA\tG\t.\t.\t.\tGT\t0/1\n",
       "record 1 cannot be parsed: POS is not a whole number"},
      {"few-columns.vcf", header + "20\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\n20\t200\t.\tA\n",
       "record 2 (after 20:100) cannot be parsed: it has 4 tab-separated columns"},
      {"blank-line.vcf", header + "20\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\n\n", "empty line"},
      {"cut.vcf", header + "20\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\n20\t200\t.\tA\tG\t.\t.",
       "record 2 (after 20:100) cannot be parsed: it has 7 tab-separated columns"},
      {"samples.vcf", header + "20\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n",
       "header's 1 samples need 10"},
      {"gex-header.vcf",
       "##fileformat=VCFv4.2\n##INFO=<ID=GEX_ANN,Number=.,Type=String,Description=\"x\">\n"
       "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n20\t1\t.\tA\tG\t.\t.\t.\n",
       "already carries GEX_* fields"},
      {"gex-record.vcf",
       "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
       "20\t1\t.\tA\tG\t.\t.\tDP=3\n20\t5\t.\tA\tG\t.\t.\tGEX_NOT_RUN\n",
       "already carries GEX_* fields"},
  };
  for (const Bad& bad : cases) {
    CAPTURE(bad.name);
    WriteFile(dir + "/" + bad.name, bad.content);
    auto records = Rewrite(dir + "/" + bad.name, dir + "/" + bad.name + ".out", NotRun);
    REQUIRE_FALSE(records.ok());
    CHECK(records.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(records.status().message(), Catch::Contains(bad.says));
    CHECK_FALSE(Exists(dir + "/" + bad.name + ".out"));
  }

  // Compressed inputs cut short: plain gzip mid-stream, bgzip mid-block and at a block boundary
  // (no end-of-file marker).
  std::string big = header;
  for (int i = 1; i <= 3000; ++i) {
    big += "20\t" + std::to_string(i * 10) + "\trs" + std::to_string(i) +
           "\tA\tG\t50\tPASS\tDP=" + std::to_string(i % 90) + "\tGT\t0/1\n";
  }
  WriteFile(dir + "/big.vcf", big);
  Compress(dir, "big.vcf");
  const std::string gz = ReadFile(dir + "/big.vcf.gz");
  const std::string bgz = ReadFile(dir + "/big.vcf.bgz");
  REQUIRE(bgz.size() > 28);
  WriteFile(dir + "/cut.vcf.gz", gz.substr(0, gz.size() / 2));
  WriteFile(dir + "/cut.vcf.bgz", bgz.substr(0, bgz.size() / 2));
  WriteFile(dir + "/no-eof.vcf.bgz", bgz.substr(0, bgz.size() - 28));  // drop the EOF block
  for (const char* name : {"cut.vcf.gz", "cut.vcf.bgz", "no-eof.vcf.bgz"}) {
    CAPTURE(name);
    auto records = Rewrite(dir + "/" + name, dir + "/" + name + ".out", NotRun);
    REQUIRE_FALSE(records.ok());
    CHECK(records.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(records.status().message(), Catch::Contains("truncated"));
    CHECK_FALSE(Exists(dir + "/" + name + ".out"));
  }
  // The whole files are fine.
  auto whole = Rewrite(dir + "/big.vcf.gz", dir + "/whole.out", NotRun);
  REQUIRE(whole.ok());
  CHECK(whole->size() == 3000);

  // BCF is not VCF text.
  REQUIRE(RunCommand({"/usr/bin/bcftools", "view", "-Ob", "-o", dir + "/in.bcf", dir + "/big.vcf"},
                     nullptr) == 0);
  auto bcf = Rewrite(dir + "/in.bcf", dir + "/bcf.out", NotRun);
  REQUIRE_FALSE(bcf.ok());
  CHECK_THAT(bcf.status().message(), Catch::Contains("BCF"));
}

TEST_CASE("an unfinished output never appears and the input is untouched", "[vcf]") {
  std::string dir = NewDir();
  WriteFile(dir + "/in.vcf", kSmallVcf);
  {
    auto rewriter = VcfRewriter::Open(dir + "/in.vcf");
    REQUIRE(rewriter.ok());
    REQUIRE((*rewriter)->Check(nullptr).ok());
    REQUIRE((*rewriter)->Begin(dir + "/out.vcf.gz", GexHeaderLines(TestHeader())).ok());
    VariantRecord record;
    REQUIRE(*(*rewriter)->Next(&record));
    REQUIRE((*rewriter)->Write(NotRun(record)).ok());
    CHECK(FilesIn(dir) == 2);  // the input and the temporary output
    // Finish before every record was written is refused.
    CHECK_FALSE((*rewriter)->Finish().ok());
  }  // abandoned: the temporary file goes with it
  CHECK_FALSE(Exists(dir + "/out.vcf.gz"));
  CHECK(FilesIn(dir) == 1);
  CHECK(ReadFile(dir + "/in.vcf") == kSmallVcf);

  // A visitor's error stops the first pass.
  auto rewriter = VcfRewriter::Open(dir + "/in.vcf");
  REQUIRE(rewriter.ok());
  Status stopped = (*rewriter)->Check([](const VariantRecord& r) {
    return r.number == 3 ? BadRequest("stop at 3") : Status::Ok();
  });
  CHECK(stopped.message() == "stop at 3");
}

TEST_CASE("the header sniff finds VCFs and GEX fields in a prefix", "[vcf]") {
  std::string dir = NewDir();
  WriteFile(dir + "/in.vcf", kSmallVcf);
  Compress(dir, "in.vcf");
  for (const char* name : {"in.vcf", "in.vcf.gz", "in.vcf.bgz"}) {
    CAPTURE(name);
    auto scan = ScanVcfHeader(dir + "/" + name);
    REQUIRE(scan.ok());
    CHECK(scan->complete);
    CHECK_FALSE(scan->has_gex_fields);
  }
  // Only the first bytes of a file whose header is longer (compressed too): not complete, but
  // a VCF.
  std::string long_header = "##fileformat=VCFv4.2\n";
  for (int i = 0; i < 2000; ++i) {
    long_header += "##INFO=<ID=F" + std::to_string(i * 7919 % 10007) +
                   ",Number=1,Type=Integer,Description=\"field " + std::to_string(i * i) + "\">\n";
  }
  WriteFile(dir + "/long.vcf", long_header + kSmallVcf.substr(kSmallVcf.find("#CHROM")));
  Compress(dir, "long.vcf");
  for (const char* name : {"long.vcf", "long.vcf.gz", "long.vcf.bgz"}) {
    CAPTURE(name);
    REQUIRE(ReadFile(dir + "/" + name).size() > 10000);
    WriteFile(dir + "/prefix", ReadFile(dir + "/" + name).substr(0, 8000));
    auto scan = ScanVcfHeader(dir + "/prefix");
    REQUIRE(scan.ok());
    CHECK_FALSE(scan->complete);
  }
  WriteFile(dir + "/gex.vcf", "##fileformat=VCFv4.2\n##GEXWindow=5000\n#CHROM\tPOS\n");
  auto gex = ScanVcfHeader(dir + "/gex.vcf");
  REQUIRE(gex.ok());
  CHECK(gex->has_gex_fields);
  WriteFile(dir + "/not.vcf", "chr1\t100\t200\n");
  CHECK(ScanVcfHeader(dir + "/not.vcf").status().code() == ErrorCode::kBadRequest);
  WriteFile(dir + "/empty.vcf", "");
  CHECK_THAT(ScanVcfHeader(dir + "/empty.vcf").status().message(), Catch::Contains("empty"));
  // A one-block bgzip file cut short: nothing decompresses, and the message says so.
  const std::string small = ReadFile(dir + "/in.vcf.bgz");
  WriteFile(dir + "/cut.vcf.gz", small.substr(0, small.size() - 40));
  auto cut = ScanVcfHeader(dir + "/cut.vcf.gz");
  CHECK(cut.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(cut.status().message(), Catch::Contains("corrupt or truncated"));
}

TEST_CASE("INFO values are escaped so free text cannot break a record", "[vcf]") {
  CHECK(InfoValueEscape("<DEL:ME>") == "<DEL:ME>");
  CHECK(InfoValueEscape("a;b=c,d e%") == "a%3Bb%3Dc%2Cd%20e%25");
}

VcfLimits Limits(int64_t records, int64_t alts, int64_t line, int64_t header, int64_t text) {
  VcfLimits l;
  l.max_records = records;
  l.max_alts_per_record = alts;
  l.max_line_bytes = line;
  l.max_header_bytes = header;
  l.max_decompressed_bytes = text;
  return l;
}

StatusOr<int64_t> CheckWith(const std::string& path, const VcfLimits& limits) {
  auto rewriter = VcfRewriter::Open(path, limits);
  if (!rewriter.ok()) return rewriter.status();
  DNASERVE_RETURN_IF_ERROR((*rewriter)->Check(nullptr));
  return (*rewriter)->record_count();
}

TEST_CASE("each bound on the input VCF fails it with the bound, the record and the fix",
          "[vcf][bounds]") {
  std::string dir = NewDir();
  const std::string header = kSmallVcf.substr(0, kSmallVcf.find("20\t14370"));
  const VcfLimits roomy = Limits(100, 10, 4096, 4096, 1 << 20);
  WriteFile(dir + "/small.vcf", kSmallVcf);
  Compress(dir, "small.vcf");
  for (const char* name : {"small.vcf", "small.vcf.gz", "small.vcf.bgz"}) {
    CAPTURE(name);
    auto count = CheckWith(dir + "/" + name, roomy);
    REQUIRE(count.ok());
    CHECK(*count == 4);

    // Records: exactly the bound passes, one more fails.
    CHECK(CheckWith(dir + "/" + name, Limits(4, 10, 4096, 4096, 1 << 20)).ok());
    auto records = CheckWith(dir + "/" + name, Limits(3, 10, 4096, 4096, 1 << 20));
    CHECK(records.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(records.status().message(), Catch::Contains("more than 3 records") &&
                                               Catch::Contains("split it"));

    // ALTs: record 3 has three (G,T,*).
    CHECK(CheckWith(dir + "/" + name, Limits(100, 3, 4096, 4096, 1 << 20)).ok());
    auto alts = CheckWith(dir + "/" + name, Limits(100, 2, 4096, 4096, 1 << 20));
    CHECK(alts.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(alts.status().message(),
               Catch::Contains("record 3 (20:1110696) has 3 ALT alleles; at most 2") &&
                   Catch::Contains("bcftools norm -m -any"));

    // Header bytes (the header is ~260 bytes).
    auto big_header = CheckWith(dir + "/" + name, Limits(100, 10, 4096, 200, 1 << 20));
    CHECK(big_header.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(big_header.status().message(), Catch::Contains("header is longer than 200 bytes"));

    // Decompressed bytes: the whole text is ~450 bytes.
    auto text = CheckWith(dir + "/" + name, Limits(100, 10, 4096, 4096, 300));
    CHECK(text.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(text.status().message(), Catch::Contains("decompresses to more than 300 bytes"));
  }

  // Line length: a record line, then a header line, past the bound.
  WriteFile(dir + "/long-record.vcf",
            header + "20\t100\t.\tA\tG\t.\t.\tDP=1\tGT\t0/1\n20\t200\t.\tA\tG\t.\t.\tDP=" +
                std::string(5000, '7') + "\tGT\t0/1\n");
  auto line = CheckWith(dir + "/long-record.vcf", roomy);
  CHECK(line.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(line.status().message(),
             Catch::Contains("line longer than 4,096 bytes") &&
                 Catch::Contains("at record 2 (after 20:100)") && Catch::Contains("bcftools view -G"));
  WriteFile(dir + "/long-header.vcf", "##fileformat=VCFv4.2\n##note=" + std::string(5000, 'x') +
                                          "\n" + header.substr(header.find("##contig")));
  auto header_line = CheckWith(dir + "/long-header.vcf", roomy);
  CHECK_THAT(header_line.status().message(), Catch::Contains("in its header"));

  // 65,000 ALT alleles at one site (htslib's own limit is 65,535): refused by the default
  // bound, before htslib parses the record.
  std::string many = "C";
  for (int i = 1; i < 65000; ++i) many += i % 2 ? ",A" : ",G";
  WriteFile(dir + "/many-alts.vcf", header + "20\t100\t.\tT\t" + many + "\t.\t.\tDP=1\tGT\t0/1\n");
  auto many_alts = CheckWith(dir + "/many-alts.vcf", VcfLimits{});
  CHECK_THAT(many_alts.status().message(),
             Catch::Contains("record 1 (20:100) has 65,000 ALT alleles; at most 1,000"));
}

TEST_CASE("a gzip bomb ends at the line bound with bounded reading", "[vcf][bounds]") {
  std::string dir = NewDir();
  // One record whose INFO inflates to 512 MiB: 64 members of 8 MiB each, ~0.5 MB on disk.
  const std::string header = kSmallVcf.substr(0, kSmallVcf.find("20\t14370"));
  const std::string filler = GzipMember(std::string(8 << 20, 'A'));
  std::string bomb = GzipMember(header + "20\t100\t.\tA\tG\t.\t.\tX=");
  for (int i = 0; i < 64; ++i) bomb += filler;
  bomb += GzipMember("\tGT\t0/1\n");
  REQUIRE(bomb.size() < (1 << 20));
  WriteFile(dir + "/bomb.vcf.gz", bomb);

  auto reader = LineReader::Open(dir + "/bomb.vcf.gz", 1 << 20, int64_t{1} << 40);
  REQUIRE(reader);
  std::string_view line;
  int header_lines = 0;
  LineReader::Result result;
  while ((result = reader->Next(&line)) == LineReader::Result::kLine) ++header_lines;
  CHECK(header_lines == 5);
  CHECK(result == LineReader::Result::kLineTooLong);
  // It stopped within one read of the bound, not at the end of the line.
  CHECK(reader->text_bytes() < (1 << 20) + (256 << 10) + static_cast<int64_t>(header.size()));
  CHECK(reader->Next(&line) == LineReader::Result::kLineTooLong);  // sticky

  auto checked = CheckWith(dir + "/bomb.vcf.gz", VcfLimits{});
  CHECK(checked.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(checked.status().message(),
             Catch::Contains("line longer than 8,388,608 bytes") && Catch::Contains("record 1"));
  // The decompressed-bytes bound, when it comes first.
  auto text = CheckWith(dir + "/bomb.vcf.gz", Limits(100, 10, int64_t{1} << 30, 1 << 20, 4 << 20));
  CHECK_THAT(text.status().message(), Catch::Contains("decompresses to more than 4,194,304"));
}

TEST_CASE("the line reader: plain, gzip and bgzip alike, CRLF, no final newline, damage",
          "[vcf][bounds]") {
  std::string dir = NewDir();
  const std::string text = "first\r\nsecond\n\nlast without newline";
  WriteFile(dir + "/t.txt", text);
  Compress(dir, "t.txt");
  for (const char* name : {"t.txt", "t.txt.gz", "t.txt.bgz"}) {
    CAPTURE(name);
    auto reader = LineReader::Open(dir + "/" + name, 0, 0);
    REQUIRE(reader);
    std::vector<std::string> lines;
    std::string_view line;
    while (reader->Next(&line) == LineReader::Result::kLine) lines.emplace_back(line);
    CHECK(lines == std::vector<std::string>{"first", "second", "", "last without newline"});
    CHECK(reader->Next(&line) == LineReader::Result::kEnd);
    CHECK(reader->text_bytes() == static_cast<int64_t>(text.size()));
  }
  CHECK_FALSE(LineReader::Open(dir + "/absent", 0, 0));
  // A gzip stream whose CRC does not match its data.
  std::string gz = GzipMember(std::string(100000, 'x') + "\n");
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x5a);
  WriteFile(dir + "/damaged.gz", gz);
  auto damaged = LineReader::Open(dir + "/damaged.gz", 0, 0);
  std::string_view line;
  LineReader::Result result;
  while ((result = damaged->Next(&line)) == LineReader::Result::kLine) {
  }
  CHECK(result == LineReader::Result::kCorrupt);
  CHECK_FALSE(damaged->error().empty());
}

}  // namespace
}  // namespace dnaserve::variant
