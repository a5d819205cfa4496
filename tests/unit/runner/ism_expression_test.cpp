// POST /v1/ism with the expression scorer on a runner (runner/workflows/ism_expression.h), run as
// a runner runs it (BuildIsmJob on the queue's IsmCommand) over a real bgzipped FASTA and a
// start-site catalogue, against a fake expression worker whose log(TPM+1) is a fingerprint of
// the window and context it is sent (equal numbers mean equal inputs). Each cell is checked
// against POST /v1/variants/score's expression scorer (ScoreVariants, rendered as the route
// renders it) for the same SNV, gene and context; then the gene choice and its 422s.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "common/tss_window.h"
#include "core/admission/ism.h"
#include "core/validation/ism_request.h"
#include "core/validation/variant_score_request.h"
#include "runner/workflows/ism.h"
#include "runner/workflows/ism_expression.h"
#include "runner/workflows/variant_resources.h"
#include "runner/workflows/variant_score_response.h"
#include "runner/workflows/variant_scoring.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"
#include "tests/support/lcg_bases.h"

using namespace dnaserve;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

constexpr int64_t kContigBp = 60000;
// 0-based TSSs of the catalogue's genes (1-based in the file).
constexpr int64_t kGenePTss = 20000;  // GENEP '+'
constexpr int64_t kGeneQTss = 21000;  // GENEQ '+'
constexpr int64_t kGeneMTss = 40025;  // GENEM '-'

using testing::LcgBases;

struct Genome {
  std::string bases;
  std::string fasta, catalogue;
};

const Genome& TheGenome() {
  static const Genome genome = [] {
    Genome g;
    g.bases = LcgBases(kContigBp, 41);
    const std::string dir = testing::MakeTempDir("dnaserve-ism-expression");
    g.fasta = dir + "/ism.fa.gz";
    REQUIRE(testing::WriteIndexedFasta(g.fasta, {{"20", g.bases}}, /*bgzip=*/true));
    g.catalogue = dir + "/ism.tss.tsv";
    std::ofstream(g.catalogue) << "##dnaserve-tss-catalogue=1\n"
                                  "##build=GRCh37\n"
                                  "##annotation_release=unit test\n"
                                  "##transcripts=ism expression test\n"
                                  "##position_base=1\n"
                                  "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
                                  "chr20\t20001\t+\tGENEP\tENSG00000000101\t.\n"
                                  "chr20\t21001\t+\tGENEQ\tENSG00000000102\t.\n"
                                  "chr20\t40026\t-\tGENEM\tENSG00000000103\t.\n";
    return g;
  }();
  return genome;
}

std::unique_ptr<VariantResources> Resources() {
  auto catalogue = variant::TssCatalogue::Load(TheGenome().catalogue);
  INFO(catalogue.status().ToString());
  REQUIRE(catalogue.ok());
  auto reference = variant::ReferenceGenome::Open(TheGenome().fasta);
  INFO(reference.status().ToString());
  REQUIRE(reference.ok());
  return std::make_unique<VariantResources>(
      nullptr, GenomeAssets{std::move(catalogue).value(), std::move(reference).value()},
      testing::MakeTempDir("dnaserve-ism-expression-work"), 1);
}

// A number that changes with every base of the window and with the context.
double Fingerprint(const std::string& window, const std::string& description) {
  uint64_t h = 1469598103934665603ull;
  for (char c : window + "|" + description) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return static_cast<double>(h % 1000003) / 100000.0;
}

class ExpressionBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext&,
                                      const core::ProgressCallback&) override {
    REQUIRE(task == Task::kExpression);
    const std::string& description = request.expression().description();
    pb::PredictResult result;
    result.set_model(request.model());
    auto* expression = result.mutable_expression();
    expression->set_expression_log_tpm(Fingerprint(request.sequence(), description));
    if (description == "E066") {
      auto* match = expression->mutable_description_match();
      match->set_matched(true);
      auto* c = match->add_contexts();
      c->set_id("E066");
      c->set_name("Adult liver");
      c->set_similarity(1.0);
    }
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    windows.insert(request.sequence());
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  std::mutex mu;
  int64_t calls = 0;
  std::set<std::string> windows;
};

