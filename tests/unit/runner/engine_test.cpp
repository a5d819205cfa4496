// The annotation engine with fake scorers: window construction on both strands (against a
// whole-haplotype oracle, for SNVs, MNVs, insertions, deletions and contig ends), strand-aware
// distances, the fold change, the not-run reasons with and without a panel, GEX_SKIPPED_ALT,
// the counts' invariants, reference-window caching, ##GEXModel only when a model scored,
// progress, cancellation and failures; and a run on real chr20 with the default catalogue.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "runner/genome/gene_panel.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"
#include "runner/variant/allele.h"
#include "runner/variant/annotate_vcf.h"
#include "runner/variant/annotation_engine.h"
#include "runner/variant/tss_window.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/unit/runner/variant_test_support.h"

namespace dnaserve::variant {
namespace {

std::string RandomBases(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, 'A');
  for (auto& c : out) c = "ACGT"[rng() % 4];
  return out;
}

// --- an independent oracle: the whole alternate haplotype, sliced ---------------------------

std::string OracleWindow(const std::string& genome, Strand strand, int64_t tss) {
  const int64_t start = strand == Strand::kPlus ? tss - 4599 : tss - 4598;
  std::string out;
  for (int64_t i = start; i < start + 9198; ++i) {
    out.push_back(i < 0 || i >= static_cast<int64_t>(genome.size()) ? 'N' : genome[i]);
  }
  return strand == Strand::kPlus ? out : ReverseComplement(out);
}

std::string OracleAlternate(const std::string& genome, Strand strand, int64_t tss, int64_t s,
                            const std::string& ref, const std::string& alt) {
  const std::string haplotype = genome.substr(0, s) + alt + genome.substr(s + ref.size());
  const int64_t r = ref.size(), a = alt.size();
  int64_t moved = tss;
  if (tss >= s + r) {
    moved = tss + a - r;
  } else if (tss >= s) {
    moved = tss - s < a ? tss : (strand == Strand::kPlus ? s + a : s + a - 1);
  }
  return OracleWindow(haplotype, strand, moved);
}

StartSite Site(int64_t tss, Strand strand, std::string symbol = "G", std::string id = "ENSG1") {
  StartSite s;
  s.contig = "chr1";
  s.tss = tss;
  s.strand = strand;
  s.gene_symbol = std::move(symbol);
  s.gene_id = std::move(id);
  s.transcript_id = ".";
  return s;
}

FetchBases FetchFrom(const std::string& genome) {
  return [&genome](int64_t start, int64_t end) -> StatusOr<std::string> {
    std::string out;
    for (int64_t i = start; i < end; ++i) {
      out.push_back(i < 0 || i >= static_cast<int64_t>(genome.size()) ? 'N' : genome[i]);
    }
    return out;
  };
}

TEST_CASE("reference windows sit on the sense strand with the TSS at 4599", "[engine]") {
  const std::string genome = RandomBases(30000, 1);
  auto plus = ReferenceWindow(Site(12000, Strand::kPlus), FetchFrom(genome));
  REQUIRE(plus.ok());
  REQUIRE(plus->size() == 9198);
  CHECK(*plus == genome.substr(12000 - 4599, 9198));
  CHECK((*plus)[4599] == genome[12000]);
  auto minus = ReferenceWindow(Site(12000, Strand::kMinus), FetchFrom(genome));
  REQUIRE(minus.ok());
  CHECK(*minus == ReverseComplement(genome.substr(12000 - 4598, 9198)));
  CHECK((*minus)[4599] == ReverseComplement(genome.substr(12000, 1))[0]);
  // The base just upstream on each strand: genomic left on '+', genomic right on '-'.
  CHECK((*plus)[4598] == genome[11999]);
  CHECK((*minus)[4598] == ReverseComplement(genome.substr(12001, 1))[0]);
  // Near the contig's ends the window is padded with N, never shortened.
  auto start = ReferenceWindow(Site(10, Strand::kPlus), FetchFrom(genome));
  REQUIRE(start.ok());
  CHECK(start->size() == 9198);
  CHECK(start->substr(0, 4589) == std::string(4589, 'N'));
  CHECK((*start)[4599] == genome[10]);
  auto end = ReferenceWindow(Site(29990, Strand::kMinus), FetchFrom(genome));
  REQUIRE(end.ok());
  CHECK(end->substr(0, 4590) == std::string(4590, 'N'));  // sense upstream = past the end
}

TEST_CASE("alternate windows match the whole-haplotype oracle", "[engine]") {
  const std::string genome = RandomBases(40000, 2);
  std::mt19937_64 rng(3);
  int differing = 0, identical = 0;
  for (int i = 0; i < 3000; ++i) {
    const Strand strand = rng() % 2 ? Strand::kPlus : Strand::kMinus;
    int64_t tss = 0;
    switch (rng() % 4) {
      case 0:
        tss = 50 + rng() % 200;
        break;  // near the start
      case 1:
        tss = 40000 - 1 - rng() % 200;
        break;  // near the end
      default:
        tss = 5000 + rng() % 30000;
    }
    const int64_t ref_len = 1 + rng() % (rng() % 3 == 0 ? 40 : 3);
    const int64_t lo = std::max<int64_t>(0, tss - 6000);
    const int64_t hi = std::min<int64_t>(40000 - ref_len, tss + 6000);
    int64_t s = lo + rng() % (hi - lo + 1);
    if (rng() % 5 == 0) s = std::max<int64_t>(0, std::min<int64_t>(tss - rng() % ref_len, hi));
    const std::string ref = genome.substr(s, ref_len);
    std::string alt;
    switch (rng() % 4) {
      case 0:
        alt = RandomBases(ref_len, rng());
        break;  // SNV / MNV
      case 1:
        alt = ref.substr(0, 1) + RandomBases(1 + rng() % 30, rng());
        break;  // insertion
      case 2:
        alt = ref.substr(0, 1);
        break;  // deletion
      default:
        alt = RandomBases(1 + rng() % 5, rng());  // complex
    }
    CAPTURE(i, tss, s, ref, alt, strand == Strand::kPlus);
    const StartSite site = Site(tss, strand);
    auto window = AlternateWindow(site, {s, ref, alt}, FetchFrom(genome));
    REQUIRE(window.ok());
    REQUIRE(window->size() == 9198);
    const std::string expected = OracleAlternate(genome, strand, tss, s, ref, alt);
    REQUIRE(*window == expected);
    if (*window == OracleWindow(genome, strand, tss)) {
      ++identical;
    } else {
      ++differing;
    }
  }
  CHECK(differing > 1500);  // most cases change the window; far ones do not
  CHECK(identical > 50);
}

TEST_CASE("alternate windows: worked cases", "[engine]") {
  const std::string genome = RandomBases(30000, 4);
  const int64_t tss = 15000;
  auto alt_base = [&](char b) { return std::string(1, b == 'A' ? 'C' : 'A'); };
  // SNV 10 bp downstream of a '+' TSS: sense offset 4609 changes, nothing else.
  {
    const std::string ref = genome.substr(tss + 10, 1), alt = alt_base(ref[0]);
    auto w = AlternateWindow(Site(tss, Strand::kPlus), {tss + 10, ref, alt}, FetchFrom(genome));
    auto r = ReferenceWindow(Site(tss, Strand::kPlus), FetchFrom(genome));
    REQUIRE((w.ok() && r.ok()));
    CHECK((*w)[4609] == alt[0]);
    CHECK(w->substr(0, 4609) == r->substr(0, 4609));
    CHECK(w->substr(4610) == r->substr(4610));
  }
  // The same genomic SNV for a '-' gene is 10 bp upstream: sense offset 4589, complemented.
  {
    const std::string ref = genome.substr(tss + 10, 1), alt = alt_base(ref[0]);
    auto w = AlternateWindow(Site(tss, Strand::kMinus), {tss + 10, ref, alt}, FetchFrom(genome));
    REQUIRE(w.ok());
    CHECK((*w)[4589] == ReverseComplement(alt)[0]);
  }
  // A 3 bp deletion 100 bp upstream of a '+' TSS: downstream unchanged, upstream shifted by 3.
  {
    const int64_t s = tss - 100;
    const std::string ref = genome.substr(s, 4), alt = ref.substr(0, 1);
    auto w = AlternateWindow(Site(tss, Strand::kPlus), {s, ref, alt}, FetchFrom(genome));
    REQUIRE(w.ok());
    CHECK(w->substr(4599) == genome.substr(tss, 4599));  // TSS onwards unchanged
    CHECK(w->substr(0, 4499 - 3) == genome.substr(tss - 4599 - 3, 4499 - 3));  // shifted
  }
  // A deletion removing a '+' TSS: the next base downstream becomes the window's centre.
  {
    const int64_t s = tss - 2;
    const std::string ref = genome.substr(s, 6), alt = ref.substr(0, 1);
    auto w = AlternateWindow(Site(tss, Strand::kPlus), {s, ref, alt}, FetchFrom(genome));
    REQUIRE(w.ok());
    CHECK((*w)[4599] == genome[s + 6]);
    CHECK((*w)[4598] == genome[s]);
  }
}

TEST_CASE("TSS distances are strand-aware, negative upstream, 0 over the TSS", "[engine]") {
  const StartSite plus = Site(1000, Strand::kPlus), minus = Site(1000, Strand::kMinus);
  CHECK(TssDistance(plus, 900, 1) == -100);
  CHECK(TssDistance(plus, 1050, 1) == 50);
  CHECK(TssDistance(plus, 1000, 1) == 0);
  CHECK(TssDistance(plus, 995, 10) == 0);  // REF covers the TSS
  CHECK(TssDistance(plus, 990, 5) == -6);  // nearest REF base 994
  CHECK(TssDistance(minus, 1100, 1) == -100);
  CHECK(TssDistance(minus, 950, 1) == 50);
  CHECK(TssDistance(minus, 1001, 3) == -1);
  CHECK(TssDistance(minus, 990, 5) == 6);
}

TEST_CASE("the fold change back-transforms log(TPM+1) with a pseudo-count of 1 TPM", "[engine]") {
  CHECK(Log2FoldChange(2.0, 2.0) == 0.0);
  CHECK(Log2FoldChange(3.0, 1.0) == Approx(2.0 / std::log(2.0)));
  CHECK(Log2FoldChange(std::log(8.0), 0.0) == Approx(3.0));  // 7 TPM vs 0 TPM: log2(8/1)
  CHECK(Log2FoldChange(-0.5, 0.0) == 0.0);                   // negative predictions clamp at 0 TPM
  CHECK(Log2FoldChange(0.0, std::log(4.0)) == Approx(-2.0));
}

TEST_CASE("ALT alleles are classified as the spec's skip rules need", "[engine]") {
  CHECK(ClassifyAlt("A") == AlleleKind::kSequence);
  CHECK(ClassifyAlt("ACGTN") == AlleleKind::kSequence);
  CHECK(ClassifyAlt("acgt") == AlleleKind::kSequence);
  CHECK(ClassifyAlt("<DEL>") == AlleleKind::kSymbolic);
  CHECK(ClassifyAlt("<INS:ME:ALU>") == AlleleKind::kSymbolic);
  CHECK(ClassifyAlt("<NON_REF>") == AlleleKind::kSymbolic);
  CHECK(ClassifyAlt("C<ctg1>") == AlleleKind::kSymbolic);
  CHECK(ClassifyAlt("G]17:198982]") == AlleleKind::kBreakend);
  CHECK(ClassifyAlt("[13:123457[A") == AlleleKind::kBreakend);
  CHECK(ClassifyAlt(".A") == AlleleKind::kBreakend);
  CHECK(ClassifyAlt("G.") == AlleleKind::kBreakend);
  CHECK(ClassifyAlt("*") == AlleleKind::kSpanningDeletion);
  CHECK(ClassifyAlt(".") == AlleleKind::kMissing);
  CHECK(ClassifyAlt("AXG") == AlleleKind::kInvalid);
  CHECK(ClassifyAlt("") == AlleleKind::kInvalid);
  CHECK(IsSequenceAllele("GTC"));
  CHECK_FALSE(IsSequenceAllele("G-C"));
}

// --- the whole engine over a small genome the test writes -----------------------------------

// Deterministic log(TPM+1) from the sequence near the TSS and the tissue, recording requests.
class FakeScorer : public ExpressionScorer {
 public:
  static double Value(std::string_view sequence, std::string_view description) {
    int g = 0;
    for (size_t i = 4400; i < 4800; ++i) g += sequence[i] == 'G';
    return 1.0 + g / 40.0 + (description == "liver" ? 0.5 : 0.0);
  }
  StatusOr<std::vector<double>> Score(const std::vector<ScoreRequest>& batch,
                                      const std::atomic<bool>* cancelled) override {
    if (fail_after >= 0 && calls >= fail_after) return Unavailable("worker down");
    ++calls;
    std::vector<double> out;
    for (const auto& r : batch) {
      CHECK(r.sequence.size() == 9198);
      requests[std::string(r.sequence)][std::string(r.description)] += 1;
      out.push_back(Value(r.sequence, r.description));
    }
    if (cancel_on_call >= 0 && calls > cancel_on_call && cancel) *cancel = true;
    (void)cancelled;
    return out;
  }
  StatusOr<std::string> ModelId() override {
    ++model_id_calls;
    return std::string("fake-expression-model");
  }
  std::map<std::string, std::map<std::string, int>> requests;  // window -> tissue -> times
  int calls = 0;
  int model_id_calls = 0;
  int fail_after = -1;
  int cancel_on_call = -1;
  std::atomic<bool>* cancel = nullptr;
};

struct Fixture {
  std::string dir = testing::MakeTempDir("dnaserve-engine");
  std::string genome = RandomBases(60000, 5);
  std::string fasta = dir + "/ref.fa.gz";
  std::unique_ptr<ReferenceGenome> reference;
  std::optional<TssCatalogue> catalogue;
  // 0-based TSSs
  const int64_t kPlus = 20000, kPlus2 = 21000, kMinus = 30000, kEdge = 40, kFar = 50000;

