// The genomic-variant-interpretation workflow below the real service: request validation rule by
// rule, each pre-acceptance check against a real SigV4-checking S3 server on loopback, job
// identity, the expression scorer over a fake backend, the job's run (download, annotate,
// upload, clean-up, bad input, cancellation), the rendered body, and the route through the
// request pipeline (Prefer required, identity, owner scoping).
#include <rapidjson/document.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <sys/stat.h>

#include "common/s3_grants.h"
#include "core/admission/commands.h"
#include "runner/config/runner_config.h"
#include "runner/jobs/runner_jobs.h"
#include "runner/s3/client_credentials.h"
#include "runner/queue_runner.h"
#include "gateway/handlers/job_waiter.h"
#include "core/jobs/job_queue.h"
#include "core/jobs/redis_job_store.h"
#include "gateway/handlers/job_runner.h"
#include "gateway/http/routes.h"
#include "tests/support/in_memory_job_store.h"
#include "tests/support/in_memory_quota_store.h"
#include "runner/workflows/variant_response.h"
#include "core/validation/variant_request.h"
#include "runner/workflows/backend_expression_scorer.h"
#include "runner/workflows/variant_interpretation.h"
#include "runner/workflows/variant_resources.h"
#include "tests/support/key_entries.h"
#include "tests/support/pipeline_calls.h"
#include "tests/support/s3_server.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;
using namespace dnaserve::runner;
using testing::S3Server;

namespace {

namespace pb = dnaserve::worker::v1;

// ------------------------------------------------------------------ request bodies

std::string Body(const std::string& options = R"({"genome_build":"GRCh37"})",
                 const std::string& uri = "s3://inputs/cohort/sample.vcf",
                 const std::string& extra = "") {
  return R"({"input":{"type":"s3_object","uri":")" + uri + R"("},"options":)" + options + extra +
         "}";
}

const std::vector<FieldError>& Errors(const Status& status) {
  static const std::vector<FieldError> kNone;
  const auto* d = std::get_if<ValidationDetails>(&status.details());
  return d ? d->errors : kNone;
}

void OnlyError(const std::string& body, const std::vector<std::string>& loc,
               const std::string& type) {
  auto result = core::ValidateVariantBody(body);
  INFO(body << " -> " << result.status().ToString());
  REQUIRE_FALSE(result.ok());
  REQUIRE(result.status().code() == ErrorCode::kValidationFailed);
  REQUIRE(Errors(result.status()).size() == 1);
  CHECK(Errors(result.status()).front().loc == loc);
  CHECK(Errors(result.status()).front().type == type);
}

std::string JsonStrings(size_t n, const std::string& stem) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) out += (i ? ",\"" : "\"") + stem + std::to_string(i) + "\"";
  return out + "]";
}

// ------------------------------------------------------------------ a tiny genome

std::string Bases(size_t n, uint32_t seed) {
  static const char kAcgt[] = "ACGT";
  std::string out;
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(kAcgt[(x >> 24) & 3]);
  }
  return out;
}

// Contig 20 of 40 kb with two genes: GENEA (+, TSS 10,001) and GENEB (-, TSS 30,001).
struct TinyGenome {
  std::string dir;
  std::string catalogue;
  std::string fasta;
  std::string bases;
  char At(int64_t pos1) const { return bases[static_cast<size_t>(pos1 - 1)]; }
};

const TinyGenome& Tiny() {
  static const TinyGenome genome = [] {
    TinyGenome g;
    g.dir = testing::MakeTempDir("dnaserve-tiny-genome");
    g.bases = Bases(40000, 5);
    g.fasta = g.dir + "/tiny.fa";
    REQUIRE(testing::WriteIndexedFasta(g.fasta, {{"20", g.bases}}, /*bgzip=*/false));
    g.catalogue = g.dir + "/tiny.tss.tsv";
    std::ofstream(g.catalogue) << "##dnaserve-tss-catalogue=1\n"
                                  "##build=GRCh37\n"
                                  "##annotation_release=unit test\n"
                                  "##transcripts=unit-test start sites\n"
                                  "##position_base=1\n"
                                  "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id\n"
                                  "chr20\t10001\t+\tGENEA\tENSG00000000001\t.\n"
                                  "chr20\t30001\t-\tGENEB\tENSG00000000002\t.\n";
    return g;
  }();
  return genome;
}

GenomeAssets TinyAssets() {
  auto catalogue = variant::TssCatalogue::Load(Tiny().catalogue);
  REQUIRE(catalogue.ok());
  auto reference = variant::ReferenceGenome::Open(Tiny().fasta);
  REQUIRE(reference.ok());
  return GenomeAssets{std::move(catalogue).value(), std::move(reference).value()};
}

// A VCF on the tiny genome: one annotated record near GENEA, one outside every window, one on
// a contig without start sites, one with only a symbolic allele, one SNV near GENEB.
std::string TinyVcf() {
  const TinyGenome& g = Tiny();
  std::ostringstream v;
  v << "##fileformat=VCFv4.2\n"
       "##contig=<ID=20,length=40000>\n"
       "##contig=<ID=1>\n"
       "##ALT=<ID=DEL,Description=\"Deletion\">\n"
       "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  auto other = [](char b) { return b == 'A' ? 'C' : 'A'; };
  v << "20\t10050\tnearA\t" << g.At(10050) << "\t" << other(g.At(10050)) << "\t.\tPASS\t.\n";
  v << "20\t20000\tfar\t" << g.At(20000) << "\t" << other(g.At(20000)) << "\t.\tPASS\t.\n";
  v << "1\t100\tnocontig\tA\tG\t.\tPASS\t.\n";
  v << "20\t29995\tsymbolic\t" << g.At(29995) << "\t<DEL>\t.\tPASS\t.\n";
  v << "20\t29990\tnearB\t" << g.At(29990) << "\t" << other(g.At(29990)) << "\t.\tPASS\t.\n";
  return v.str();
}

// ------------------------------------------------------------------ S3 and resources

S3Server& SharedS3() {
  static std::string why;
  static std::optional<S3Server> server = S3Server::Start({"inputs", "elsewhere"}, &why);
  if (!server) FAIL(why);
  return *server;
}

s3::S3Config StoreConfig(const std::string& secret = S3Server::kSecretKey) {
  s3::S3Config config;
  config.endpoint = SharedS3().endpoint();
  config.region = S3Server::kRegion;
  config.access_key_id = S3Server::kAccessKey;
  config.secret_access_key = secret;
  return config;
}

std::string WorkDir() {
  static const std::string dir = testing::MakeTempDir("dnaserve-variant-work");
  return dir;
}

std::unique_ptr<VariantResources> Resources(bool with_store = true, bool with_genome = true,
                                            const s3::S3Config& store = StoreConfig(),
                                            int64_t max_bytes = core::kMaxVcfObjectBytes) {
  std::unique_ptr<s3::S3Client> client;
  if (with_store) {
    auto created = s3::S3Client::Create(store);
    REQUIRE(created.ok());
    client = std::move(created).value();
  }
  std::optional<GenomeAssets> genome;
  if (with_genome) genome = TinyAssets();
  return std::make_unique<VariantResources>(std::move(client), std::move(genome), WorkDir(), 3,
                                            max_bytes);
}

// A key no other test uses.
std::string FreshKey(const std::string& stem, const std::string& suffix = ".vcf") {
  static std::atomic<int> n{0};
  return "t" + std::to_string(getpid()) + "-" + std::to_string(n++) + "/" + stem + suffix;
}

std::string Put(const std::string& key, const std::string& body) {
  REQUIRE(SharedS3().PutObject("inputs", key, body) == 200);
  return "s3://inputs/" + key;
}

core::ValidatedVariant Request(const std::string& uri) {
  core::ValidatedVariant r;
  r.uri = uri;
  r.genome_build = "GRCh37";
  r.tissues = {"heart", "liver"};
  return r;
}

const std::string kJobId = "0f1e2d3c-4b5a-4697-8877-665544332211";

