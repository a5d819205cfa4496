// Interval input reads the reference around the interval (issue 25, scope 2): a gene found near
// an interval's edge gets the expression window the reference holds there, byte for byte the
// one it gets when the interval is widened around it (N only past the contig's ends), and an
// expression prediction whose TSS is given as tss_genome_position near an edge scores the
// reference's bases too. The interval jobs run here as a runner runs them (BuildIntervalJob on
// the queue's IntervalCommand) over a real bgzipped FASTA, against a fake InferenceBackend that
// records what the workers would be sent.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "common/tss_window.h"
#include "core/admission/interval_commands.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/predict_request.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/variant_resources.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/support/lcg_bases.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

constexpr int64_t kContigBp = 60000;
// Genes are planted as markers the fake annotation finds: kPlusMarker's first base is the TSS
// of a '+' gene; the reverse complement of kMinusMarker written on the plus strand is a '-' gene
// whose TSS is the marker's last plus-strand base.
const std::string kPlusMarker = "GATTACAGATTACACCGGTTAACCGG";
const std::string kMinusMarker = "TTTTGGGGCCCCAAAATTGGCCAATG";
constexpr int64_t kPlusTss = 20000;       // 0-based on the contig
constexpr int64_t kMinusTss = 40025;      // 0-based: the plus-strand marker spans [40000, 40026)
constexpr int64_t kEdgeTss = 50;          // a '+' gene 50 bp from the contig's start

using testing::LcgBases;

struct Genome {
  std::string bases;  // the contig's plus strand
  std::string fasta;
  std::string catalogue;
};

const Genome& TheGenome() {
  static const Genome genome = [] {
    Genome g;
    g.bases = LcgBases(kContigBp, 29);
    g.bases.replace(kPlusTss, kPlusMarker.size(), kPlusMarker);
    g.bases.replace(kEdgeTss, kPlusMarker.size(), kPlusMarker);
    const std::string minus_on_plus = ReverseComplement(kMinusMarker);
    g.bases.replace(kMinusTss + 1 - minus_on_plus.size(), minus_on_plus.size(), minus_on_plus);
    const std::string dir = testing::MakeTempDir("dnaserve-interval-flanks");
    g.fasta = dir + "/flanks.fa.gz";
    REQUIRE(testing::WriteIndexedFasta(g.fasta, {{"20", g.bases}}, /*bgzip=*/true));
    g.catalogue = dir + "/flanks.tss.tsv";
    std::ofstream(g.catalogue) << "##dnaserve-tss-catalogue=1\n"
                                  "##build=GRCh37\n"
                                  "##annotation_release=unit test\n"
                                  "##transcripts=interval flank test\n"
                                  "##position_base=1\n"
                                  "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
                                  "chr20\t20001\t+\tGENEP\tENSG00000000101\t.\n";
    return g;
  }();
  return genome;
}

std::unique_ptr<VariantResources> Resources() {
  auto catalogue = variant::TssCatalogue::Load(TheGenome().catalogue);
  REQUIRE(catalogue.ok());
  auto reference = variant::ReferenceGenome::Open(TheGenome().fasta);
  INFO(reference.status().ToString());
  REQUIRE(reference.ok());
  return std::make_unique<VariantResources>(
      nullptr, GenomeAssets{std::move(catalogue).value(), std::move(reference).value()},
      testing::MakeTempDir("dnaserve-interval-flanks-work"), 1);
}

// The window the expression model must see for a TSS at `tss` (0-based on the contig) of a gene
// on `strand`, straight from the contig's bases (N past its ends): tss_window.h's drawing.
std::string ExpectedWindow(int64_t tss, char strand) {
  const PlusStrandSpan span = TssWindowSpan(tss, strand == '-');
  std::string plus;
  for (int64_t i = span.start; i < span.end; ++i) {
    plus.push_back(i < 0 || i >= kContigBp ? 'N' : TheGenome().bases[static_cast<size_t>(i)]);
  }
  return strand == '-' ? ReverseComplement(plus) : plus;
}

// A number that changes with every base of the window, so equal numbers mean equal windows.
double Fingerprint(const std::string& window) {
  uint64_t h = 1469598103934665603ull;
  for (char c : window) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<double>(h % 1000003) / 1000.0;
}

class MarkerBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext&,
                                      const core::ProgressCallback&) override {
    std::lock_guard<std::mutex> lock(mu);
    pb::PredictResult result;
    result.set_model(request.model());
    if (task == Task::kAnnotation) {
      const std::string& s = request.sequence();
      int n = 0;
      for (size_t at = s.find(kPlusMarker); at != std::string::npos;
           at = s.find(kPlusMarker, at + 1)) {
        AddTranscript(result, "plus" + std::to_string(n++), "+", static_cast<int64_t>(at));
      }
      const std::string rc_plus = ReverseComplement(kPlusMarker);
      for (size_t at = s.find(rc_plus); at != std::string::npos; at = s.find(rc_plus, at + 1)) {
        AddTranscript(result, "plus" + std::to_string(n++), "-",
                      static_cast<int64_t>(at + rc_plus.size() - 1));
      }
      for (size_t at = s.find(kMinusMarker); at != std::string::npos;
           at = s.find(kMinusMarker, at + 1)) {
        AddTranscript(result, "minus" + std::to_string(n++), "+", static_cast<int64_t>(at));
      }
      const std::string rc_minus = ReverseComplement(kMinusMarker);
      for (size_t at = s.find(rc_minus); at != std::string::npos; at = s.find(rc_minus, at + 1)) {
        AddTranscript(result, "minus" + std::to_string(n++), "-",
                      static_cast<int64_t>(at + rc_minus.size() - 1));
      }
      return result;
    }
    REQUIRE(task == Task::kExpression);
    windows.push_back(request.sequence());
    result.mutable_expression()->set_expression_log_tpm(Fingerprint(request.sequence()));
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  static void AddTranscript(pb::PredictResult& result, const std::string& id,
                            const std::string& strand, int64_t tss) {
    pb::Transcript* t = result.mutable_annotation()->add_transcripts();
    t->set_id(id);
    t->set_strand(strand);
    t->set_tss_position(tss);
    t->set_start(strand == "+" ? tss : tss - 10);
    t->set_end(strand == "+" ? tss + 11 : tss + 1);
    t->set_transcript_type("mRNA");
  }

  std::mutex mu;
  std::vector<std::string> windows;  // every expression request's sequence, in call order
};

core::JobContext Context() {
  core::JobContext context;
  context.call = core::CallContext{"req-flanks", "job-flanks", nullptr};
  return context;
}

std::string IntervalJson(int64_t start, int64_t end, char strand) {
  return R"({"contig":"chr20","start":)" + std::to_string(start) + R"(,"end":)" +
         std::to_string(end) + R"(,"strand":")" + std::string(1, strand) + "\"}";
}

struct GeneRow {
  int64_t tss_position;  // on the contig, 0-based, as the response reports it
  std::string strand;
  double expression;
  int64_t padded_bp;
};

struct FindGenesRun {
  std::vector<std::string> windows;
  std::vector<GeneRow> genes;
};

FindGenesRun RunFindGenesInterval(int64_t start, int64_t end, char strand) {
  const std::string body = R"({"interval":)" + IntervalJson(start, end, strand) +
                           R"(,"options":{"description":"adult liver"}})";
  auto input = core::ValidateFindGenesBody(body);
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  core::AdmittedFindGenes admitted{std::move(input).value(), "annotation-model",
                                   "expression-model"};
  auto command = core::IntervalCommandFor(std::move(admitted));
  auto resources = Resources();
  MarkerBackend backend;
  auto job = BuildIntervalJob(std::move(*command.mutable_interval()), &backend, resources.get());
  REQUIRE(job.ok());
  auto output = (*job)->Run(Context());
  INFO(output.status().ToString());
  REQUIRE(output.ok());
  rapidjson::Document doc;
  doc.Parse(output->body.c_str());
  REQUIRE(doc.IsObject());
  FindGenesRun run;
  run.windows = backend.windows;
  for (const auto& gene : doc["data"]["expression_predictions"].GetArray()) {
    // (the intervals are long enough that a gene's window would be N-padded, not skipped)
    REQUIRE_FALSE(gene["skipped"].GetBool());
    run.genes.push_back(GeneRow{gene["tss_position"].GetInt64(), gene["strand"].GetString(),
                                gene["expression"].GetDouble(), gene["padded_bp"].GetInt64()});
  }
  return run;
}