  Fixture() {
    REQUIRE(
        testing::WriteIndexedFasta(fasta, {{"20", genome}, {"21", RandomBases(5000, 6)}}, true));
    auto ref = ReferenceGenome::Open(fasta);
    REQUIRE(ref.ok());
    reference = std::move(*ref);
    std::ofstream(dir + "/catalogue.tsv")
        << "##dnaserve-tss-catalogue=1\n##build=GRCh37\n##annotation_release=engine test\n"
           "##transcripts=engine test sites (not MANE Select)\n##position_base=0\n"
           "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
        << "chr20\t" << kPlus << "\t+\tPLUSA\tENSG00000000101\tNM_101\n"
        << "chr20\t" << kPlus2 << "\t+\tPLUSB\tENSG00000000102\tNM_102\n"
        << "chr20\t" << kMinus << "\t-\tMINUS\tENSG00000000103\t.\n"
        << "chr20\t" << kEdge << "\t+\tEDGE\tENSG00000000104\tNM_104\n"
        << "chr20\t" << kFar << "\t-\tFAR\tENSG00000000105\tNM_105\n";
    auto loaded = TssCatalogue::Load(dir + "/catalogue.tsv");
    REQUIRE(loaded.ok());
    catalogue = std::move(*loaded);
  }

  // 1-based POS with REF from the genome.
  std::string Record(int64_t pos, int64_t ref_len, const std::string& alts,
                     const std::string& contig = "20") const {
    std::string ref = contig == "20" ? genome.substr(pos - 1, ref_len) : std::string(ref_len, 'A');
    return contig + "\t" + std::to_string(pos) + "\t.\t" + ref + "\t" + alts + "\t.\tPASS\t.\n";
  }