// A client granted the test buckets (and a bucket that does not exist, so that case reaches the
// store), unless `read` / `write` say otherwise.
S3Access Tenant(std::vector<std::string> read = {"s3://inputs/", "s3://no-such-bucket/"},
                std::vector<std::string> write = {"s3://inputs/", "s3://no-such-bucket/"},
                std::string client_id = "alice") {
  S3Access access;
  access.client_id = std::move(client_id);
  for (const auto& g : read) access.grants.read.push_back(*ParseS3Grant(g));
  for (const auto& g : write) access.grants.write.push_back(*ParseS3Grant(g));
  return access;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// ------------------------------------------------------------------ scorers and backends

// log(TPM+1) from the window's G+C share and the tissue: deterministic, sequence-sensitive.
class GcScorer : public variant::ExpressionScorer {
 public:
  StatusOr<std::vector<double>> Score(const std::vector<variant::ScoreRequest>& batch,
                                      const std::atomic<bool>* cancelled) override {
    if (cancel_after_calls >= 0 && ++calls > cancel_after_calls && flag) *flag = true;
    if (cancelled && cancelled->load()) return Unavailable("cancelled");
    std::vector<double> out;
    for (const auto& item : batch) {
      double gc = 0;
      for (char c : item.sequence) gc += (c == 'G' || c == 'C');
      out.push_back(gc / static_cast<double>(item.sequence.size()) +
                    0.01 * static_cast<double>(item.description.size()));
    }
    return out;
  }
  StatusOr<std::string> ModelId() override { return std::string("expression-gc"); }

  int cancel_after_calls = -1;
  int calls = 0;
  std::atomic<bool>* flag = nullptr;
};

class FakeExpressionBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext& context,
                                      const core::ProgressCallback&) override {
    int now = ++in_flight;
    {
      std::lock_guard<std::mutex> lock(mu);
      max_in_flight = std::max(max_in_flight, now);
      ++calls;
      models.insert(request.model());
      descriptions.insert(request.expression().description());
      job_ids.insert(context.job_id);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    --in_flight;
    if (task != Task::kExpression) return Internal("not an expression call");
    if (request.sequence().size() != 9198) return Internal("not a 9,198 bp window");
    // The scorer reads numbers only, so it asks for no text (every variant test fails without).
    if (request.result_format() != pb::RESULT_FORMAT_JSON) {
      return Internal("not result_format JSON");
    }
    if (!fail_with.ok() && request.expression().description() == fail_on) return fail_with;
    pb::PredictResult result;
    result.set_model(request.model());
    // The window's first base encodes which item this was.
    result.mutable_expression()->set_expression_log_tpm(
        static_cast<double>(request.sequence()[0] - 'A') +
        static_cast<double>(request.expression().description().size()));
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  std::atomic<int> in_flight{0};
  std::mutex mu;
  int max_in_flight = 0;
  int calls = 0;
  int delay_ms = 20;
  std::set<std::string> models, descriptions, job_ids;
  Status fail_with;
  std::string fail_on;
};

// A catalogue whose expression roster is one default model.
struct ExpressionCatalogue : core::ModelCatalogue {
  ExpressionCatalogue() {
    pb::ModelInfo model;
    model.set_id("expression-test");
    model.set_is_default(true);
    SetModels(Task::kExpression, {model});
  }
};

}  // namespace

// ================================================================== validation

TEST_CASE("variant request: the minimal body takes the documented defaults", "[variant-wf]") {
  auto r = core::ValidateVariantBody(Body());
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->uri == "s3://inputs/cohort/sample.vcf");
  CHECK(r->genome_build == "GRCh37");
  CHECK(r->window == 5000);
  CHECK(r->tissues == std::vector<std::string>{"heart", "liver", "brain"});
  CHECK_FALSE(r->genes.has_value());
  CHECK_FALSE(r->client_ref.has_value());

  auto full = core::ValidateVariantBody(Body(
      R"({"genome_build":"GRCh37","window":1,"tissues":["liver","heart","liver"],"genes":["tp53","ENSG00000141510.17"]})",
      "s3://inputs/a.vcf.gz", R"(,"client_ref":"batch-7")"));
  INFO(full.status().ToString());
  REQUIRE(full.ok());
  CHECK(full->window == 1);
  // Tissues keep their order and repeats: one log2 fold-change column each.
  CHECK(full->tissues == std::vector<std::string>{"liver", "heart", "liver"});
  CHECK(*full->genes == std::vector<std::string>{"tp53", "ENSG00000141510.17"});
  CHECK(*full->client_ref == "batch-7");

  auto nulls = core::ValidateVariantBody(Body(R"({"genome_build":"GRCh37","genes":null})",
                                        "s3://inputs/a.vcf", R"(,"client_ref":null)"));
  REQUIRE(nulls.ok());
  CHECK_FALSE(nulls->genes.has_value());
  CHECK_FALSE(nulls->client_ref.has_value());
  CHECK(core::ValidateVariantBody(Body(R"({"genome_build":"GRCh37","window":100000})")).ok());
  CHECK(core::ValidateVariantBody(
            Body(R"({"genome_build":"GRCh37","tissues":)" + JsonStrings(16, "t") + "}"))
            .ok());
  CHECK(core::ValidateVariantBody(
            Body(R"({"genome_build":"GRCh37","genes":)" + JsonStrings(1000, "g") + "}"))
            .ok());
}

TEST_CASE("variant request: every schema rule is a 422 at its location", "[variant-wf]") {
  const std::string o = R"({"genome_build":"GRCh37")";
  // Closed objects at every level.
  OnlyError(Body(o + "}", "s3://inputs/a.vcf", R"(,"sequence":"ACGT")"), {"body", "sequence"},
            "extra_forbidden");
  OnlyError(Body(o + R"(,"threshold":0.5})"), {"body", "options", "threshold"}, "extra_forbidden");
  OnlyError(
      R"({"input":{"type":"s3_object","uri":"s3://inputs/a.vcf","endpoint":"http://x"},"options":{"genome_build":"GRCh37"}})",
      {"body", "input", "endpoint"}, "extra_forbidden");
  // Required fields.
  OnlyError(R"({"input":{"type":"s3_object","uri":"s3://inputs/a.vcf"}})", {"body", "options"},
            "missing");
  OnlyError(R"({"options":{"genome_build":"GRCh37"}})", {"body", "input"}, "missing");
  OnlyError(Body("{}"), {"body", "options", "genome_build"}, "missing");
  OnlyError(R"({"input":{"uri":"s3://inputs/a.vcf"},"options":{"genome_build":"GRCh37"}})",
            {"body", "input", "type"}, "missing");
  OnlyError(R"({"input":{"type":"s3_object"},"options":{"genome_build":"GRCh37"}})",
            {"body", "input", "uri"}, "missing");
  // input.type is a discriminator: exact.
  OnlyError(
      R"({"input":{"type":"S3_OBJECT","uri":"s3://inputs/a.vcf"},"options":{"genome_build":"GRCh37"}})",
      {"body", "input", "type"}, "literal_error");
  OnlyError(
      R"({"input":{"type":"file","uri":"s3://inputs/a.vcf"},"options":{"genome_build":"GRCh37"}})",
      {"body", "input", "type"}, "literal_error");
  // Only GRCh37 today.
  OnlyError(Body(R"({"genome_build":"GRCh38"})"), {"body", "options", "genome_build"},
            "literal_error");
  OnlyError(Body(R"({"genome_build":37})"), {"body", "options", "genome_build"}, "string_type");
  // uri: 8-1,024 characters.
  OnlyError(Body(o + "}", "s3://ab"), {"body", "input", "uri"}, "string_too_short");
  OnlyError(Body(o + "}", "s3://inputs/" + std::string(1010, 'k') + ".vcf"),
            {"body", "input", "uri"}, "string_too_long");
  OnlyError(R"({"input":{"type":"s3_object","uri":7},"options":{"genome_build":"GRCh37"}})",
            {"body", "input", "uri"}, "string_type");
  // window 1-100,000, an integer.
  OnlyError(Body(o + R"(,"window":0})"), {"body", "options", "window"}, "greater_than_equal");
  OnlyError(Body(o + R"(,"window":100001})"), {"body", "options", "window"}, "less_than_equal");
  OnlyError(Body(o + R"(,"window":2.5})"), {"body", "options", "window"}, "int_from_float");
  OnlyError(Body(o + R"(,"window":"5000"})"), {"body", "options", "window"}, "int_type");
  // tissues 1-16 non-empty strings.
  OnlyError(Body(o + R"(,"tissues":[]})"), {"body", "options", "tissues"}, "too_short");
  OnlyError(Body(o + R"(,"tissues":)" + JsonStrings(17, "t") + "}"), {"body", "options", "tissues"},
            "too_long");
  OnlyError(Body(o + R"(,"tissues":["heart",""]})"), {"body", "options", "tissues", "1"},
            "string_too_short");
  OnlyError(Body(o + R"(,"tissues":["heart",3]})"), {"body", "options", "tissues", "1"},
            "string_type");
  OnlyError(Body(o + R"(,"tissues":null})"), {"body", "options", "tissues"}, "list_type");
  // genes: 1-1,000 or null; an empty list is 422.
  OnlyError(Body(o + R"(,"genes":[]})"), {"body", "options", "genes"}, "too_short");
  OnlyError(Body(o + R"(,"genes":)" + JsonStrings(1001, "g") + "}"), {"body", "options", "genes"},
            "too_long");
  OnlyError(Body(o + R"(,"genes":"TP53"})"), {"body", "options", "genes"}, "list_type");
  // client_ref <= 128.
  OnlyError(Body(o + "}", "s3://inputs/a.vcf", R"(,"client_ref":")" + std::string(129, 'r') + "\""),
            {"body", "client_ref"}, "string_too_long");
  CHECK(core::ValidateVariantBody(
            Body(o + "}", "s3://inputs/a.vcf", R"(,"client_ref":")" + std::string(128, 'r') + "\""))
            .ok());
  // Several errors at once are all reported.
  auto many = core::ValidateVariantBody(Body(R"({"window":0,"genes":[]})", "x"));
  REQUIRE_FALSE(many.ok());
  CHECK(Errors(many.status()).size() == 4);  // uri length, genome_build, window, genes
  // Not JSON at all: 400.
  CHECK(core::ValidateVariantBody("{\"input\":").status().code() == ErrorCode::kBadRequest);
}

// ================================================================== operator settings

namespace {

StatusOr<runner::RunnerConfig> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), {"dnaserve-runner", "--workers", "x=y:1"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool exit_now = false;
  return runner::ParseRunnerConfig(static_cast<int>(argv.size()), argv.data(), &exit_now);
}

}  // namespace