const GeneRow& GeneAt(const FindGenesRun& run, int64_t tss) {
  for (const auto& gene : run.genes) {
    if (gene.tss_position == tss) return gene;
  }
  FAIL("no gene at contig position " << tss);
  static const GeneRow kNone{};
  return kNone;
}

// 1-based inclusive interval bounds from 0-based contig positions.
int64_t OneBased(int64_t pos0) { return pos0 + 1; }

}  // namespace

TEST_CASE("find-genes by interval reads the flanks of a gene near the interval's start",
          "[interval][find_genes][flanks]") {
  // The '+' gene's TSS is 100 bp inside the interval: 4,499 bp of its window lie before it.
  const FindGenesRun edge =
      RunFindGenesInterval(OneBased(kPlusTss - 100), OneBased(kPlusTss + 8000), '+');
  const FindGenesRun wide =
      RunFindGenesInterval(OneBased(kPlusTss - 12000), OneBased(kPlusTss + 12000), '+');
  REQUIRE(edge.windows.size() == 1);
  REQUIRE(wide.windows.size() == 1);
  CHECK(edge.windows[0] == ExpectedWindow(kPlusTss, '+'));
  CHECK(edge.windows[0] == wide.windows[0]);
  CHECK(edge.windows[0].find('N') == std::string::npos);
  const GeneRow& a = GeneAt(edge, kPlusTss);
  const GeneRow& b = GeneAt(wide, kPlusTss);
  CHECK(a.expression == b.expression);
  CHECK(a.padded_bp == 0);
}

TEST_CASE("find-genes by interval reads the flanks of a minus-strand gene near the interval's end",
          "[interval][find_genes][flanks]") {
  // The '-' gene's window reaches 4,600 bp past its TSS on the plus strand; the interval ends
  // 30 bp after it.
  const FindGenesRun edge =
      RunFindGenesInterval(OneBased(kMinusTss - 8000), OneBased(kMinusTss + 30), '+');
  const FindGenesRun wide =
      RunFindGenesInterval(OneBased(kMinusTss - 9000), OneBased(kMinusTss + 9000), '+');
  REQUIRE(edge.windows.size() == 1);
  CHECK(edge.windows[0] == ExpectedWindow(kMinusTss, '-'));
  CHECK(edge.windows[0] == wide.windows[0]);
  CHECK(GeneAt(edge, kMinusTss).strand == "-");
  CHECK(GeneAt(edge, kMinusTss).expression == GeneAt(wide, kMinusTss).expression);
  CHECK(GeneAt(edge, kMinusTss).padded_bp == 0);
}

TEST_CASE("find-genes by a minus-strand interval reads the flanks in the analysed orientation",
          "[interval][find_genes][flanks]") {
  // strand '-' analyses the reverse complement: the '+' gene near the interval's start is near
  // the analysed sequence's end, and its flank before it on the contig follows the region there.
  const FindGenesRun edge =
      RunFindGenesInterval(OneBased(kPlusTss - 100), OneBased(kPlusTss + 8000), '-');
  const FindGenesRun plus =
      RunFindGenesInterval(OneBased(kPlusTss - 100), OneBased(kPlusTss + 8000), '+');
  REQUIRE(edge.windows.size() == 1);
  CHECK(edge.windows[0] == ExpectedWindow(kPlusTss, '+'));
  CHECK(GeneAt(edge, kPlusTss).strand == "+");
  CHECK(GeneAt(edge, kPlusTss).expression == GeneAt(plus, kPlusTss).expression);
  // And the '-' gene near a minus-strand interval's end.
  const FindGenesRun minus_edge =
      RunFindGenesInterval(OneBased(kMinusTss - 8000), OneBased(kMinusTss + 30), '-');
  REQUIRE(minus_edge.windows.size() == 1);
  CHECK(minus_edge.windows[0] == ExpectedWindow(kMinusTss, '-'));
}