  std::string WriteVcf(const std::string& name, const std::string& records) const {
    std::string path = dir + "/" + name;
    std::ofstream(path) << "##fileformat=VCFv4.2\n##contig=<ID=20,length=60000>\n"
                           "##contig=<ID=22,length=1000000>\n"
                           "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                        << records;
    return path;
  }

  AnnotateRequest Request(const std::string& input, ExpressionScorer* scorer) const {
    AnnotateRequest r;
    r.input_path = input;
    r.output_path = input + ".annotated.vcf.gz";
    r.catalogue = &*catalogue;
    r.reference = reference.get();
    r.scorer = scorer;
    r.options.window = 5000;
    r.options.tissues = {"heart", "liver"};
    return r;
  }

  char OtherBase(int64_t pos0) const { return genome[pos0] == 'A' ? 'C' : 'A'; }
};

std::string Query(const std::string& path, const std::string& format) {
  std::string out;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "query", "-f", format, path}, &out, {}, true) ==
          0);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t end = s.find(sep, pos);
    out.push_back(s.substr(pos, end == std::string::npos ? end : end - pos));
    if (end == std::string::npos) return out;
    pos = end + 1;
  }
}

void CheckInvariants(const AnnotationCounts& c) {
  CHECK(c.annotated + c.not_run == c.variants_in);
  int64_t reasons = 0;
  for (const auto& [reason, n] : c.not_run_reasons) {
    CHECK(n > 0);
    reasons += n;
  }
  CHECK(reasons == c.not_run);
  CHECK(c.annotated_alleles >= c.annotated);
  CHECK(c.associations >= c.annotated_alleles);
}