struct ExpressionCatalogue : core::ModelCatalogue {
  ExpressionCatalogue() {
    pb::ModelInfo model;
    model.set_id("expression-test");
    model.set_is_default(true);
    model.set_context_window_bp(kExpressionWindowBp);
    model.set_package_digest("sha256:" + std::string(64, 'e'));
    SetModels(Task::kExpression, {model});
  }
};

core::JobContext Context() {
  core::JobContext context;
  context.call = core::CallContext{"req-ism-expression", "job-ism-expression", nullptr};
  return context;
}

std::string Text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return buffer.GetString();
}

std::string FirstLocation(const Status& status) {
  const auto* details = std::get_if<ValidationDetails>(&status.details());
  if (details == nullptr || details->errors.empty()) return "(" + status.ToString() + ")";
  std::string loc;
  for (const std::string& part : details->errors.front().loc) loc += (loc.empty() ? "" : ".") + part;
  return loc;
}

struct IsmRun {
  StatusOr<core::JobOutput> output = Internal("not run");
  int64_t backend_calls = 0;
  size_t distinct_windows = 0;
};

IsmRun RunIsm(const std::string& body) {
  auto input = core::ValidateIsmBody(body);
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  core::AdmittedIsm admitted;
  admitted.input = std::move(input).value();
  admitted.scorer.input = admitted.input.options;
  admitted.scorer.expression_model = "expression-test";
  const auto command = core::IsmCommandFor(admitted);
  auto resources = Resources();
  ExpressionBackend backend;
  ExpressionCatalogue catalogue;
  auto job = BuildIsmJob(command.ism(), &backend, &catalogue, resources.get());
  INFO(job.status().ToString());
  REQUIRE(job.ok());
  IsmRun run;
  run.output = (*job)->Run(Context());
  run.backend_calls = backend.calls;
  run.distinct_windows = backend.windows.size();
  return run;
}

std::string IntervalBody(const std::string& region, int64_t first, int64_t last,
                         const std::string& gene = "") {
  return "{\"interval\": {\"region\": \"" + region + "\"}, \"window\": {\"start\": " +
         std::to_string(first) + ", \"end\": " + std::to_string(last) +
         "}, \"scorers\": {\"expression\": {\"contexts\": [\"E066\"]" +
         (gene.empty() ? "" : ", \"gene\": \"" + gene + "\"") + "}}}";
}

class GenomeReferences : public ReferenceLookup {
 public:
  explicit GenomeReferences(const variant::ReferenceGenome* genome) : genome_(genome) {}
  const variant::ReferenceGenome* Find(const std::string& assembly) const override {
    return assembly == "GRCh37" ? genome_ : nullptr;
  }
  std::vector<std::string> Names() const override { return {"GRCh37"}; }

 private:
  const variant::ReferenceGenome* genome_;
};

// What POST /v1/variants/score's expression scorer reports for `variants` (context E066): the
// rendered answer, parsed.
std::unique_ptr<rapidjson::Document> VariantScore(const std::vector<std::string>& variants) {
  std::string list;
  for (const std::string& v : variants) list += (list.empty() ? "\"" : ", \"") + v + "\"";
  const std::string body = "{\"variants\": [" + list +
                           "], \"scorers\": {\"expression\": {\"contexts\": [\"E066\"]}}}";
  auto input = core::ValidateVariantScoreBody(body);
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  core::AdmittedVariantScore admitted;
  admitted.input = std::move(input).value();
  admitted.expression_model = "expression-test";
  auto resources = Resources();
  const GenomeAssets* grch37 = resources->Genome(core::kGrch37);
  GenomeReferences references(grch37->reference.get());
  ExpressionBackend backend;
  ExpressionCatalogue catalogue;
  const ScoringServices services{&references, &catalogue, &backend, &grch37->catalogue,
                                 nullptr, 1};
  auto scored = ScoreVariants(admitted, services, Context());
  INFO(scored.status().ToString());
  REQUIRE(scored.ok());
  auto doc = std::make_unique<rapidjson::Document>();
  doc->Parse(RenderVariantScoreJson(admitted.input, *scored, "GRCh37", {"job", "req"}).c_str());
  REQUIRE(doc->IsObject());
  return doc;
}