TEST_CASE("settings: the object store and catalogue are parsed once, the secret from a file",
          "[variant-wf]") {
  const std::string dir = testing::MakeTempDir("dnaserve-config");
  std::ofstream(dir + "/secret") << "s3cr3t/with+chars\n";
  auto c = Parse({"--s3-endpoint", "http://127.0.0.1:9000", "--s3-region", "eu-west-1",
                  "--s3-access-key-id", "AKID", "--s3-secret-access-key-file", dir + "/secret",
                  "--s3-path-style", "false", "--grch37-catalogue", "c.tsv", "--grch37-fasta",
                  "f.fa.gz", "--variant-score-concurrency", "8"});
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->s3_secret_access_key == "s3cr3t/with+chars");  // the newline is dropped
  CHECK_FALSE(c->s3_path_style);
  VariantSettings settings = VariantSettingsFrom(*c);
  REQUIRE(settings.store.has_value());
  CHECK(settings.store->endpoint == "http://127.0.0.1:9000");
  CHECK(settings.store->region == "eu-west-1");
  CHECK(settings.store->access_key_id == "AKID");
  CHECK(settings.store->secret_access_key == "s3cr3t/with+chars");
  CHECK_FALSE(settings.store->path_style);
  CHECK(settings.grch37_catalogue == "c.tsv");
  CHECK(settings.score_concurrency == 8);

  // Defaults: no store, no catalogue; the workflow is simply not set up.
  auto bare = Parse({});
  REQUIRE(bare.ok());
  CHECK_FALSE(VariantSettingsFrom(*bare).store.has_value());
  CHECK(bare->s3_path_style);
  // Refused: a catalogue without its FASTA, both forms of the secret, an unreadable file.
  CHECK_FALSE(Parse({"--grch37-catalogue", "c.tsv"}).ok());
  CHECK_FALSE(Parse({"--s3-secret-access-key", "a", "--s3-secret-access-key-file",
                     dir + "/secret"})
                  .ok());
  CHECK_FALSE(Parse({"--s3-secret-access-key-file", dir + "/absent"}).ok());
  CHECK_FALSE(Parse({"--variant-score-concurrency", "0"}).ok());
}

TEST_CASE("settings: a catalogue that does not match its FASTA stops the runner at start-up",
          "[variant-wf]") {
  VariantSettings good;
  good.grch37_catalogue = Tiny().catalogue;
  good.grch37_fasta = Tiny().fasta;
  good.work_dir = WorkDir();
  good.store = StoreConfig();
  auto loaded = VariantResources::Load(good);
  INFO(loaded.status().ToString());
  REQUIRE(loaded.ok());
  REQUIRE((*loaded)->Genome("GRCh37") != nullptr);
  CHECK((*loaded)->Genome("GRCh37")->catalogue.info().start_sites == 2);
  CHECK((*loaded)->Genome("GRCh38") == nullptr);
  CHECK((*loaded)->store() != nullptr);

  const std::string dir = testing::MakeTempDir("dnaserve-mismatch");
  // A start site on a contig the FASTA lacks.
  std::ofstream(dir + "/other-contig.tsv") << "##dnaserve-tss-catalogue=1\n##build=GRCh37\n"
                                              "##annotation_release=x\n##transcripts=x\n"
                                              "##position_base=1\n"
                                              "#contig\ttss\tstrand\tgene_symbol\tgene_id\t"
                                              "transcript_id\n"
                                              "chr21\t100\t+\tG\tENSG00000000009\t.\n";
  // Another build.
  std::ofstream(dir + "/grch38.tsv") << "##dnaserve-tss-catalogue=1\n##build=GRCh38\n"
                                        "##annotation_release=x\n##transcripts=x\n"
                                        "##position_base=1\n"
                                        "#contig\ttss\tstrand\tgene_symbol\tgene_id\t"
                                        "transcript_id\n"
                                        "chr20\t100\t+\tG\tENSG00000000009\t.\n";
  struct Bad {
    std::string what;
    VariantSettings settings;
    std::string says;
  };
  auto edit = [&](std::function<void(VariantSettings&)> f) {
    VariantSettings s = good;
    f(s);
    return s;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"contig missing", edit([&](auto& s) { s.grch37_catalogue = dir + "/other-contig.tsv"; }),
            "not in the reference FASTA"},
           {"other build", edit([&](auto& s) { s.grch37_catalogue = dir + "/grch38.tsv"; }),
            "GRCh38"},
           {"no FASTA index", edit([&](auto& s) { s.grch37_fasta = dir + "/none.fa"; }),
            "DNASERVE_GRCH37_FASTA"},
           {"no catalogue", edit([&](auto& s) { s.grch37_catalogue = dir + "/none.tsv"; }),
            "DNASERVE_GRCH37_CATALOGUE"},
           {"bad endpoint", edit([](auto& s) { s.store->endpoint = "ftp://example.org"; }),
            "DNASERVE_S3"},
           {"work dir", edit([](auto& s) { s.work_dir = "/nonexistent/dir"; }),
            "DNASERVE_VARIANT_WORK_DIR"},
       }) {
    CAPTURE(bad.what);
    auto failed = VariantResources::Load(bad.settings);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.status().code() == ErrorCode::kInternal);
    CHECK_THAT(failed.status().message(), Catch::Contains(bad.says));
  }
}

// ================================================================== pre-acceptance checks

TEST_CASE("pre-acceptance: a readable VCF is admitted with its size and ETag", "[variant-wf]") {
  auto resources = Resources();
  const std::string vcf = TinyVcf();
  const std::string uri = Put(FreshKey("sample"), vcf);
  auto c = AdmitVariantCase(Request(uri), *resources, kJobId, Tenant());
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->object.size == static_cast<int64_t>(vcf.size()));
  CHECK_FALSE(c->object.etag.empty());
  CHECK(c->input.bucket == "inputs");
  CHECK(c->output.bucket == "inputs");
  CHECK(c->output.key ==
        c->input.key.substr(0, c->input.key.size() - 4) + ".annotated.0f1e2d3c.vcf.gz");
  CHECK_FALSE(c->panel.has_value());
  CHECK(FilesIn(WorkDir()) == 0);  // the header sniff left nothing behind

  // gzip and bgzip objects too.
  std::string plain = WorkDir() + "/../tiny-admit.vcf";
  std::ofstream(plain) << vcf;
  std::string out;
  REQUIRE(testing::RunCommand({"/usr/bin/bgzip", "-f", plain}, &out) == 0);
  std::ifstream in(plain + ".gz", std::ios::binary);
  std::string bgzipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(AdmitVariantCase(Request(Put(FreshKey("bgz", ".vcf.bgz"), bgzipped)), *resources, kJobId, Tenant())
            .ok());
  CHECK(
      AdmitVariantCase(Request(Put(FreshKey("gz", ".vcf.gz"), bgzipped)), *resources, kJobId, Tenant()).ok());
}