TEST_CASE("records are scored, skipped and explained as the spec says", "[engine]") {
  Fixture f;
  const int64_t p = f.kPlus + 1, m = f.kMinus + 1;  // 1-based TSS positions
  std::string records;
  records += f.Record(p - 100, 1, std::string(1, f.OtherBase(p - 101)));             // 1 PLUSA -100
  records += f.Record(p + 600, 1, std::string(1, f.OtherBase(p + 599)) + ",<DEL>");  // 2 both +
  records += f.Record(p + 10, 1, "<DEL>");                                           // 3 symbolic
  records += f.Record(p + 11, 1, "*");                                               // 4 '*'
  records += f.Record(p + 12, 1, ".");                                               // 5 no ALT
  records += f.Record(40001, 1, "G");                                                // 6 outside
  records += "22\t500\t.\tA\tG\t.\tPASS\t.\n";                                       // 7 contig
  records += f.Record(m + 200, 1, "A,T");                                            // 8 MINUS -200
  records += f.Record(m - 3, 6, f.genome.substr(m - 4, 1));                          // 9 del at TSS
  records += f.Record(p + 20, 1, "G]17:198982],A");                                  // 10 breakend
  records += f.Record(10, 1, std::string(1, f.OtherBase(9)));                        // 11 EDGE
  records += f.Record(p - 4800, 1, std::string(1, f.OtherBase(p - 4801)));           // 12 far
  const std::string input = f.WriteVcf("in.vcf", records);

  FakeScorer scorer;
  std::vector<AnnotationProgress> progress;
  AnnotateRequest request = f.Request(input, &scorer);
  request.on_progress = [&](const AnnotationProgress& p) { progress.push_back(p); };
  auto result = AnnotateVcf(request);
  if (!result.ok()) FAIL(result.status().message());
  const AnnotationCounts& c = result->counts;
  CheckInvariants(c);
  CHECK(c.variants_in == 12);
  CHECK(c.not_run_reasons == std::map<std::string, int64_t>{{"NO_SUPPORTED_ALT", 3},
                                                            {"OUTSIDE_TSS_WINDOW", 1},
                                                            {"NO_TSS_ON_CONTIG", 1}});
  CHECK(c.annotated == 7);
  CHECK(c.skipped_alleles == 4);  // <DEL> twice, *, the breakend
  CHECK(result->model == std::string("fake-expression-model"));
  CHECK(c.reference_mismatches == 0);

  const auto ann =
      Lines(Query(request.output_path,
                  "%POS\\t%INFO/GEX_ANN\\t%INFO/GEX_NOT_RUN_REASON\\t%INFO/GEX_SKIPPED_ALT\\n"));
  REQUIRE(ann.size() == 12);
  auto row = [&](int i) { return Split(ann[i], '\t'); };
  auto entries = [&](int i) { return Split(row(i)[1], ','); };
  // 1: one entry, PLUSA, 100 bp upstream; two tissues.
  {
    auto e = entries(0);
    REQUIRE(e.size() == 2);  // PLUSA and PLUSB (1,100 bp away) are both within 5,000 bp
    auto fields = Split(e[0], '|');
    REQUIRE(fields.size() == 10);  // 8 fields + 2 tissues
    CHECK(fields[1] == "PLUSA");
    CHECK(fields[2] == "ENSG00000000101");
    CHECK(fields[3] == "NM_101");
    CHECK(fields[4] == std::to_string(p));
    CHECK(fields[5] == "+");
    CHECK(fields[6] == "-100");
    CHECK(fields[9] == "upstream_gene_variant");  // after the 2 tissues
    CHECK(Split(e[1], '|')[6] == "-1100");
  }
  // 2: the sequence ALT is scored, <DEL> is listed.
  CHECK(row(1)[3] == "<DEL>");
  CHECK(entries(1).size() == 2);
  // 3-5: NO_SUPPORTED_ALT; skipped alleles listed where there were some.
  CHECK(row(2)[2] == "NO_SUPPORTED_ALT");
  CHECK(row(2)[3] == "<DEL>");
  CHECK(row(3)[2] == "NO_SUPPORTED_ALT");
  CHECK(row(3)[3] == "*");
  CHECK(row(4)[2] == "NO_SUPPORTED_ALT");
  CHECK(row(4)[3] == ".");
  CHECK(row(5)[2] == "OUTSIDE_TSS_WINDOW");
  CHECK(row(6)[2] == "NO_TSS_ON_CONTIG");
  // 8: two ALTs x MINUS; 200 bp genomically right of a '-' TSS is upstream.
  {
    auto e = entries(7);
    REQUIRE(e.size() == 2);
    CHECK(Split(e[0], '|')[0] == "A");
    CHECK(Split(e[1], '|')[0] == "T");
    CHECK(Split(e[0], '|')[5] == "-");
    CHECK(Split(e[0], '|')[6] == "-200");
  }
  // 9: a deletion over the TSS is at distance 0.
  CHECK(Split(entries(8)[0], '|')[6] == "0");
  CHECK(Split(entries(8)[0], '|')[9] == "sequence_variant");  // not upstream: REF covers the TSS
  // 10: the breakend is skipped, 'A' scored.
  CHECK(row(9)[3] == "G]17:198982]");
  CHECK(Split(entries(9)[0], '|')[0] == "A");
  // 11: near the contig start (N-padded window) still scores.
  CHECK(Split(entries(10)[0], '|')[1] == "EDGE");
  // 12: 4,800 bp upstream: inside the window, outside the model's 9,198 bp: exactly 0.
  CHECK(Split(entries(11)[0], '|')[7] == "0");
  CHECK(Split(entries(11)[0], '|')[8] == "0");

  // Values: recomputed from the fake model on the oracle's windows.
  {
    auto fields = Split(entries(0)[0], '|');
    const std::string ref_window = OracleWindow(f.genome, Strand::kPlus, f.kPlus);
    const std::string alt_window =
        OracleAlternate(f.genome, Strand::kPlus, f.kPlus, p - 101, f.genome.substr(p - 101, 1),
                        std::string(1, f.OtherBase(p - 101)));
    for (int t = 0; t < 2; ++t) {
      const char* tissue = t == 0 ? "heart" : "liver";
      double expected = Log2FoldChange(FakeScorer::Value(alt_window, tissue),
                                       FakeScorer::Value(ref_window, tissue));
      CHECK(std::stod(fields[7 + t]) == Approx(expected).margin(1e-4));
    }
  }
  // Counts agree with the file.
  int64_t entries_total = 0, alleles = 0;
  for (size_t i = 0; i < ann.size(); ++i) {
    if (row(i)[1] == ".") continue;
    std::set<std::string> distinct;
    for (const auto& e : entries(i)) {
      ++entries_total;
      distinct.insert(Split(e, '|')[0]);
    }
    alleles += distinct.size();
  }
  CHECK(c.associations == entries_total);
  CHECK(c.annotated_alleles == alleles);

  // Each reference window was scored once per tissue, however many records used it.
  const std::string plusa_ref = OracleWindow(f.genome, Strand::kPlus, f.kPlus);
  REQUIRE(scorer.requests.count(plusa_ref) == 1);
  CHECK(scorer.requests[plusa_ref] == std::map<std::string, int>{{"heart", 1}, {"liver", 1}});
  CHECK(scorer.model_id_calls == 1);

  // The header names the model, and records every input record.
  std::string header;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-h", request.output_path}, &header) ==
          0);
  CHECK_THAT(header, Catch::Contains("##GEXModel=fake-expression-model"));
  CHECK_THAT(header, Catch::Contains("##GEXRequestedGenes=ALL"));
  CHECK_THAT(header, Catch::Contains("##GEXWindow=5000"));
  CHECK_THAT(header, Catch::Contains("##GEXDistanceConvention=TSS_distance is the signed"));
  CHECK_THAT(header, Catch::Contains("pseudo-count 1 TPM"));

  // Progress: checking first, then scoring; percent never goes back and ends at 100.
  REQUIRE_FALSE(progress.empty());
  double last = -1;
  bool scoring_seen = false;
  for (const auto& p : progress) {
    CHECK(p.percent >= last);
    last = p.percent;
    if (p.phase == AnnotationProgress::Phase::kScoring) {
      scoring_seen = true;
      CHECK(p.records_total == 12);
    } else {
      CHECK_FALSE(scoring_seen);
    }
  }
  CHECK(progress.back().records_done == 12);
  CHECK(last == Approx(100.0));
}