// Every cell of an ISM answer against variant scoring's log2_fold_change for the same SNV,
// gene (by id and TSS) and context, as JSON text.
void CheckCellsAgainstVariantScore(const rapidjson::Value& data, int64_t to_contig) {
  const std::string gene_id = data["expression"]["gene"]["gene_id"].GetString();
  const int64_t tss = data["expression"]["gene"]["tss"].GetInt64();
  std::vector<std::string> variants, cells;
  for (const auto& p : data["positions"].GetArray()) {
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      variants.push_back("chr20:" + std::to_string(p["position"].GetInt64() + to_contig) + ":" +
                         p["ref"].GetString() + ":" + p["alt"][a].GetString());
      cells.push_back(Text(p["delta"][a]));
    }
  }
  auto doc = VariantScore(variants);
  const auto& results = (*doc)["data"]["results"];
  REQUIRE(results.Size() == variants.size());
  size_t nonzero = 0;
  for (rapidjson::SizeType i = 0; i < results.Size(); ++i) {
    INFO(variants[i] << " " << Text(results[i]));
    const rapidjson::Value* gene = nullptr;
    for (const auto& g : results[i]["expression"].GetArray()) {
      if (gene_id == g["gene_id"].GetString() && g["tss"].GetInt64() == tss) gene = &g;
    }
    REQUIRE(gene != nullptr);
    CHECK(cells[i] == Text((*gene)["contexts"][0]["log2_fold_change"]));
    if (cells[i] != "0.0") ++nonzero;
  }
  CHECK(nonzero > 0);  // the fingerprints differ: a cell of 0 everywhere would prove nothing
}

rapidjson::Document Parsed(const IsmRun& run) {
  INFO(run.output.status().ToString());
  REQUIRE(run.output.ok());
  rapidjson::Document doc;
  doc.Parse(run.output->body.c_str());
  REQUIRE(doc.IsObject());
  return doc;
}

}  // namespace

TEST_CASE("ism expression: every cell equals variant scoring's log2 fold change (+ gene)",
          "[ism-expression]") {
  // Window 20,396-20,405 (1-based): GENEP's TSS (20,001) is nearer than GENEQ's (21,001).
  const int64_t first = 20396, last = 20405;
  const IsmRun run = RunIsm(IntervalBody("chr20:10001-35000", first, last));
  auto doc = Parsed(run);
  const auto& data = doc["data"];
  CHECK(std::string(data["scorer"].GetString()) == "expression");
  CHECK(std::string(data["model"].GetString()) == "expression-test");
  CHECK(data["window_bp"].GetInt64() == kExpressionWindowBp);
  CHECK(std::string(data["expression"]["gene"]["gene_symbol"].GetString()) == "GENEP");
  CHECK(data["expression"]["gene"]["tss"].GetInt64() == kGenePTss + 1);
  CHECK(std::string(data["expression"]["gene"]["strand"].GetString()) == "+");
  CHECK(data["expression"]["candidates"].GetInt64() == 2);
  CHECK(data["expression"]["context"]["matched"].GetBool());
  CHECK(std::string(data["expression"]["context"]["id"].GetString()) == "E066");
  REQUIRE(data["positions"].Size() == static_cast<size_t>(last - first + 1));
  CHECK(std::string(data["positions"][0]["ref"].GetString()) ==
        TheGenome().bases.substr(first - 1, 1));
  // One match call, one REF row and 3 x L ALT rows, all distinct inputs.
  const int64_t rows = 1 + 3 * (last - first + 1);
  CHECK(doc["meta"]["model_calls"].GetInt64() == 1 + rows);
  CHECK(run.backend_calls == 1 + rows);
  CHECK(run.distinct_windows == static_cast<size_t>(1 + rows));
  CheckCellsAgainstVariantScore(data, 0);
}

TEST_CASE("ism expression: a '-' gene and an interval on '-' give variant scoring's numbers",
          "[ism-expression]") {
  // Window 40,001-40,008: inside GENEM's window only.
  const IsmRun plus = RunIsm(IntervalBody("chr20:30001-50000", 40001, 40008));
  auto doc = Parsed(plus);
  CHECK(std::string(doc["data"]["expression"]["gene"]["gene_symbol"].GetString()) == "GENEM");
  CHECK(std::string(doc["data"]["expression"]["gene"]["strand"].GetString()) == "-");
  CheckCellsAgainstVariantScore(doc["data"], 0);
  // The interval's strand does not change what the model sees: the gene's sense strand.
  const IsmRun minus = RunIsm(
      "{\"interval\": {\"contig\": \"chr20\", \"start\": 30001, \"end\": 50000, \"strand\": "
      "\"-\"}, \"window\": {\"start\": 40001, \"end\": 40008}, \"scorers\": {\"expression\": "
      "{\"contexts\": [\"E066\"]}}}");
  auto minus_doc = Parsed(minus);
  CHECK(Text(minus_doc["data"]["positions"]) == Text(doc["data"]["positions"]));
}