TEST_CASE("pre-acceptance: each check is a 400 bad_request that says what is wrong",
          "[variant-wf]") {
  auto resources = Resources(true, true, StoreConfig(), /*max_bytes=*/4096);
  const std::string good = Put(FreshKey("good"), TinyVcf());
  struct Case {
    std::string what;
    core::ValidatedVariant request;
    std::string says;
  };
  auto with = [&](std::function<void(core::ValidatedVariant&)> edit) {
    core::ValidatedVariant r = Request(good);
    edit(r);
    return r;
  };
  std::string gex_vcf = TinyVcf();
  gex_vcf.insert(gex_vcf.find("#CHROM"),
                 "##INFO=<ID=GEX_ANN,Number=.,Type=String,Description=\"earlier run\">\n");
  std::string big(5000, '#');
  const std::string long_key = "x/" + std::string(1000, 'k') + ".vcf";
  std::vector<Case> cases = {
      {"not s3://", Request("https://inputs/x.vcf"), "s3://bucket/key"},
      {"no bucket", Request("s3:///x.vcf.gz"), "s3://bucket/key"},
      {"bad bucket", Request("s3://Not_A_Bucket/x.vcf"), "bucket name"},
      {"a prefix", Request("s3://inputs/cohort/"), "prefix"},
      {"not a VCF name", Request("s3://inputs/cohort/sample.txt"), ".vcf, .vcf.gz or .vcf.bgz"},
      {"missing object", Request("s3://inputs/" + FreshKey("absent")), "does not exist"},
      {"missing bucket", Request("s3://no-such-bucket/x.vcf"), "bucket"},
      {"empty object", Request(Put(FreshKey("empty"), "")), "empty"},
      {"too large", Request(Put(FreshKey("big"), big)), "2 GiB"},
      {"not a VCF", Request(Put(FreshKey("text"), "hello world\n")), "not a VCF"},
      {"already annotated", Request(Put(FreshKey("gex"), gex_vcf)), "GEX_"},
      {"unknown genes", with([](core::ValidatedVariant& r) {
         r.genes = std::vector<std::string>{"GENEA", "NOPE1", "ENSG00000000002.4", "NOPE2"};
       }),
       "NOPE1"},
      {"unknown build", with([](core::ValidatedVariant& r) { r.genome_build = "GRCh38"; }),
       "no start-site catalogue"},
      {"output name too long", Request("s3://inputs/" + long_key), "1,024"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto admitted = AdmitVariantCase(c.request, *resources, kJobId, Tenant());
    REQUIRE_FALSE(admitted.ok());
    CAPTURE(admitted.status().message());
    CHECK(admitted.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(admitted.status().message(), Catch::Contains(c.says));
    CHECK(admitted.status().message().find(S3Server::kSecretKey) == std::string::npos);
    CHECK(admitted.status().message().find(std::to_string(SharedS3().port())) == std::string::npos);
  }
  // Every unresolved identifier is named in the one message.
  auto genes = AdmitVariantCase(cases[11].request, *resources, kJobId, Tenant());
  CHECK_THAT(genes.status().message(), Catch::Contains("NOPE2"));
  // A resolved panel becomes Ensembl ids in request order.
  auto panel = AdmitVariantCase(with([](core::ValidatedVariant& r) {
                                  r.genes = std::vector<std::string>{"geneb", "ENSG00000000001.9"};
                                }),
                                *resources, kJobId, Tenant());
  REQUIRE(panel.ok());
  CHECK(panel->panel->gene_ids == std::vector<std::string>{"ENSG00000000002", "ENSG00000000001"});
  // A catalogue-less deployment: 400 for GRCh37.
  auto no_genome = Resources(true, false);
  auto build = AdmitVariantCase(Request(good), *no_genome, kJobId, Tenant());
  CHECK(build.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(build.status().message(), Catch::Contains("GRCh37"));
  CHECK(FilesIn(WorkDir()) == 0);
}

TEST_CASE("pre-acceptance: the store's own failures keep their codes", "[variant-wf]") {
  const std::string good = Put(FreshKey("good"), TinyVcf());
  // The service's own credentials refused: the operator's problem, 500.
  auto wrong_secret = Resources(true, true, StoreConfig("not-the-secret"));
  CHECK(AdmitVariantCase(Request(good), *wrong_secret, kJobId, Tenant()).status().code() ==
        ErrorCode::kInternal);
  // The store unreachable: 503 with Retry-After.
  s3::S3Config closed = StoreConfig();
  closed.endpoint = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  auto unreachable = Resources(true, true, closed);
  auto down = AdmitVariantCase(Request(good), *unreachable, kJobId, Tenant());
  CHECK(down.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(down.status().retry_after_seconds().has_value());
  // No store configured: 503, not a 400 blaming the caller.
  auto none = Resources(false, true);
  CHECK(AdmitVariantCase(Request(good), *none, kJobId, Tenant()).status().code() ==
        ErrorCode::kServiceUnavailable);
}

// The message of a refusal with every occurrence of `uri` replaced, to compare templates.
std::string Template(const Status& status, const std::string& uri) {
  std::string m = status.message();
  for (size_t at = m.find(uri); at != std::string::npos; at = m.find(uri, at)) {
    m.replace(at, uri.size(), "<uri>");
  }
  return m;
}

TEST_CASE("grants: an object outside them is refused as a missing one, before any store request",
          "[variant-wf][grants]") {
  // A store nobody listens on: any request would be a 503, so a 400 proves none was made.
  s3::S3Config closed = StoreConfig();
  closed.endpoint = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  auto unreachable = Resources(true, true, closed);
  const std::string theirs = Put("tenant-b/" + FreshKey("private"), TinyVcf());
  const std::string absent = "s3://inputs/" + FreshKey("absent");
  const S3Access eve = Tenant({"s3://inputs/tenant-b-other/", "s3://elsewhere/"},
                              {"s3://elsewhere/"}, "eve");

  // Existing and missing alike: 400, one template, with only the URI in it.
  auto existing = AdmitVariantCase(Request(theirs), *unreachable, kJobId, eve);
  auto missing = AdmitVariantCase(Request(absent), *unreachable, kJobId, eve);
  REQUIRE_FALSE(existing.ok());
  REQUIRE_FALSE(missing.ok());
  CHECK(existing.status().code() == ErrorCode::kBadRequest);
  CHECK(missing.status().code() == ErrorCode::kBadRequest);
  CHECK(Template(existing.status(), theirs) == Template(missing.status(), absent));
  // ... the template a missing object inside the caller's grants gets from the real store.
  auto resources = Resources();
  const std::string own_missing = "s3://inputs/" + FreshKey("absent");
  auto from_store = AdmitVariantCase(Request(own_missing), *resources, kJobId, Tenant());
  REQUIRE_FALSE(from_store.ok());
  CHECK(Template(from_store.status(), own_missing) == Template(existing.status(), theirs));
  // ... and the one a missing bucket gets.
  auto no_bucket = AdmitVariantCase(Request("s3://no-such-bucket/x.vcf"), *resources, kJobId,
                                    Tenant());
  CHECK(Template(no_bucket.status(), "s3://no-such-bucket/x.vcf") ==
        Template(existing.status(), theirs));

  // Path segments are exact; dot segments are never covered; the bucket is exact.
  for (const std::string& uri :
       {"s3://inputs/tenant-b-other-x/a.vcf", "s3://inputs/tenant-b-other/../tenant-b/a.vcf",
        "s3://inputs/tenant-b-other/./a.vcf", "s3://elsewhere2/a.vcf",
        "s3://inputs/Tenant-B-Other/a.vcf", "s3://inputs/tenant-b-other%2F..%2Ftenant-b/a.vcf"}) {
    CAPTURE(uri);
    auto refused = AdmitVariantCase(Request(uri), *unreachable, kJobId, eve);
    REQUIRE_FALSE(refused.ok());
    CHECK(Template(refused.status(), uri) == Template(existing.status(), theirs));
  }
  // Read granted, write not: the write refusal, still before any request.
  auto read_only = AdmitVariantCase(Request(theirs), *unreachable, kJobId,
                                    Tenant({"s3://inputs/tenant-b/"}, {"s3://inputs/other/"}));
  REQUIRE_FALSE(read_only.ok());
  CHECK(read_only.status().code() == ErrorCode::kBadRequest);
  CHECK(read_only.status().message() ==
        S3PrefixUnwritable(S3ParentPrefix(theirs)).message());
  // No grants at all: nothing.
  auto none = AdmitVariantCase(Request(theirs), *unreachable, kJobId, S3Access{"nobody", {}});
  CHECK(none.status().message() == S3ObjectUnreadable(theirs).message());
  // Granted: it reaches the store (which is down here: 503).
  auto granted = AdmitVariantCase(Request(theirs), *unreachable, kJobId, Tenant());
  CHECK(granted.status().code() == ErrorCode::kServiceUnavailable);
}

TEST_CASE("grants: the job checks them again before it downloads or uploads",
          "[variant-wf][grants]") {
  auto resources = Resources();
  const std::string uri = Put(FreshKey("recheck"), TinyVcf());
  auto c = AdmitVariantCase(Request(uri), *resources, kJobId, Tenant());
  REQUIRE(c.ok());
  GcScorer scorer;
  scorer.cancel_after_calls = 1 << 30;  // counts calls, never cancels
  std::atomic<bool> cancelled{false};
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  VariantCase no_read = *c;
  no_read.access.grants.read.clear();
  auto refused = RunVariantInterpretation(no_read, *resources, scorer, context);
  CHECK(refused.status().message() == S3ObjectUnreadable(uri).message());
  VariantCase no_write = *c;
  no_write.access.grants.write = {*ParseS3Grant("s3://inputs/somewhere-else/")};
  auto unwritten = RunVariantInterpretation(no_write, *resources, scorer, context);
  CHECK(unwritten.status().message() ==
        S3PrefixUnwritable(S3ParentPrefix(c->output.ToString())).message());
  CHECK(scorer.calls == 0);
  CHECK_FALSE(SharedS3().StoredObject("inputs", c->output.key).has_value());
  CHECK(FilesIn(WorkDir()) == 0);
}

TEST_CASE("per-client credentials: a client's requests are signed with its own",
          "[variant-wf][grants]") {
  // The service's own secret is wrong; alice has working credentials of her own.
  auto resources = Resources(true, true, StoreConfig("not-the-secret"));
  auto own = s3::S3Client::Create(StoreConfig());
  REQUIRE(own.ok());
  resources->SetClientStore("alice", std::move(own).value());
  const std::string uri = Put(FreshKey("own-credentials"), TinyVcf());
  CHECK(AdmitVariantCase(Request(uri), *resources, kJobId, Tenant()).ok());
  CHECK(AdmitVariantCase(Request(uri), *resources, kJobId, Tenant({"s3://inputs/"},
                                                                   {"s3://inputs/"}, "bob"))
            .status()
            .code() == ErrorCode::kInternal);
}

TEST_CASE("per-client credentials file: parsed strictly, secrets never in messages",
          "[variant-wf][grants]") {
  auto parsed = s3::ParseS3ClientCredentials(
      R"({"alice": {"access_key_id": "AKIDALICE", "secret_access_key": "s3cr3t-a"},
          "bob": {"access_key_id": "AKIDBOB", "secret_access_key": "s3cr3t-b",
                  "session_token": "tok"}})");
  REQUIRE(parsed.ok());
  CHECK(parsed->size() == 2);
  CHECK(parsed->at("alice").access_key_id == "AKIDALICE");
  CHECK(parsed->at("alice").session_token.empty());
  CHECK(parsed->at("bob").session_token == "tok");
  for (const std::string bad :
       {R"([])", R"({"alice": "AKID:s3cr3t-x"})", R"({"alice": {"access_key_id": "A"}})",
        R"({"alice": {"access_key_id": "", "secret_access_key": "s3cr3t-x"}})",
        R"({"alice": {"access_key_id": "A", "secret_access_key": "s3cr3t-x", "region": "x"}})",
        R"({"": {"access_key_id": "A", "secret_access_key": "s3cr3t-x"}})",
        R"({"alice": {"access_key_id": "A", "secret_access_key": "s3cr3t-x")"}) {
    CAPTURE(bad);
    auto refused = s3::ParseS3ClientCredentials(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == ErrorCode::kBadRequest);
    CHECK(refused.status().message().find("s3cr3t") == std::string::npos);
  }
  // The file: a group-readable one is flagged (the runner warns), a missing one refused.
  const std::string dir = testing::MakeTempDir("dnaserve-s3-credentials");
  const std::string path = dir + "/credentials.json";
  std::ofstream(path) << R"({"alice": {"access_key_id": "A", "secret_access_key": "s"}})";
  REQUIRE(chmod(path.c_str(), 0640) == 0);
  bool too_open = false;
  REQUIRE(s3::LoadS3ClientCredentials(path, &too_open).ok());
  CHECK(too_open);
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  REQUIRE(s3::LoadS3ClientCredentials(path, &too_open).ok());
  CHECK_FALSE(too_open);
  CHECK_FALSE(s3::LoadS3ClientCredentials(dir + "/absent.json", &too_open).ok());
  // Through the settings: each client gets a client of its own.
  VariantSettings settings;
  settings.store = StoreConfig();
  settings.client_credentials_file = path;
  settings.work_dir = WorkDir();
  auto loaded = VariantResources::Load(settings);
  REQUIRE(loaded.ok());
  CHECK((*loaded)->client_store_count() == 1);
  CHECK((*loaded)->StoreFor("alice") != (*loaded)->store());
  CHECK((*loaded)->StoreFor("bob") == (*loaded)->store());
  settings.store.reset();
  CHECK_FALSE(VariantResources::Load(settings).ok());  // credentials without a store
}

TEST_CASE("job identity: every part of the case, and only those, changes it", "[variant-wf]") {
  auto base = [] {
    VariantCase c;
    c.request = Request("s3://inputs/a.vcf");
    c.object.etag = "\"etag-1\"";
    return c;
  };
  const std::string id = VariantCaseIdentity("alice", base());
  CHECK(id.size() == 64);
  CHECK(VariantCaseIdentity("alice", base()) == id);
  // Admission's own details (output name, size) do not take part.
  VariantCase other_job = base();
  other_job.output.key = "elsewhere.vcf.gz";
  other_job.object.size = 99;
  CHECK(VariantCaseIdentity("alice", other_job) == id);

  std::vector<std::pair<std::string, VariantCase>> changed;
  auto edit = [&](std::string what, std::function<void(VariantCase&)> f) {
    VariantCase c = base();
    f(c);
    changed.emplace_back(std::move(what), std::move(c));
  };
  edit("uri", [](VariantCase& c) { c.request.uri = "s3://inputs/b.vcf"; });
  edit("etag", [](VariantCase& c) { c.object.etag = "\"etag-2\""; });
  edit("client_ref", [](VariantCase& c) { c.request.client_ref = "run-2"; });
  edit("empty client_ref", [](VariantCase& c) { c.request.client_ref = ""; });
  edit("window", [](VariantCase& c) { c.request.window = 5001; });
  edit("tissue order", [](VariantCase& c) { c.request.tissues = {"liver", "heart"}; });
  edit("tissues", [](VariantCase& c) { c.request.tissues = {"heart"}; });
  edit("panel", [](VariantCase& c) {
    auto catalogue = variant::TssCatalogue::Load(Tiny().catalogue);
    c.panel = variant::ResolveGenePanel(*catalogue, {"GENEA"}).value();
  });
  std::set<std::string> seen = {id, VariantCaseIdentity("bob", base())};
  CHECK(seen.size() == 2);
  for (const auto& [what, c] : changed) {
    CAPTURE(what);
    CHECK(seen.insert(VariantCaseIdentity("alice", c)).second);
  }
}

// ================================================================== the scorer

TEST_CASE("scorer: one expression call per window, in order, spread over the executor",
          "[variant-wf]") {
  FakeExpressionBackend backend;
  ExpressionCatalogue catalogue;
  core::Executor executor(4, 16);
  std::atomic<bool> cancelled{false};
  BackendExpressionScorer scorer(&backend, &catalogue, &executor, 4,
                                 core::CallContext{"req-1", "job-1", &cancelled});
  auto model = scorer.ModelId();
  REQUIRE(model.ok());
  CHECK(*model == "expression-test");

  std::vector<std::string> windows;
  for (char c : std::string("ACGTACGTAC")) windows.push_back(std::string(9198, c));
  std::vector<variant::ScoreRequest> batch;
  for (size_t i = 0; i < windows.size(); ++i) {
    batch.push_back({windows[i], i % 2 ? "liver" : "heart"});
  }
  auto scores = scorer.Score(batch, &cancelled);
  INFO(scores.status().ToString());
  REQUIRE(scores.ok());
  REQUIRE(scores->size() == batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    CHECK((*scores)[i] == static_cast<double>(windows[i][0] - 'A') + 5.0);  // both words 5 chars
  }
  CHECK(backend.calls == 10);
  CHECK(scorer.calls() == 10);
  CHECK(backend.max_in_flight > 1);
  CHECK(backend.max_in_flight <= 4);
  CHECK(backend.models == std::set<std::string>{"expression-test"});
  CHECK(backend.descriptions == std::set<std::string>{"heart", "liver"});
  CHECK(backend.job_ids == std::set<std::string>{"job-1"});

  // Without an executor the calls are made one at a time on the caller's thread.
  FakeExpressionBackend serial_backend;
  BackendExpressionScorer serial(&serial_backend, &catalogue, nullptr, 4,
                                 core::CallContext{"req-2", "job-2", &cancelled});
  REQUIRE(serial.Score(batch, &cancelled).ok());
  CHECK(serial_backend.max_in_flight == 1);
  executor.Shutdown();
}

TEST_CASE("scorer: a worker error fails the batch with its code, cancellation stops it",
          "[variant-wf]") {
  ExpressionCatalogue catalogue;
  core::Executor executor(4, 16);
  std::atomic<bool> cancelled{false};
  std::vector<std::string> windows(12, std::string(9198, 'G'));
  std::vector<variant::ScoreRequest> batch;
  for (size_t i = 0; i < windows.size(); ++i) batch.push_back({windows[i], i == 3 ? "bad" : "ok"});

  FakeExpressionBackend backend;
  backend.fail_with = Unavailable("no expression worker is reachable").set_retry_after_seconds(5);
  backend.fail_on = "bad";
  BackendExpressionScorer scorer(&backend, &catalogue, &executor, 2,
                                 core::CallContext{"req", "job", &cancelled});
  auto failed = scorer.Score(batch, &cancelled);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(backend.calls < 12);  // calls not yet started are not made

  // Cancelled before the batch: no call at all.
  FakeExpressionBackend idle;
  BackendExpressionScorer cancelled_scorer(&idle, &catalogue, &executor, 2,
                                           core::CallContext{"req", "job", &cancelled});
  cancelled = true;
  CHECK(cancelled_scorer.Score(batch, &cancelled).status().code() ==
        ErrorCode::kServiceUnavailable);
  CHECK(idle.calls == 0);

  // The expression roster not known yet: 503 from the catalogue, nothing called.
  core::ModelCatalogue unknown;
  std::atomic<bool> live{false};
  BackendExpressionScorer no_roster(&idle, &unknown, &executor, 2, core::CallContext{"r", "j", &live});
  CHECK(no_roster.ModelId().status().code() == ErrorCode::kServiceUnavailable);
  CHECK(no_roster.Score(batch, &live).status().code() == ErrorCode::kServiceUnavailable);
  executor.Shutdown();
}

// ================================================================== the job's run

TEST_CASE("run: the annotated copy is uploaded beside the input, temp files removed",
          "[variant-wf]") {
  auto resources = Resources();
  const std::string vcf = TinyVcf();
  const std::string key = FreshKey("cohort");
  const std::string uri = Put(key, vcf);
  core::ValidatedVariant request = Request(uri);
  request.window = 100;
  auto c = AdmitVariantCase(request, *resources, kJobId, Tenant());
  REQUIRE(c.ok());

  GcScorer scorer;
  std::atomic<bool> cancelled{false};
  std::vector<std::pair<double, std::string>> progress;
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  context.report_progress = [&](double p, const std::string& m) { progress.emplace_back(p, m); };
  auto run = RunVariantInterpretation(*c, *resources, scorer, context);
  INFO(run.status().ToString());
  REQUIRE(run.ok());

  const variant::AnnotationCounts& n = run->annotation.counts;
  CHECK(n.variants_in == 5);
  CHECK(n.annotated == 2);  // nearA, nearB
  CHECK(n.not_run == 3);
  CHECK(n.annotated + n.not_run == n.variants_in);
  CHECK(n.not_run_reasons.at("OUTSIDE_TSS_WINDOW") == 1);
  CHECK(n.not_run_reasons.at("NO_TSS_ON_CONTIG") == 1);
  CHECK(n.not_run_reasons.at("NO_SUPPORTED_ALT") == 1);
  CHECK(n.skipped_alleles == 1);
  CHECK(n.associations == 2);
  CHECK(*run->annotation.model == "expression-gc");
  CHECK(run->output.ToString() == c->output.ToString());

  // The object is a bgzip VCF with every record, the GEX header lines and the model line.
  auto stored = SharedS3().StoredObject("inputs", c->output.key);
  REQUIRE(stored.has_value());
  CHECK(static_cast<int64_t>(stored->size()) == run->output_bytes);
  const std::string local = WorkDir() + "/../run-output.vcf.gz";
  std::ofstream(local, std::ios::binary) << *stored;
  std::string records;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-H", local}, &records) == 0);
  CHECK(std::count(records.begin(), records.end(), '\n') == 5);
  CHECK_THAT(records, Catch::Contains("GEX_ANN="));
  CHECK_THAT(records, Catch::Contains("GEX_NOT_RUN_REASON=NO_TSS_ON_CONTIG"));
  std::string header;
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-h", local}, &header) == 0);
  CHECK_THAT(header, Catch::Contains("##GEXModel"));
  CHECK_THAT(header, Catch::Contains("##GEXWindow"));
  // The input is untouched.
  CHECK(*SharedS3().StoredObject("inputs", key) == vcf);

  // Progress: from 0 to the upload, never backwards, with the phases named.
  REQUIRE_FALSE(progress.empty());
  CHECK(progress.front().first == 0);
  for (size_t i = 1; i < progress.size(); ++i) CHECK(progress[i].first >= progress[i - 1].first);
  CHECK(progress.back().first <= 100);
  std::set<std::string> phases;
  for (const auto& [p, m] : progress) phases.insert(m.substr(0, m.find(' ')));
  CHECK(phases.count("downloading") == 1);
  CHECK(phases.count("checking") == 1);
  CHECK(phases.count("scoring") == 1);
  CHECK(phases.count("uploading") == 1);
  CHECK(FilesIn(WorkDir()) == 0);

  // Nothing to score (no start site near any record): no model, no ##GEXModel.
  core::ValidatedVariant far_request = Request(Put(FreshKey("far"), TinyVcf()));
  far_request.window = 1;
  auto far = AdmitVariantCase(far_request, *resources, "1f1e2d3c-4b5a-4697-8877-665544332211", Tenant());
  REQUIRE(far.ok());
  auto unscored = RunVariantInterpretation(*far, *resources, scorer, context);
  REQUIRE(unscored.ok());
  CHECK_FALSE(unscored->annotation.model.has_value());
  CHECK(unscored->annotation.counts.annotated == 0);
  std::ofstream(local, std::ios::binary) << *SharedS3().StoredObject("inputs", far->output.key);
  header.clear();
  REQUIRE(testing::RunCommand({"/usr/bin/bcftools", "view", "-h", local}, &header) == 0);
  CHECK(header.find("##GEXModel") == std::string::npos);
}

TEST_CASE("run: bad VCF content fails the job naming the record, nothing is written",
          "[variant-wf]") {
  auto resources = Resources();
  struct Bad {
    std::string what;
    std::string body;
    std::string says;
  };
  std::string malformed = TinyVcf();
  malformed += "20\tnot-a-number\tbad\tA\tG\t.\tPASS\t.\n";
  std::string gex_in_records = TinyVcf();
  gex_in_records +=
      "20\t10060\tx\t" + std::string(1, Tiny().At(10060)) + "\tT\t.\tPASS\tGEX_ANN=x\n";
  // A header longer than the 64 KiB sniff hides GEX_* from admission; the job finds it.
  std::string long_header = "##fileformat=VCFv4.2\n";
  for (int i = 0; i < 1500; ++i)
    long_header += "##note" + std::to_string(i) + "=" + std::string(50, 'n') + "\n";
  long_header += "##INFO=<ID=GEX_NOT_RUN,Number=0,Type=Flag,Description=\"old\">\n";
  long_header += TinyVcf().substr(TinyVcf().find("#CHROM"));
  std::vector<Bad> cases = {
      {"malformed line", malformed, "record 6"},
      {"GEX_* in records", gex_in_records, "GEX_"},
      {"GEX_* past the sniffed header", long_header, "GEX_"},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.what);
    const std::string key = FreshKey("bad");
    auto c = AdmitVariantCase(Request(Put(key, bad.body)), *resources, kJobId, Tenant());
    INFO(c.status().ToString());
    REQUIRE(c.ok());  // admission only reads the header
    GcScorer scorer;
    std::atomic<bool> cancelled{false};
    core::JobContext context;
    context.call = core::CallContext{"req", kJobId, &cancelled};
    auto run = RunVariantInterpretation(*c, *resources, scorer, context);
    REQUIRE_FALSE(run.ok());
    CHECK(run.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(run.status().message(), Catch::Contains(bad.says));
    CHECK_FALSE(SharedS3().StoredObject("inputs", c->output.key).has_value());
    CHECK(*SharedS3().StoredObject("inputs", key) == bad.body);
    CHECK(FilesIn(WorkDir()) == 0);
  }

  // A replaced object between admission and the job: the job refuses to mix versions.
  const std::string key = FreshKey("replaced");
  auto c = AdmitVariantCase(Request(Put(key, TinyVcf())), *resources, kJobId, Tenant());
  REQUIRE(c.ok());
  Put(key, TinyVcf() + "20\t10070\ty\t" + std::string(1, Tiny().At(10070)) + "\tT\t.\tPASS\t.\n");
  GcScorer scorer;
  std::atomic<bool> cancelled{false};
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  auto replaced = RunVariantInterpretation(*c, *resources, scorer, context);
  CHECK(replaced.status().code() == ErrorCode::kBadRequest);
  CHECK_FALSE(SharedS3().StoredObject("inputs", c->output.key).has_value());
}

TEST_CASE("settings and run: the VCF bounds are runner settings and end the job they stop",
          "[variant-wf][bounds]") {
  // Documented defaults, then flags and the environment.
  auto bare = Parse({});
  REQUIRE(bare.ok());
  CHECK(bare->vcf_limits.max_records == 10000000);
  CHECK(bare->vcf_limits.max_alts_per_record == 1000);
  CHECK(bare->vcf_limits.max_line_bytes == 8 << 20);
  CHECK(bare->vcf_limits.max_header_bytes == 64 << 20);
  CHECK(bare->vcf_limits.max_decompressed_bytes == int64_t{20} << 30);
  setenv("DNASERVE_VCF_MAX_ALTS", "7", 1);
  auto c = Parse({"--vcf-max-records", "3", "--vcf-max-line-bytes", "4096",
                  "--vcf-max-header-bytes", "8192", "--vcf-max-decompressed-bytes", "100000"});
  unsetenv("DNASERVE_VCF_MAX_ALTS");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  const variant::VcfLimits limits = VariantSettingsFrom(*c).vcf_limits;
  CHECK(limits.max_records == 3);
  CHECK(limits.max_alts_per_record == 7);
  CHECK(limits.max_line_bytes == 4096);
  CHECK(limits.max_header_bytes == 8192);
  CHECK(limits.max_decompressed_bytes == 100000);
  CHECK_FALSE(Parse({"--vcf-max-alts", "70000"}).ok());  // past htslib's own 65,535
  CHECK_FALSE(Parse({"--vcf-max-records", "0"}).ok());

  // The job reads its VCF within the resources' bounds: TinyVcf has 5 records.
  std::unique_ptr<s3::S3Client> client = std::move(s3::S3Client::Create(StoreConfig())).value();
  VariantResources resources(std::move(client), TinyAssets(), WorkDir(), 3, core::kMaxVcfObjectBytes,
                             limits);
  const std::string key = FreshKey("bounded");
  auto admitted = AdmitVariantCase(Request(Put(key, TinyVcf())), resources, kJobId, Tenant());
  REQUIRE(admitted.ok());
  GcScorer scorer;
  std::atomic<bool> cancelled{false};
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  auto run = RunVariantInterpretation(*admitted, resources, scorer, context);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(run.status().message(), Catch::Contains("more than 3 records"));
  CHECK_FALSE(SharedS3().StoredObject("inputs", admitted->output.key).has_value());
  CHECK(FilesIn(WorkDir()) == 0);
}

TEST_CASE("run: cancellation stops the job with 503 and leaves nothing behind", "[variant-wf]") {
  auto resources = Resources();
  auto c = AdmitVariantCase(Request(Put(FreshKey("cancel"), TinyVcf())), *resources, kJobId, Tenant());
  REQUIRE(c.ok());
  std::atomic<bool> cancelled{false};
  GcScorer scorer;
  scorer.cancel_after_calls = 0;  // the first scoring call raises the flag
  scorer.flag = &cancelled;
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  auto run = RunVariantInterpretation(*c, *resources, scorer, context);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == ErrorCode::kServiceUnavailable);
  CHECK_FALSE(SharedS3().StoredObject("inputs", c->output.key).has_value());
  CHECK(FilesIn(WorkDir()) == 0);
}

TEST_CASE("run: a failed upload stores nothing and leaves nothing behind", "[variant-wf]") {
  // A store of its own, stopped while the job scores: the download is done, the upload cannot be.
  std::string why;
  std::optional<S3Server> store = S3Server::Start({"inputs"}, &why);
  if (!store) FAIL(why);
  s3::S3Config config = StoreConfig();
  config.endpoint = store->endpoint();
  auto resources = Resources(true, true, config);
  REQUIRE(store->PutObject("inputs", "cohort/upload.vcf", TinyVcf()) == 200);
  core::ValidatedVariant request = Request("s3://inputs/cohort/upload.vcf");
  request.window = 100;
  auto c = AdmitVariantCase(request, *resources, kJobId, Tenant());
  REQUIRE(c.ok());

  struct StoppingScorer : GcScorer {
    std::function<void()> on_first_call;
    StatusOr<std::vector<double>> Score(const std::vector<variant::ScoreRequest>& batch,
                                        const std::atomic<bool>* cancelled) override {
      if (on_first_call) std::exchange(on_first_call, nullptr)();
      return GcScorer::Score(batch, cancelled);
    }
  } scorer;
  scorer.on_first_call = [&] { store->Stop(); };
  std::atomic<bool> cancelled{false};
  core::JobContext context;
  context.call = core::CallContext{"req", kJobId, &cancelled};
  auto run = RunVariantInterpretation(*c, *resources, scorer, context);
  REQUIRE_FALSE(run.ok());
  INFO(run.status().ToString());
  CHECK(run.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(run.status().retry_after_seconds().has_value());
  CHECK_FALSE(store->StoredObject("inputs", c->output.key).has_value());
  CHECK(*store->StoredObject("inputs", "cohort/upload.vcf") == TinyVcf());
  CHECK(FilesIn(WorkDir()) == 0);
}

// ================================================================== the response body

TEST_CASE("render: data and meta exactly per the contract", "[variant-wf]") {
  VariantCase c;
  c.request = Request("s3://inputs/a/b.vcf");
  c.request.window = 250;
  c.request.client_ref = "ref-1";
  c.output.bucket = "inputs";
  c.output.key = "a/b.annotated.0f1e2d3c.vcf.gz";
  VariantRunResult result;
  result.output = c.output;
  auto& n = result.annotation.counts;
  n.variants_in = 10;
  n.annotated = 4;
  n.not_run = 6;
  n.annotated_alleles = 5;
  n.associations = 7;
  n.not_run_reasons = {{"OUTSIDE_TSS_WINDOW", 5}, {"NO_SUPPORTED_ALT", 1}, {"NO_TSS_ON_CONTIG", 0}};
  n.skipped_alleles = 2;
  n.reference_mismatches = 3;
  n.windows_scored = 99;
  variant::CatalogueInfo info;
  info.build = "GRCh37";
  info.md5 = "0123456789abcdef0123456789abcdef";
  info.start_sites = 623;
  info.transcripts = "gene-level RefSeq 5' ends (not MANE Select)";

  auto parse = [](const std::string& body) {
    rapidjson::Document d;
    d.Parse(body.c_str());
    REQUIRE_FALSE(d.HasParseError());
    return d;
  };
  auto keys = [](const rapidjson::Value& v) {
    std::vector<std::string> out;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) out.push_back(m->name.GetString());
    return out;
  };
  auto d = parse(RenderVariantJson(c, result, info, {kJobId, "req-9"}));
  CHECK(keys(d) == std::vector<std::string>{"data", "meta"});
  const auto& data = d["data"];
  CHECK(keys(data) == std::vector<std::string>{"task", "status", "output", "client_ref", "counts"});
  CHECK(std::string(data["task"].GetString()) == "genomic_variant_interpretation");
  CHECK(std::string(data["status"].GetString()) == "ok");
  CHECK(std::string(data["output"]["type"].GetString()) == "s3_object");
  CHECK(std::string(data["output"]["uri"].GetString()) ==
        "s3://inputs/a/b.annotated.0f1e2d3c.vcf.gz");
  CHECK(std::string(data["client_ref"].GetString()) == "ref-1");
  const auto& counts = data["counts"];
  CHECK(keys(counts) == std::vector<std::string>{"variants_in", "annotated", "not_run",
                                                 "annotated_alleles", "associations",
                                                 "not_run_reasons", "skipped_alleles"});
  CHECK(counts["annotated"].GetInt() + counts["not_run"].GetInt() ==
        counts["variants_in"].GetInt());
  CHECK(keys(counts["not_run_reasons"]) ==
        std::vector<std::string>{"NO_SUPPORTED_ALT", "OUTSIDE_TSS_WINDOW"});  // zeros omitted
  CHECK(counts["skipped_alleles"].GetInt() == 2);

  const auto& meta = d["meta"];
  CHECK(keys(meta) == std::vector<std::string>{"job_id", "request_id", "task", "genome_build",
                                               "input", "gene_annotation", "options_applied"});
  CHECK(std::string(meta["job_id"].GetString()) == kJobId);
  CHECK(std::string(meta["request_id"].GetString()) == "req-9");
  CHECK(std::string(meta["input"]["uri"].GetString()) == "s3://inputs/a/b.vcf");
  CHECK(std::string(meta["gene_annotation"]["md5"].GetString()) == info.md5);
  CHECK(meta["gene_annotation"]["start_sites"].GetInt() == 623);
  CHECK(std::string(meta["gene_annotation"]["transcripts"].GetString()) == info.transcripts);
  CHECK(meta["options_applied"]["window"].GetInt() == 250);
  CHECK(meta["options_applied"]["tissues"].Size() == 2);
  CHECK(meta["options_applied"]["genes"].IsNull());

  // A model that scored: meta.model; a panel: its ids; no client_ref: null.
  result.annotation.model = "expression-human";
  c.request.client_ref.reset();
  auto catalogue = variant::TssCatalogue::Load(Tiny().catalogue);
  c.panel = variant::ResolveGenePanel(*catalogue, {"geneb"}).value();
  auto scored = parse(RenderVariantJson(c, result, info, {kJobId, "req-9"}));
  CHECK(std::string(scored["meta"]["model"].GetString()) == "expression-human");
  CHECK(scored["data"]["client_ref"].IsNull());
  CHECK(std::string(scored["meta"]["options_applied"]["genes"][0].GetString()) ==
        "ENSG00000000002");
}

// ================================================================== the route

namespace {

const char* kAliceKey = "dns_alice-variant-key";
const char* kBobKey = "dns_bob-variant-key";
// Granted only s3://inputs/carol/ (read and write).
const char* kCarolKey = "dns_carol-variant-key";

// A gateway's pipeline and a runner in one process, meeting in a real redis-server as they do
// in production: the gateway queues, the runner admits and runs.
struct RouteHarness {
  std::optional<testing::RedisServer> redis = testing::RedisServer::Start();
  std::shared_ptr<core::RedisConnection> connection = Connect();
  std::unique_ptr<core::RedisJobStore> jobs = std::make_unique<core::RedisJobStore>(connection);
  std::unique_ptr<core::RedisJobQueue> queue = std::make_unique<core::RedisJobQueue>(connection);
  core::ManualClock clock;
  core::InMemoryQuotaStore quotas{&clock};
  FakeExpressionBackend backend;
  ExpressionCatalogue catalogue;
  core::Executor executor{4, 32};
  JobRunner runner{jobs.get(), &executor};
  JobWaiter waiter{jobs.get(), queue.get()};
  DocsHandler docs{"/nonexistent"};
  std::unique_ptr<KeyStore> keys;
  std::unique_ptr<VariantResources> resources = Resources();
  std::unique_ptr<runner::QueueRunner> job_runner;
  std::unique_ptr<RequestPipeline> pipeline;
  int counter = 0;

  std::shared_ptr<core::RedisConnection> Connect() {
    REQUIRE(redis.has_value());
    auto c = core::RedisConnection::Create(redis->url());
    REQUIRE(c.ok());
    return *c;
  }

  // Without `start_runner` no runner answers admissions: what the gateway does not refuse by
  // itself waits for a verdict that never comes.
  explicit RouteHarness(bool start_runner = true) {
    backend.delay_ms = 0;
    const testing::S3KeyGrants inputs{{"s3://inputs/"}, {"s3://inputs/"}};
    const testing::S3KeyGrants carol{{"s3://inputs/carol/"}, {"s3://inputs/carol/"}};
    keys = testing::KeyStoreOf({testing::KeyEntry(kAliceKey, "alice", true, 6000, 8, inputs),
                                testing::KeyEntry(kBobKey, "bob", true, 6000, 8, inputs),
                                testing::KeyEntry(kCarolKey, "carol", true, 6000, 8, carol)});
    GatewayServices s;
    s.keys = keys.get();
    s.quotas = &quotas;
    s.jobs = jobs.get();
    s.backend = &backend;
    s.catalogue = &catalogue;
    s.docs = &docs;
    s.runner = &runner;
    s.executor = &executor;
    s.queue = queue.get();
    s.waiter = &waiter;
    pipeline = std::make_unique<RequestPipeline>(s, BuildRoutes(s));
    runner::JobServices services;
    services.backend = &backend;
    services.catalogue = &catalogue;
    services.executor = &executor;
    services.variant = resources.get();
    runner::QueueRunnerOptions options;
    options.consumer = "test-runner";
    options.poll_interval = std::chrono::milliseconds(10);
    job_runner = std::make_unique<runner::QueueRunner>(queue.get(), jobs.get(), &quotas, services,
                                                       options);
    runner.Start();
    waiter.Start();
    if (start_runner) job_runner->Start();
    runner_started = start_runner;
  }
  bool runner_started = false;
  ~RouteHarness() {
    if (runner_started) job_runner->Stop();
    waiter.Stop();
    runner.Stop();
    executor.Shutdown();
  }

  HttpResponse Call(const std::string& method, const std::string& path, const std::string& key,
                    const std::string& body = "", bool async = true) {
    HttpRequest req;
    req.method = method;
    req.path = path;
    req.headers["authorization"] = std::string("Bearer ") + key;
    if (async) req.headers["prefer"] = "respond-async";
    req.body = body;
    req.request_id = "req-" + std::to_string(++counter);
    req.peer_ip = "10.0.0.1";
    return testing::CallPipeline(*pipeline, std::move(req), std::chrono::seconds(30));
  }

  std::string Submit(const std::string& body, const std::string& key = kAliceKey) {
    auto r = Call("POST", "/v1/workflows/genomic-variant-interpretation", key, body);
    INFO(r.body);
    REQUIRE(r.status == 202);
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    return d["data"]["job_id"].GetString();
  }

  HttpResponse Wait(const std::string& job_id, const std::string& key = kAliceKey) {
    for (int i = 0; i < 600; ++i) {
      auto r = Call("GET", "/v1/tasks/jobs/" + job_id, key);
      if (r.status != 202) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL("job " << job_id << " did not finish");
    return {};
  }
};

std::string RouteBody(const std::string& uri, const std::string& extra = "") {
  return R"({"input":{"type":"s3_object","uri":")" + uri +
         R"("},"options":{"genome_build":"GRCh37","window":200,"tissues":["heart"]})" + extra + "}";
}

}  // namespace