TEST_CASE("find-genes by interval pads N only past the contig's ends",
          "[interval][find_genes][flanks]") {
  // The gene 50 bp from the contig's first base: 4,549 bp of its window lie before the contig.
  const FindGenesRun run = RunFindGenesInterval(1, 3000, '+');
  REQUIRE(run.windows.size() == 1);
  const std::string expected = ExpectedWindow(kEdgeTss, '+');
  CHECK(run.windows[0] == expected);
  CHECK(run.windows[0].find_first_not_of('N') == static_cast<size_t>(kTssIndexInWindow - kEdgeTss));
  CHECK(GeneAt(run, kEdgeTss).padded_bp == kTssIndexInWindow - kEdgeTss);
}

// ------------------------------------------------------------------ expression by interval

namespace {

struct ExpressionRun {
  std::string window;
  rapidjson::Document doc;
};

ExpressionRun RunExpressionInterval(const std::string& body) {
  auto input = core::ValidatePredictBody(Task::kExpression, body);
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  core::AdmittedPredict admitted{std::move(input).value(), OutputFormat::kJson};
  admitted.input.request.set_model("expression-model");
  auto command = core::IntervalCommandFor(std::move(admitted));
  auto resources = Resources();
  MarkerBackend backend;
  auto job = BuildIntervalJob(std::move(*command.mutable_interval()), &backend, resources.get());
  REQUIRE(job.ok());
  auto output = (*job)->Run(Context());
  INFO(output.status().ToString());
  REQUIRE(output.ok());
  ExpressionRun run;
  REQUIRE(backend.windows.size() == 1);
  run.window = backend.windows[0];
  run.doc.Parse(output->body.c_str());
  REQUIRE(run.doc.IsObject());
  return run;
}

std::string ExpressionBody(int64_t start, int64_t end, char strand, const std::string& tss) {
  return R"({"interval":)" + IntervalJson(start, end, strand) + "," + tss +
         R"(,"options":{"description":"adult liver"}})";
}

}  // namespace

TEST_CASE("expression by interval with tss_genome_position scores the reference around an edge TSS",
          "[interval][expression][flanks]") {
  // TSS 200 bp inside a 10 kb interval's start: the window reaches 4,399 bp before the interval.
  const int64_t start = OneBased(kPlusTss - 200);
  const ExpressionRun edge = RunExpressionInterval(ExpressionBody(
      start, start + 9999, '+', R"("tss_genome_position":)" + std::to_string(OneBased(kPlusTss))));
  CHECK(edge.window == ExpectedWindow(kPlusTss, '+'));
  // The same TSS by tss_index in an interval that holds the whole window.
  const int64_t wide_start = OneBased(kPlusTss - 6000);
  const ExpressionRun wide = RunExpressionInterval(
      ExpressionBody(wide_start, wide_start + 11999, '+', R"("tss_index":6000)"));
  CHECK(edge.window == wide.window);
  CHECK(edge.doc["data"]["prediction"]["expression_log_tpm"].GetDouble() ==
        wide.doc["data"]["prediction"]["expression_log_tpm"].GetDouble());
  // The scored window is reported on the contig, the same span both ways.
  const auto& span = edge.doc["data"]["input"]["scored_window"];
  CHECK(span[0].GetInt64() == kPlusTss - kExpressionHalfWindowBp);
  CHECK(span[1].GetInt64() == kPlusTss + kExpressionHalfWindowBp);
  CHECK(wide.doc["data"]["input"]["scored_window"] == span);
}

TEST_CASE("expression by a minus-strand interval reads the window on the minus strand",
          "[interval][expression][flanks]") {
  // The '-' gene's TSS 100 bp before the interval's end.
  const int64_t end = OneBased(kMinusTss + 100);
  const ExpressionRun run = RunExpressionInterval(ExpressionBody(
      end - 9999, end, '-', R"("tss_genome_position":)" + std::to_string(OneBased(kMinusTss))));
  CHECK(run.window == ExpectedWindow(kMinusTss, '-'));
  // tss_index 100 on the analysed (reverse-complemented) sequence is the same TSS, and today
  // it is refused (the window must fit in the interval), so the genome position is the only
  // way to score it without widening the interval.
  CHECK(run.doc["data"]["input"]["tss_index"].GetInt64() == 100);
}