// Records the largest batch it was sent.
class BatchSizeScorer : public FakeScorer {
 public:
  StatusOr<std::vector<double>> Score(const std::vector<ScoreRequest>& batch,
                                      const std::atomic<bool>* cancelled) override {
    largest = std::max(largest, batch.size());
    return FakeScorer::Score(batch, cancelled);
  }
  size_t largest = 0;
};

TEST_CASE("a record with many ALT alleles near two sites is scored in bounded batches",
          "[engine][bounds]") {
  Fixture f;
  EngineOptions options;
  options.window = 5000;
  options.tissues = {"heart", "liver"};
  // 1-based, between PLUSA (20,000) and PLUSB (21,000): inside both 9,198 bp windows.
  const int64_t pos = f.kPlus + 501;
  const std::string ref = f.genome.substr(pos - 1, 1);
  VariantRecord record{1, "20", pos, ref, {}};
  const char* bases = "ACGT";
  for (int i = 0; record.alts.size() < 300; ++i) {  // 300 distinct insertions
    std::string alt = ref;
    for (int n = i; n > 0 || alt.size() == 1; n /= 4) alt += bases[n % 4];
    record.alts.push_back(alt);
  }
  BatchSizeScorer scorer;
  auto engine = AnnotationEngine::Create(&*f.catalogue, f.reference.get(), &scorer, options);
  REQUIRE(engine.ok());
  auto annotated = (*engine)->Annotate(record, nullptr);
  REQUIRE(annotated.ok());
  // 300 ALTs x 2 sites + 2 reference windows = 602 windows: three batches, none larger than
  // the bound, and an entry for every allele and site, in allele order.
  REQUIRE(annotated->gex_ann.size() == 600);
  CHECK(scorer.largest <= kMaxWindowsPerBatch * options.tissues.size());
  CHECK(scorer.calls == 3);
  CHECK((*engine)->counts().windows_scored == 602);
  // Each allele's entries are what it gets alone in a record.
  for (size_t alt : {size_t{0}, size_t{127}, size_t{128}, size_t{299}}) {
    CAPTURE(alt);
    FakeScorer alone_scorer;
    auto alone_engine =
        AnnotationEngine::Create(&*f.catalogue, f.reference.get(), &alone_scorer, options);
    REQUIRE(alone_engine.ok());
    VariantRecord single{1, "20", pos, ref, {record.alts[alt]}};
    auto alone = (*alone_engine)->Annotate(single, nullptr);
    REQUIRE(alone.ok());
    REQUIRE(alone->gex_ann.size() == 2);
    CHECK(annotated->gex_ann[2 * alt] == alone->gex_ann[0]);
    CHECK(annotated->gex_ann[2 * alt + 1] == alone->gex_ann[1]);
  }
}