TEST_CASE("route: Prefer: respond-async is required, then the job runs to completion",
          "[variant-wf]") {
  RouteHarness h;
  const std::string uri = Put(FreshKey("route"), TinyVcf());
  auto sync = h.Call("POST", "/v1/workflows/genomic-variant-interpretation", kAliceKey,
                     RouteBody(uri), /*async=*/false);
  CHECK(sync.status == 400);
  CHECK_THAT(sync.body, Catch::Contains("respond-async"));
  auto unprocessable = h.Call("POST", "/v1/workflows/genomic-variant-interpretation", kAliceKey,
                              RouteBody(uri, R"(,"extra":1)"));
  CHECK(unprocessable.status == 422);
  auto bad_uri = h.Call("POST", "/v1/workflows/genomic-variant-interpretation", kAliceKey,
                        RouteBody("s3://inputs/" + FreshKey("absent")));
  CHECK(bad_uri.status == 400);
  CHECK(h.backend.calls == 0);

  const std::string job = h.Submit(RouteBody(uri, R"(,"client_ref":"r1")"));
  auto done = h.Wait(job);
  INFO(done.body);
  REQUIRE(done.status == 200);
  rapidjson::Document d;
  d.Parse(done.body.c_str());
  CHECK(std::string(d["meta"]["job_id"].GetString()) == job);
  CHECK(std::string(d["data"]["client_ref"].GetString()) == "r1");
  CHECK(std::string(d["meta"]["model"].GetString()) == "expression-test");
  CHECK(d["data"]["counts"]["variants_in"].GetInt() == 5);
  const std::string output = d["data"]["output"]["uri"].GetString();
  CHECK_THAT(output, Catch::EndsWith(".annotated." + job.substr(0, 8) + ".vcf.gz"));
  CHECK(SharedS3()
            .StoredObject("inputs", output.substr(std::string("s3://inputs/").size()))
            .has_value());
  CHECK(h.backend.calls > 0);

  // Another client cannot see it.
  CHECK(h.Call("GET", "/v1/tasks/jobs/" + job, kBobKey).status == 404);
}