TEST_CASE("ism expression: a sequence is the expression window, its TSS at 4,600",
          "[ism-expression]") {
  // GENEP's window as the sequence: its cells are the interval's at the same bases.
  const PlusStrandSpan span = TssWindowSpan(kGenePTss, false);
  const std::string window = TheGenome().bases.substr(static_cast<size_t>(span.start),
                                                      static_cast<size_t>(kExpressionWindowBp));
  const IsmRun by_sequence = RunIsm(
      "{\"sequence\": \"" + window + "\", \"window\": {\"start\": 4591, \"end\": 4610}, "
      "\"scorers\": {\"expression\": {\"contexts\": [\"E066\"]}}}");
  auto seq_doc = Parsed(by_sequence);
  CHECK(seq_doc["data"]["expression"]["gene"]["tss"].GetInt64() == kTssIndexInWindow + 1);
  CHECK_FALSE(seq_doc["data"]["expression"]["gene"].HasMember("gene_id"));
  const int64_t to_contig = span.start;  // sequence position p is contig position p + start
  const IsmRun by_interval = RunIsm(IntervalBody("chr20:10001-35000", 4591 + to_contig,
                                                 4610 + to_contig, "GENEP"));
  auto interval_doc = Parsed(by_interval);
  const auto& a = seq_doc["data"]["positions"];
  const auto& b = interval_doc["data"]["positions"];
  REQUIRE(a.Size() == b.Size());
  for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
    CHECK(a[i]["position"].GetInt64() + to_contig == b[i]["position"].GetInt64());
    CHECK(Text(a[i]["delta"]) == Text(b[i]["delta"]));
  }
}

TEST_CASE("ism expression: the gene named or the nearest start site, else a 422 at the field",
          "[ism-expression]") {
  auto gene_of = [](const IsmRun& run) {
    auto doc = Parsed(run);
    return std::string(doc["data"]["expression"]["gene"]["gene_symbol"].GetString());
  };
  // Nearer GENEQ (21,001) than GENEP (20,001): both windows hold it.
  CHECK(gene_of(RunIsm(IntervalBody("chr20:10001-35000", 20601, 20610))) == "GENEQ");
  // Named, by symbol in any case or by Ensembl id.
  CHECK(gene_of(RunIsm(IntervalBody("chr20:10001-35000", 20601, 20610, "genep"))) == "GENEP");
  CHECK(gene_of(RunIsm(IntervalBody("chr20:10001-35000", 20601, 20610, "ENSG00000000101"))) ==
        "GENEP");
  // A gene not in the catalogue, and one whose window does not hold the ISM window.
  const IsmRun unknown = RunIsm(IntervalBody("chr20:10001-35000", 20601, 20610, "NOPE1"));
  REQUIRE_FALSE(unknown.output.ok());
  CHECK(unknown.output.status().code() == ErrorCode::kValidationFailed);
  CHECK(FirstLocation(unknown.output.status()) == "body.scorers.expression.gene");
  const IsmRun far = RunIsm(IntervalBody("chr20:10001-35000", 20601, 20610, "GENEM"));
  REQUIRE_FALSE(far.output.ok());
  CHECK(FirstLocation(far.output.status()) == "body.scorers.expression.gene");
  // No gene's window holds the window (GENEQ's '+' window ends before 25,600): nothing is sent.
  const IsmRun none = RunIsm(IntervalBody("chr20:10001-35000", 25591, 25600));
  REQUIRE_FALSE(none.output.ok());
  CHECK(none.output.status().code() == ErrorCode::kValidationFailed);
  CHECK(FirstLocation(none.output.status()) == "body.window");
  CHECK(none.backend_calls == 0);
  // A window straddling the end of GENEQ's window (its last base is 25,599).
  const IsmRun edge = RunIsm(IntervalBody("chr20:10001-35000", 25590, 25600));
  REQUIRE_FALSE(edge.output.ok());
  CHECK(FirstLocation(edge.output.status()) == "body.window");
  CHECK(gene_of(RunIsm(IntervalBody("chr20:10001-35000", 25590, 25599))) == "GENEQ");
}