// A scorer with a per-job allowance, as the runner's BoundedScorer has.
class AllowanceScorer : public FakeScorer {
 public:
  explicit AllowanceScorer(int64_t allowance) : allowance_(allowance) {}
  int64_t CallAllowance() const override { return allowance_; }

 private:
  int64_t allowance_;
};

TEST_CASE("the model-call bound is checked in the first pass, from the windows the file needs",
          "[engine][bounds]") {
  Fixture f;
  const int64_t p = f.kPlus + 1, m = f.kMinus + 1;  // 1-based TSS positions
  std::string records;
  records += f.Record(p - 100, 1, std::string(1, f.OtherBase(p - 101)));  // PLUSA and PLUSB
  records += f.Record(p + 4700, 1, std::string(1, f.OtherBase(p + 4699)));  // PLUSB's window only
  records += f.Record(m + 200, 1, "A,T");  // MINUS; an ALT equal to REF changes nothing
  records += f.Record(m - 3, 6, f.genome.substr(m - 4, 1));  // deletion over MINUS's TSS
  records += f.Record(40001, 1, "G");                        // outside every window
  const std::string vcf = f.WriteVcf("calls.vcf", records);

  // Unbounded: what the job actually sends.
  FakeScorer unbounded;
  auto full = AnnotateVcf(f.Request(vcf, &unbounded));
  REQUIRE(full.ok());
  const int64_t calls = full->counts.windows_scored * 2;  // two tissues
  REQUIRE(calls > 0);

  // An allowance of exactly that passes; one less fails before the first call.
  AllowanceScorer enough(calls);
  CHECK(AnnotateVcf(f.Request(vcf, &enough)).ok());
  std::filesystem::remove(vcf + ".annotated.vcf.gz");
  AllowanceScorer short_by_one(calls - 1);
  auto refused = AnnotateVcf(f.Request(vcf, &short_by_one));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("needs about " + std::to_string(calls) + " model calls") &&
                 Catch::Contains("options.genes"));
  CHECK(short_by_one.calls == 0);
  CHECK_FALSE(std::filesystem::exists(vcf + ".annotated.vcf.gz"));
}