TEST_CASE("route: the same case returns the same job, a failed one and a new ETag re-run",
          "[variant-wf]") {
  RouteHarness h;
  const std::string key = FreshKey("identity");
  const std::string uri = Put(key, TinyVcf());
  const std::string first = h.Submit(RouteBody(uri));
  REQUIRE(h.Wait(first).status == 200);
  const int calls = h.backend.calls;
  CHECK(h.Submit(RouteBody(uri)) == first);
  CHECK(h.backend.calls == calls);  // no second run
  // client_ref, options and the caller take part.
  const std::string other_ref = h.Submit(RouteBody(uri, R"(,"client_ref":"again")"));
  CHECK(other_ref != first);
  const std::string other_client = h.Submit(RouteBody(uri), kBobKey);
  CHECK(other_client != first);
  // Both run to the end before the backend is made to fail below (and before the work directory
  // is checked for leftovers): they are new jobs of their own.
  CHECK(h.Wait(other_ref).status == 200);
  CHECK(h.Wait(other_client, kBobKey).status == 200);

  // A replaced object is a new job.
  Put(key, TinyVcf() + "20\t10080\tz\t" + std::string(1, Tiny().At(10080)) + "\tT\t.\tPASS\t.\n");
  const std::string replaced = h.Submit(RouteBody(uri));
  CHECK(replaced != first);
  REQUIRE(h.Wait(replaced).status == 200);

  // A job that failed (the worker was down) runs again on resubmission.
  const std::string fail_key = FreshKey("fails");
  const std::string fail_uri = Put(fail_key, TinyVcf());
  h.backend.fail_with = Unavailable("no expression worker is reachable");
  h.backend.fail_on = "heart";
  const std::string failed = h.Submit(RouteBody(fail_uri));
  auto failed_poll = h.Wait(failed);
  CHECK(failed_poll.status == 503);
  CHECK(FilesIn(WorkDir()) == 0);
  CHECK_FALSE(SharedS3()
                  .StoredObject("inputs", fail_key.substr(0, fail_key.size() - 4) + ".annotated." +
                                              failed.substr(0, 8) + ".vcf.gz")
                  .has_value());
  h.backend.fail_with = Status::Ok();
  const std::string rerun = h.Submit(RouteBody(fail_uri));
  CHECK(rerun != failed);
  CHECK(h.Wait(rerun).status == 200);
}