TEST_CASE("a gene panel restricts which start sites count", "[engine]") {
  Fixture f;
  const int64_t p = f.kPlus + 1, m = f.kMinus + 1;
  const std::string input =
      f.WriteVcf("panel.vcf", f.Record(p - 100, 1, std::string(1, f.OtherBase(p - 101))) +
                                  f.Record(m + 50, 1, std::string(1, f.OtherBase(m + 49))) +
                                  f.Record(40001, 1, "G") + f.Record(p + 5, 1, "<DEL>"));
  FakeScorer scorer;
  AnnotateRequest request = f.Request(input, &scorer);
  auto panel = ResolveGenePanel(*f.catalogue, {"plusb", "ENSG00000000103.4"});
  REQUIRE(panel.ok());
  request.options.panel = *panel;
  auto result = AnnotateVcf(request);
  REQUIRE(result.ok());
  CheckInvariants(result->counts);
  const auto rows =
      Lines(Query(request.output_path, "%INFO/GEX_ANN\\t%INFO/GEX_NOT_RUN_REASON\\n"));
  REQUIRE(rows.size() == 4);
  // PLUSA is not in the panel: only PLUSB is reported for the first record.
  auto first = Split(Split(rows[0], '\t')[0], ',');
  REQUIRE(first.size() == 1);
  CHECK(Split(first[0], '|')[1] == "PLUSB");
  CHECK(Split(Split(rows[1], '\t')[0], '|')[1] == "MINUS");
  CHECK(Split(rows[2], '\t')[1] == "OUTSIDE_TSS_WINDOW");
  CHECK(Split(rows[3], '\t')[1] == "NO_SUPPORTED_ALT");

  // A panel of a gene nowhere near: records near other genes are NO_REQUESTED_GENE_IN_WINDOW.
  auto far_panel = ResolveGenePanel(*f.catalogue, {"FAR"});
  REQUIRE(far_panel.ok());
  request.options.panel = *far_panel;
  FakeScorer unused;
  request.scorer = &unused;
  auto none = AnnotateVcf(request);
  REQUIRE(none.ok());
  CheckInvariants(none->counts);
  CHECK(none->counts.not_run_reasons ==
        std::map<std::string, int64_t>{{"NO_REQUESTED_GENE_IN_WINDOW", 3},
                                       {"OUTSIDE_TSS_WINDOW", 1}});
  CHECK_FALSE(none->model.has_value());
  CHECK(unused.calls == 0);
  CHECK(unused.model_id_calls == 0);
  std::string header;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-h", request.output_path}, &header) ==
          0);
  CHECK_THAT(header, Catch::Contains("##GEXRequestedGenes=ENSG00000000105"));
  CHECK_THAT(header, !Catch::Contains("##GEXModel"));
}

TEST_CASE("bad records, scorer failures and cancellation leave no output", "[engine]") {
  Fixture f;
  const int64_t p = f.kPlus + 1;
  FakeScorer scorer;
  // An invalid ALT fails in the first pass: nothing is scored.
  {
    const std::string input =
        f.WriteVcf("bad-alt.vcf", f.Record(p, 1, "A") + f.Record(p + 1, 1, "AXG"));
    auto result = AnnotateVcf(f.Request(input, &scorer));
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(result.status().message(), Catch::Contains("record 2 (20:" + std::to_string(p + 1)));
    CHECK(scorer.calls == 0);
    CHECK(access((input + ".annotated.vcf.gz").c_str(), F_OK) != 0);
  }
  std::string many;
  for (int i = 0; i < 20; ++i) many += f.Record(p - 200 + i * 10, 1, "G");
  const std::string input = f.WriteVcf("many.vcf", many);
  // The scorer failing mid-run fails the run with its status.
  {
    FakeScorer failing;
    failing.fail_after = 3;
    auto result = AnnotateVcf(f.Request(input, &failing));
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message() == "worker down");
    CHECK(access((input + ".annotated.vcf.gz").c_str(), F_OK) != 0);
  }
  // Cancellation stops it.
  {
    std::atomic<bool> cancel{false};
    FakeScorer cancelling;
    cancelling.cancel_on_call = 2;
    cancelling.cancel = &cancel;
    AnnotateRequest request = f.Request(input, &cancelling);
    request.cancelled = &cancel;
    auto result = AnnotateVcf(request);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == ErrorCode::kServiceUnavailable);
    CHECK_THAT(result.status().message(), Catch::Contains("cancelled"));
    CHECK(cancelling.calls <= 3);
    CHECK(access((input + ".annotated.vcf.gz").c_str(), F_OK) != 0);
  }
  // A REF that disagrees with the reference is scored but counted.
  {
    std::string wrong = "20\t" + std::to_string(p) + "\t.\t" + std::string(1, f.OtherBase(p - 1)) +
                        "\tT\t.\tPASS\t.\n";
    auto result = AnnotateVcf(f.Request(f.WriteVcf("mismatch.vcf", wrong), &scorer));
    REQUIRE(result.ok());
    CHECK(result->counts.reference_mismatches == 1);
  }
  // Options and catalogue/reference agreement are checked up front.
  AnnotateRequest bad_window = f.Request(input, &scorer);
  bad_window.options.window = 0;
  CHECK_FALSE(AnnotateVcf(bad_window).ok());
  AnnotateRequest no_tissue = f.Request(input, &scorer);
  no_tissue.options.tissues.clear();
  CHECK_FALSE(AnnotateVcf(no_tissue).ok());
  std::ofstream(f.dir + "/other.tsv")
      << "##dnaserve-tss-catalogue=1\n##build=GRCh37\n##annotation_release=x\n##transcripts=x\n"
         "##position_base=1\n#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
         "chr9\t100\t+\tG\tENSG1\t.\n";
  auto other = TssCatalogue::Load(f.dir + "/other.tsv");
  REQUIRE(other.ok());
  AnnotateRequest mismatched = f.Request(input, &scorer);
  mismatched.catalogue = &*other;
  auto refused = AnnotateVcf(mismatched);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("not in the reference FASTA"));
}

// A run over the default chr20 data, three tissues, output beside the input.
AnnotateRequest Chr20Request(const testing::DefaultChr20& chr20, const std::string& input,
                             ExpressionScorer* scorer) {
  AnnotateRequest request;
  request.input_path = input;
  request.output_path = input + ".annotated.vcf.gz";
  request.catalogue = &chr20.catalogue;
  request.reference = chr20.reference.get();
  request.scorer = scorer;
  request.options.tissues = {"heart", "liver", "brain"};
  return request;
}

TEST_CASE("a VCF built on real chr20 runs against the default Debian catalogue",
          "[engine][debian]") {
  DEFAULT_CHR20_OR_SKIP(chr20);
  const TssCatalogue* catalogue = &chr20->catalogue;
  const ReferenceGenome* reference = chr20->reference.get();
  // SNVs 150 bp downstream of the first 40 start sites (REF from chr20), one 2 kb away from any.
  std::string records;
  std::mt19937_64 rng(7);
  int64_t previous = 0;
  for (size_t i = 0; i < 40 && i < catalogue->sites().size(); ++i) {
    const int64_t pos = catalogue->sites()[i].tss + 1 + 150;
    if (pos <= previous) continue;
    previous = pos;
    auto ref = reference->Fetch("20", pos - 1, pos);
    REQUIRE(ref.ok());
    if ((*ref)[0] == 'N') continue;
    const char alt = "ACGT"[((*ref)[0] == 'A' ? 1 : 0) + rng() % 2 * 2];
    records += "20\t" + std::to_string(pos) + "\t.\t" + *ref + "\t" + std::string(1, alt) +
               "\t.\tPASS\t.\n";
  }
  records += "20\t62900000\t.\tA\t<DUP>\t.\tPASS\tSVTYPE=DUP\n";
  std::string dir = testing::MakeTempDir("dnaserve-chr20");
  std::ofstream(dir + "/chr20.vcf") << "##fileformat=VCFv4.2\n##contig=<ID=20,length=63025520>\n"
                                       "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                                    << records;
  FakeScorer scorer;
  AnnotateRequest request = Chr20Request(*chr20, dir + "/chr20.vcf", &scorer);
  auto result = AnnotateVcf(request);
  if (!result.ok()) FAIL(result.status().message());
  CheckInvariants(result->counts);
  const int64_t n = std::count(records.begin(), records.end(), '\n');
  CHECK(result->counts.variants_in == n);
  CHECK(result->counts.annotated == n - 1);
  CHECK(result->counts.reference_mismatches == 0);
  std::string body;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-H", request.output_path}, &body, {},
                              true) == 0);
  CHECK(std::count(body.begin(), body.end(), '\n') == n);
  CHECK_THAT(body, Catch::Contains("GEX_ANN="));
}

}  // namespace
}  // namespace dnaserve::variant

namespace dnaserve::variant {
namespace {

// Not a test (hidden tag, not run by ctest): the engine's own cost per record and per window
// with a model that answers instantly. Run: variant_tests "[.bench]"; figures in
// runner/variant/README.md.
class ConstantScorer : public ExpressionScorer {
 public:
  StatusOr<std::vector<double>> Score(const std::vector<ScoreRequest>& batch,
                                      const std::atomic<bool>*) override {
    windows += batch.size();
    return std::vector<double>(batch.size(), 2.0);
  }
  StatusOr<std::string> ModelId() override { return std::string("constant"); }
  size_t windows = 0;
};

TEST_CASE("engine throughput on chr20", "[.bench]") {
  std::string why;
  auto chr20 = testing::LoadDefaultChr20(&why);
  if (!chr20) FAIL(why);
  const TssCatalogue* catalogue = &chr20->catalogue;
  const ReferenceGenome* reference = chr20->reference.get();
  // 100,000 SNVs at random chr20 positions (most outside any window) plus one 100 bp from each
  // start site; REF from the FASTA.
  std::mt19937_64 rng(11);
  std::vector<int64_t> positions;
  for (int i = 0; i < 100000; ++i) positions.push_back(60000 + rng() % 62900000);
  for (const auto& site : catalogue->sites()) positions.push_back(site.tss + 101);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  std::string dir = testing::MakeTempDir("dnaserve-bench");
  {
    std::ofstream vcf(dir + "/bench.vcf");
    vcf << "##fileformat=VCFv4.2\n##contig=<ID=20,length=63025520>\n"
           "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
    for (int64_t pos : positions) {
      auto ref = reference->Fetch("20", pos - 1, pos);
      char r = (*ref)[0] == 'N' ? 'A' : (*ref)[0];
      vcf << "20\t" << pos << "\t.\t" << r << "\t" << (r == 'A' ? 'G' : 'A') << "\t.\tPASS\t.\n";
    }
  }
  REQUIRE(testing::RunCommand({"/usr/bin/bgzip", "-f", dir + "/bench.vcf"}, nullptr) == 0);
  ConstantScorer scorer;
  AnnotateRequest request = Chr20Request(*chr20, dir + "/bench.vcf.gz", &scorer);
  double checked_at = 0;
  auto start = std::chrono::steady_clock::now();
  request.on_progress = [&](const AnnotationProgress& p) {
    if (p.phase == AnnotationProgress::Phase::kChecking) {
      checked_at = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  };
  auto result = AnnotateVcf(request);
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(result.ok());
  WARN(positions.size() << " records, " << result->counts.annotated << " annotated, "
                        << result->counts.associations << " associations, " << scorer.windows
                        << " window scores: first pass " << checked_at << " s, total " << total
                        << " s");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dnaserve::variant