TEST_CASE("route: the gateway refuses an object outside the caller's grants by itself",
          "[variant-wf][grants]") {
  RouteHarness h(/*start_runner=*/false);  // a queued admission would wait 60 s, then 503
  const std::string theirs = Put(FreshKey("not-carols"), TinyVcf());
  const std::string path = "/v1/workflows/genomic-variant-interpretation";
  const auto started = std::chrono::steady_clock::now();
  auto refused = h.Call("POST", path, kCarolKey, RouteBody(theirs));
  auto absent = h.Call("POST", path, kCarolKey, RouteBody("s3://inputs/carol-x/absent.vcf"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  INFO(refused.body);
  CHECK(refused.status == 400);
  CHECK_THAT(refused.body, Catch::Contains(S3ObjectUnreadable(theirs).message()));
  CHECK(absent.status == 400);
  CHECK_THAT(absent.body,
             Catch::Contains(S3ObjectUnreadable("s3://inputs/carol-x/absent.vcf").message()));
  // The form is still checked first, in the runner's words.
  auto malformed = h.Call("POST", path, kCarolKey, RouteBody("s3://Inputs/carol/x.vcf"));
  CHECK(malformed.status == 400);
  CHECK_THAT(malformed.body, Catch::Contains("not a valid S3 bucket name"));
  CHECK(h.backend.calls == 0);
}

TEST_CASE("grants: a queued job is built only with the grants its gateway queued it with",
          "[variant-wf][grants]") {
  // A store nobody listens on: a 400 (not a 503) means no request was made.
  s3::S3Config closed = StoreConfig();
  closed.endpoint = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  auto unreachable = Resources(true, true, closed);
  runner::JobServices services;
  services.variant = unreachable.get();
  core::QueuedJob queued;
  queued.job_id = kJobId;
  queued.client_id = "alice";
  queued.kind = "variant";
  const std::string uri = "s3://inputs/alice/x.vcf";
  auto validated = core::ValidateVariantBody(RouteBody(uri));
  REQUIRE(validated.ok());
  queued.command = core::VariantCommandFor(*validated).SerializeAsString();
  // No grants travelled with it (an older gateway, a damaged entry): nothing is read.
  auto bare = runner::BuildJob(queued, services);
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.status().message() == S3ObjectUnreadable(uri).message());
  // Grants that do not cover it, or cover reading only.
  queued.facts[std::string(kS3ReadFact)] = "s3://inputs/alice-other/";
  queued.facts[std::string(kS3WriteFact)] = "s3://inputs/alice/";
  CHECK(runner::BuildJob(queued, services).status().message() ==
        S3ObjectUnreadable(uri).message());
  queued.facts[std::string(kS3ReadFact)] = "s3://inputs/alice/";
  queued.facts[std::string(kS3WriteFact)] = "s3://inputs/alice/out/";
  CHECK(runner::BuildJob(queued, services).status().message() ==
        S3PrefixUnwritable("s3://inputs/alice/").message());
  // Covering grants: the runner goes to the store (down here: 503).
  queued.facts[std::string(kS3WriteFact)] = "s3://other-bkt/\ns3://inputs/alice/";
  CHECK(runner::BuildJob(queued, services).status().code() == ErrorCode::kServiceUnavailable);
}
