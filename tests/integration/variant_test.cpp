// The genomic-variant-interpretation workflow end to end, over real HTTP: a gateway configured
// with the default chr20 catalogue (scripts/build-catalogue, Debian packages), the real
// SigV4-checking S3 server on a free loopback port, the real expression worker (bundled tiny
// model) and the real Redis of the integration service. VCFs: one the test builds on chr20
// around catalogue start sites, vt's chr20 indels and the 1000 Genomes chr22 file (Debian
// packages vt-examples and r-bioc-variantannotation). Outputs are read back with bcftools.
// Tests needing the Debian packages skip with a message when they cannot be had.
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "common/digest.h"
#include "gateway/auth/key_store.h"
#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/s3_server.h"
#include "tests/support/variant_data.h"
#include "tests/support/test_files.h"

using namespace dnaserve::testing;

namespace {

const std::string kPath = "/v1/workflows/genomic-variant-interpretation";
const std::string kBucket = "cohort-data";
// Two tenants of one object store: tenant A (its own bucket, and its own store credentials on
// the runner) and a hostile Eve, granted her own bucket and a neighbouring prefix of A's.
const std::string kTenantBucket = "tenant-a-data";
const std::string kEveBucket = "tenant-eve-data";
const std::string kTenantAccessKey = "AKIDTENANTAOWN";
const std::string kTenantSecretKey = "tenant-a/own+Secret";

// Keys of this service's own clients (its keys file adds them to the integration service's
// alice and bob, who may use the whole cohort-data bucket).
struct TenantKeys {
  std::string tenant_a = dnaserve::gateway::GenerateApiKey();  // s3://tenant-a-data/ r/w
  std::string eve = dnaserve::gateway::GenerateApiKey();       // her bucket + inputs-eve/ of A's
  std::string reader = dnaserve::gateway::GenerateApiKey();    // reads A's inputs/, writes nothing
};

struct Site {
  std::string symbol, gene_id;
  int64_t tss = 0;  // 1-based
  char strand = '+';
};

// A second gateway of the integration service (same Redis, workers and keys) with the variant
// workflow set up, and the S3 server it talks to. One per test process.
struct VariantService {
  Service* svc = nullptr;
  std::optional<S3Server> s3;
  BuiltCatalogue built;
  std::vector<Site> sites;
  std::unique_ptr<dnaserve::variant::ReferenceGenome> reference;
  std::string dir;
  std::string work_dir;  // the runner's scratch directory
  std::string base;
  LaunchedGateway gateway;
  ChildProcess runner;
  TenantKeys tenants;
  std::string keys_file() const { return dir + "/keys.json"; }
  // This workflow's gateway and runners keep jobs and queue in a Redis database of their own:
  // the integration service's runner has no object store, and must not take these jobs.
  std::string redis_url() const { return svc->redis_url() + "/1"; }

  HttpResult Post(const std::string& body, const std::string& key, bool async = true) const {
    std::vector<std::string> headers = {"Authorization: Bearer " + key,
                                        "Content-Type: application/json"};
    if (async) headers.push_back("Prefer: respond-async");
    return GatewayRequest("POST", base, kPath, headers, body, 120);
  }
  HttpResult Get(const std::string& path, const std::string& key) const {
    return GatewayRequest("GET", base, path, {"Authorization: Bearer " + key});
  }
  // The job's final answer (anything but 202), polling every 100 ms for up to 10 minutes.
  HttpResult Poll(const std::string& job_id, const std::string& key,
                  std::vector<std::string>* messages = nullptr) const {
    HttpResult r;
    for (int i = 0; i < 6000; ++i) {
      r = Get("/v1/tasks/jobs/" + job_id, key);
      if (r.status != 202) return r;
      if (messages) {
        auto doc = ParseJson(r.body);
        messages->push_back((*doc)["data"]["progress"]["message"].GetString());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
  }
  std::string Upload(const std::string& key, const std::string& bytes) const {
    REQUIRE(s3->PutObject(kBucket, key, bytes) == 200);
    return "s3://" + kBucket + "/" + key;
  }
  // Starts a runner of this service with the variant workflow set up, its scratch directory
  // `work_dir`, its log <dir>/<name>.log, and `extra` settings.
  bool StartVariantRunner(ChildProcess* process, const std::string& work_dir,
                          const std::string& name,
                          const std::map<std::string, std::string>& extra = {}) const {
    std::map<std::string, std::string> env = {
        {"DNASERVE_S3_ENDPOINT", s3->endpoint()},
        {"DNASERVE_S3_REGION", S3Server::kRegion},
        {"DNASERVE_S3_ACCESS_KEY_ID", S3Server::kAccessKey},
        {"DNASERVE_S3_SECRET_ACCESS_KEY_FILE", dir + "/s3-secret"},
        {"DNASERVE_GRCH37_CATALOGUE", built.catalogue},
        {"DNASERVE_GRCH37_FASTA", built.fasta},
        {"DNASERVE_VARIANT_WORK_DIR", work_dir},
        {"DNASERVE_S3_CLIENT_CREDENTIALS_FILE", dir + "/s3-client-credentials.json"}};
    for (const auto& [k, value] : extra) env[k] = value;
    return StartRunner(process, redis_url(), svc->workers_spec(), dir + "/" + name + ".log", env);
  }
  // Starts this service's gateway, its log <dir>/<name>.log; waits until it knows the
  // expression roster. Its base URL, or nullopt with the reason.
  std::optional<std::string> StartGateway(LaunchedGateway* process, const std::string& name,
                                          std::string* why) const {
    const std::string log = dir + "/" + name + ".log";
    GatewayLaunch launch = svc->AnotherGateway(log);
    launch.keys_file = keys_file();
    launch.redis_url = redis_url();
    process->Start(std::move(launch));
    if (!process->WaitUntilListening(std::chrono::seconds(30))) {
      *why = "the variant gateway did not start; see " + log;
      return std::nullopt;
    }
    const std::string url = process->base_url();
    for (int i = 0; i < 300; ++i) {
      auto models = HttpRequest("GET", url + "/v1/tasks/expression/models",
                                {"Authorization: Bearer " + svc->keys().alice}, "");
      if (models.status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return url;
  }
  char RefBase(int64_t pos1) const {
    auto base = reference->Fetch("20", pos1 - 1, pos1);
    REQUIRE(base.ok());
    return (*base)[0];
  }
};

VariantService* GetVariantService(std::string* skip) {
  static std::string reason;
  static VariantService* instance = []() -> VariantService* {
    std::string failure;
    Service* svc = Service::Get(&failure);
    if (svc == nullptr) {
      reason = "the integration service did not start: " + failure;
      return nullptr;
    }
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto v = std::make_unique<VariantService>();
    v->svc = svc;
    v->built = *built;
    v->s3 = S3Server::Start({kBucket, kTenantBucket, kEveBucket}, &reason,
                            {{kTenantAccessKey, kTenantSecretKey}});
    if (!v->s3) return nullptr;
    auto reference = dnaserve::variant::ReferenceGenome::Open(v->built.fasta);
    if (!reference.ok()) {
      reason = reference.status().message();
      return nullptr;
    }
    v->reference = std::move(reference).value();
    std::istringstream lines(ReadFile(v->built.catalogue));
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream f(line);
      std::string contig, tss, strand, symbol, gene_id;
      f >> contig >> tss >> strand >> symbol >> gene_id;
      v->sites.push_back({symbol, gene_id, std::stoll(tss), strand[0]});
    }
    v->dir = MakeTempDir("dnaserve-variant-it");
    WriteFile(v->dir + "/s3-secret", std::string(S3Server::kSecretKey) + "\n");
    const std::string cohort = "s3://" + kBucket + "/";
    const std::string tenant = "s3://" + kTenantBucket + "/";
    const TestKeys& k = svc->keys();
    WriteFile(v->keys_file(),
              "{\"keys\": [" + KeyEntry(k.alice, "alice", true, 6000, 8, {{cohort}, {cohort}}) +
                  "," + KeyEntry(k.bob, "bob", true, 6000, 8, {{cohort}, {cohort}}) + "," +
                  KeyEntry(v->tenants.tenant_a, "tenant-a", true, 6000, 8, {{tenant}, {tenant}}) +
                  "," +
                  KeyEntry(v->tenants.eve, "eve", true, 6000, 8,
                           {{"s3://" + kEveBucket + "/", tenant + "inputs-eve/"},
                            {"s3://" + kEveBucket + "/"}}) +
                  "," +
                  KeyEntry(v->tenants.reader, "reader", true, 6000, 8, {{tenant + "inputs/"}, {}}) +
                  "]}");
    // Tenant A's requests are signed with its own key pair (the server accepts both).
    WriteFile(v->dir + "/s3-client-credentials.json",
              "{\"tenant-a\": {\"access_key_id\": \"" + kTenantAccessKey +
                  "\", \"secret_access_key\": \"" + kTenantSecretKey + "\"}}");
    std::filesystem::permissions(v->dir + "/s3-client-credentials.json",
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace);
    v->work_dir = v->dir + "/work";
    std::filesystem::create_directories(v->work_dir);
    if (!v->StartVariantRunner(&v->runner, v->work_dir, "runner")) {
      reason = "the variant runner did not start; see " + v->dir + "/runner.log";
      return nullptr;
    }
    auto base = v->StartGateway(&v->gateway, "gateway", &reason);
    if (!base) return nullptr;
    v->base = *base;
    // Stopped at exit, before the integration service (atexit runs in reverse order).
    std::atexit([] { delete instance; });
    return v.release();
  }();
  if (!instance) *skip = reason;
  return instance;
}

// Skips the test case (with the reason) when the Debian data or the service are unavailable.
#define VARIANT_SERVICE_OR_SKIP(var)                    \
  std::string var##_skip;                               \
  VariantService* var = GetVariantService(&var##_skip); \
  if (var == nullptr) {                                 \
    WARN("skipped: " << var##_skip);                    \
    return;                                             \
  }

std::string Body(const std::string& uri, const std::string& options = "",
                 const std::string& extra = "") {
  return R"({"input": {"type": "s3_object", "uri": ")" + uri +
         R"("}, "options": {"genome_build": "GRCh37")" + options + "}" + extra + "}";
}

std::string JobId(const HttpResult& r) {
  INFO(r.body);
  REQUIRE(r.status == 202);
  auto doc = ParseJson(r.body);
  return (*doc)["data"]["job_id"].GetString();
}

std::string Code(const HttpResult& r) {
  auto doc = ParseJson(r.body);
  REQUIRE(doc->HasMember("error"));
  return (*doc)["error"]["code"].GetString();
}

std::string Message(const HttpResult& r) {
  return (*ParseJson(r.body))["error"]["message"].GetString();
}

std::string Bcftools(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/bcftools"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  INFO("bcftools " << args.front());
  REQUIRE(RunCommand(argv, &out, {}, /*drop_stderr=*/true) == 0);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string Bgzip(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  WriteFile(path, text);
  std::string out;
  REQUIRE(RunCommand({"/usr/bin/bgzip", "-f", path}, &out) == 0);
  return ReadFile(path + ".gz");
}

// The output object of a completed job, saved to a file for bcftools.
std::string SaveOutput(const VariantService& v, const rapidjson::Document& done,
                       const std::string& name) {
  const std::string uri = done["data"]["output"]["uri"].GetString();
  const std::string prefix = "s3://" + kBucket + "/";
  REQUIRE(uri.rfind(prefix, 0) == 0);
  auto stored = v.s3->StoredObject(kBucket, uri.substr(prefix.size()));
  REQUIRE(stored.has_value());
  const std::string path = v.dir + "/" + name;
  WriteFile(path, *stored);
  return path;
}

// Records (not header lines) in a VCF's text.
size_t RecordCount(const std::string& vcf_text) {
  size_t n = 0;
  for (const auto& line : Lines(vcf_text)) n += !line.empty() && line[0] != '#';
  return n;
}

// The counts invariants of a completed response.
void CheckCountsInvariants(const rapidjson::Value& counts) {
  const int64_t in = counts["variants_in"].GetInt64();
  CHECK(counts["annotated"].GetInt64() + counts["not_run"].GetInt64() == in);
  int64_t reasons = 0;
  for (auto m = counts["not_run_reasons"].MemberBegin(); m != counts["not_run_reasons"].MemberEnd();
       ++m) {
    CHECK(m->value.GetInt64() > 0);
    reasons += m->value.GetInt64();
  }
  CHECK(reasons == counts["not_run"].GetInt64());
  CHECK(counts["annotated_alleles"].GetInt64() >= counts["annotated"].GetInt64());
  CHECK(counts["associations"].GetInt64() >= counts["annotated_alleles"].GetInt64());
}

// A chr20 VCF around real catalogue start sites, written by the test. Returns the text and, by
// record ID, what the output must say about it.
struct BuiltVcf {
  std::string text;
  std::map<std::string, std::string> expect;  // id -> "ANN:<symbol>" or the not-run reason
};

BuiltVcf BuildChr20Vcf(const VariantService& v) {
  // Start sites with no other start site within 10 kb, so each record has exactly one gene.
  std::vector<Site> lonely;
  for (size_t i = 0; i < v.sites.size() && lonely.size() < 4; ++i) {
    bool alone = true;
    for (size_t j = 0; j < v.sites.size(); ++j) {
      if (j != i && std::llabs(v.sites[j].tss - v.sites[i].tss) < 10000) alone = false;
    }
    if (alone && v.sites[i].tss > 20000) lonely.push_back(v.sites[i]);
  }
  REQUIRE(lonely.size() == 4);
  // A position more than 5 kb from every start site.
  int64_t far = 0;
  for (size_t i = 0; i + 1 < v.sites.size() && far == 0; ++i) {
    if (v.sites[i + 1].tss - v.sites[i].tss > 20000) far = v.sites[i].tss + 10000;
  }
  REQUIRE(far > 0);
  auto other = [](char b) { return b == 'A' ? 'G' : 'A'; };

  BuiltVcf vcf;
  std::ostringstream t;
  t << "##fileformat=VCFv4.2\n"
       "##source=dnaserve integration test\n"
       "##contig=<ID=20,length=63025520>\n"
       "##contig=<ID=21,length=48129895>\n"
       "##ALT=<ID=DEL,Description=\"Deletion\">\n"
       "##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Depth\">\n"
       "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n"
       "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\tS2\n";
  auto record = [&](int64_t pos, const std::string& id, const std::string& ref,
                    const std::string& alt, const std::string& expect) {
    t << "20\t" << pos << "\t" << id << "\t" << ref << "\t" << alt
      << "\t50\tPASS\tDP=12\tGT\t0/1\t0/0\n";
    vcf.expect[id] = expect;
  };
  // SNVs 40 bp downstream and 300 bp upstream (gene sense) of two start sites.
  for (int k = 0; k < 2; ++k) {
    const Site& s = lonely[k];
    const int64_t down = s.strand == '+' ? s.tss + 40 : s.tss - 40;
    const int64_t up = s.strand == '+' ? s.tss - 300 : s.tss + 300;
    for (auto [pos, id] : {std::pair{std::min(up, down), "snv" + std::to_string(k) + "a"},
                           std::pair{std::max(up, down), "snv" + std::to_string(k) + "b"}}) {
      const char ref = v.RefBase(pos);
      record(pos, id, std::string(1, ref), std::string(1, other(ref)), "ANN:" + s.symbol);
    }
  }
  // A deletion over the third TSS and a multi-allelic record with a symbolic allele near the
  // fourth: annotated, the symbolic allele listed in GEX_SKIPPED_ALT.
  {
    const Site& s = lonely[2];
    std::string ref;
    for (int64_t p = s.tss - 2; p <= s.tss + 2; ++p) ref.push_back(v.RefBase(p));
    record(s.tss - 2, "del", ref, ref.substr(0, 1), "ANN:" + s.symbol);
    const Site& m = lonely[3];
    const char base = v.RefBase(m.tss + 100);
    record(m.tss + 100, "multi", std::string(1, base), std::string(1, other(base)) + ",<DEL>",
           "ANN:" + m.symbol);
    const char sym = v.RefBase(m.tss + 200);
    record(m.tss + 200, "symbolic", std::string(1, sym), "<DEL>", "NO_SUPPORTED_ALT");
  }
  const char far_ref = v.RefBase(far);
  record(far, "far", std::string(1, far_ref), std::string(1, other(far_ref)), "OUTSIDE_TSS_WINDOW");
  t << "21\t9411300\tchr21\tC\tT\t50\tPASS\tDP=3\tGT\t0/1\t0/0\n";
  vcf.expect["chr21"] = "NO_TSS_ON_CONTIG";
  vcf.text = t.str();
  return vcf;
}

const Site* FindSite(const VariantService& v, const std::string& symbol) {
  for (const auto& s : v.sites) {
    if (s.symbol == symbol) return &s;
  }
  return nullptr;
}

// A file of a Debian package uploaded as `key` and run through the workflow with the default
// options; nullopt (the caller returns) with a "skipped" warning when the package cannot be had.
// The job must complete, its counts hold their invariants and the input stays as uploaded.
struct DebianRun {
  std::string path;  // the file, locally
  std::shared_ptr<rapidjson::Document> doc;
};
std::optional<DebianRun> RunDebianVcf(const VariantService& v, const std::string& package,
                                      const std::string& member, const std::string& key) {
  std::string why;
  auto path = DebianPackageFile(package, member, &why);
  if (!path) {
    WARN("skipped: " << why);
    return std::nullopt;
  }
  const std::string bytes = ReadFile(*path);
  const std::string alice = v.svc->keys().alice;
  auto done = v.Poll(JobId(v.Post(Body(v.Upload(key, bytes)), alice)), alice);
  INFO(done.body);
  REQUIRE(done.status == 200);
  DebianRun run{*path, ParseJson(done.body)};
  CheckCountsInvariants((*run.doc)["data"]["counts"]);
  CHECK(*v.s3->StoredObject(kBucket, key) == bytes);
  return run;
}

}  // namespace

TEST_CASE("variant workflow: a chr20 VCF is annotated end to end and written beside the input",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  BuiltVcf vcf = BuildChr20Vcf(*v);
  const std::string bytes = Bgzip(v->dir, "chr20-test.vcf", vcf.text);
  const std::string uri = v->Upload("runs/2026/chr20-test.vcf.gz", bytes);

  // Asynchronous only.
  auto sync = v->Post(Body(uri), alice, /*async=*/false);
  CHECK(sync.status == 400);
  CHECK(Code(sync) == "bad_request");

  auto submitted =
      v->Post(Body(uri, R"(, "tissues": ["heart", "liver"])", R"(, "client_ref": "it-1")"), alice);
  const std::string job = JobId(submitted);
  CHECK(*submitted.Header("x-job-id") == job);
  CHECK(*submitted.Header("content-location") == "/v1/tasks/jobs/" + job);
  CHECK(submitted.Header("x-request-id").has_value());
  CHECK(submitted.Header("ratelimit-limit").has_value());
  {
    // The submit envelope: data {job_id, status, links.result}, meta {job_id, task, mode}.
    auto accepted = ParseJson(submitted.body);
    CHECK(std::string((*accepted)["data"]["status"].GetString()) == "accepted");
    CHECK(std::string((*accepted)["data"]["links"]["result"].GetString()) ==
          "/v1/tasks/jobs/" + job);
    CHECK(std::string((*accepted)["meta"]["job_id"].GetString()) == job);
    CHECK(std::string((*accepted)["meta"]["task"].GetString()) == "genomic_variant_interpretation");
    CHECK(std::string((*accepted)["meta"]["mode"].GetString()) == "async");
  }
  std::vector<std::string> messages;
  auto done = v->Poll(job, alice, &messages);
  INFO(done.body);
  REQUIRE(done.status == 200);
  auto doc = ParseJson(done.body);
  const auto& data = (*doc)["data"];
  const auto& meta = (*doc)["meta"];

  // data
  CHECK(std::string(data["task"].GetString()) == "genomic_variant_interpretation");
  CHECK(std::string(data["status"].GetString()) == "ok");
  CHECK(std::string(data["client_ref"].GetString()) == "it-1");
  CHECK(std::string(data["output"]["type"].GetString()) == "s3_object");
  CHECK(std::string(data["output"]["uri"].GetString()) ==
        "s3://" + kBucket + "/runs/2026/chr20-test.annotated." + job.substr(0, 8) + ".vcf.gz");
  const auto& counts = data["counts"];
  CheckCountsInvariants(counts);
  CHECK(counts["variants_in"].GetInt64() == static_cast<int64_t>(vcf.expect.size()));
  CHECK(counts["annotated"].GetInt64() == 6);
  CHECK(counts["annotated_alleles"].GetInt64() == 6);
  CHECK(counts["associations"].GetInt64() == 6);
  CHECK(counts["skipped_alleles"].GetInt64() == 2);
  CHECK(counts["not_run_reasons"]["OUTSIDE_TSS_WINDOW"].GetInt64() == 1);
  CHECK(counts["not_run_reasons"]["NO_TSS_ON_CONTIG"].GetInt64() == 1);
  CHECK(counts["not_run_reasons"]["NO_SUPPORTED_ALT"].GetInt64() == 1);

  // meta
  CHECK(std::string(meta["job_id"].GetString()) == job);
  CHECK(std::string(meta["task"].GetString()) == "genomic_variant_interpretation");
  CHECK(std::string(meta["genome_build"].GetString()) == "GRCh37");
  CHECK(std::string(meta["input"]["uri"].GetString()) == uri);
  CHECK(std::string(meta["input"]["type"].GetString()) == "s3_object");
  const std::string catalogue = ReadFile(v->built.catalogue);
  CHECK(std::string(meta["gene_annotation"]["md5"].GetString()) ==
        dnaserve::HexDigest(dnaserve::DigestAlgorithm::kMd5, catalogue));
  CHECK(meta["gene_annotation"]["start_sites"].GetInt64() == static_cast<int64_t>(v->sites.size()));
  CHECK(std::string(meta["gene_annotation"]["build"].GetString()) == "GRCh37");
  const std::string transcripts = meta["gene_annotation"]["transcripts"].GetString();
  CHECK(catalogue.find("##transcripts=" + transcripts + "\n") != std::string::npos);
  CHECK(transcripts.find("not MANE Select") != std::string::npos);
  CHECK(meta["options_applied"]["window"].GetInt64() == 5000);
  CHECK(meta["options_applied"]["tissues"].Size() == 2);
  CHECK(meta["options_applied"]["genes"].IsNull());
  // A model scored, so meta.model names it, and so does ##GEXModel.
  auto models = ParseJson(v->Get("/v1/tasks/expression/models", alice).body);
  const std::string model = (*models)["default_model"].GetString();
  REQUIRE(meta.HasMember("model"));
  CHECK(std::string(meta["model"].GetString()) == model);

  // Progress was reported with the phases' messages.
  bool scoring_seen = false;
  for (const auto& m : messages)
    scoring_seen |=
        m.rfind("scoring", 0) == 0 || m.rfind("checking", 0) == 0 || m.rfind("downloading", 0) == 0;
  INFO("messages seen: " << messages.size());
  if (!messages.empty()) CHECK(scoring_seen);

  // The output: bgzip VCF readable by bcftools, every record in order, the GEX_* fields.
  const std::string out = SaveOutput(*v, *doc, "chr20-test.annotated.vcf.gz");
  CHECK(ReadFile(out).substr(0, 2) == "\x1f\x8b");
  const std::string header = Bcftools({"view", "-h", out});
  for (std::string line :
       {"##INFO=<ID=GEX_ANN,", "##INFO=<ID=GEX_NOT_RUN,", "##INFO=<ID=GEX_NOT_RUN_REASON,",
        "##INFO=<ID=GEX_SKIPPED_ALT,", "##GEXDistanceConvention=", "##GEXWindow=5000",
        "##GEXRequestedGenes=ALL",
        "##GEXAnnotationRelease=", "##GEXModel=", "##source=dnaserve integration test"}) {
    INFO(line);
    CHECK(header.find(line) != std::string::npos);
  }
  CHECK(header.find(model) != std::string::npos);
  // One line per tissue naming the training context its description matched.
  CHECK(header.find("##dnaserve_description_match=<Tissue=1,Description=\"heart\",Matched=true,"
                    "Context=") != std::string::npos);
  CHECK(header.find("##dnaserve_description_match=<Tissue=2,Description=\"liver\",Matched=true,"
                    "Context=E066,Name=\"Liver\",Similarity=1.0000>") != std::string::npos);
  const auto rows = Lines(Bcftools({"query", "-f",
                                    "%ID\t%INFO/GEX_ANN\t%INFO/GEX_NOT_RUN_REASON\t%INFO/"
                                    "GEX_SKIPPED_ALT\t[%GT,]\n",
                                    out}));
  REQUIRE(rows.size() == vcf.expect.size());
  std::vector<std::string> ids_in_order;
  for (const auto& line : Lines(vcf.text)) {
    if (!line.empty() && line[0] != '#') ids_in_order.push_back(Split(line, '\t')[2]);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto f = Split(rows[i], '\t');
    REQUIRE(f.size() == 5);
    CAPTURE(rows[i]);
    CHECK(f[0] == ids_in_order[i]);  // in order
    CHECK(f[4] == "0/1,0/0,");       // samples kept
    const std::string& want = vcf.expect[f[0]];
    if (want.rfind("ANN:", 0) == 0) {
      CHECK(f[2] == ".");
      const auto entry = Split(Split(f[1], ',')[0], '|');
      REQUIRE(entry.size() == 10);  // 7 fields, 2 tissues, Consequence
      CHECK(entry[1] == want.substr(4));
      const Site* site = FindSite(*v, entry[1]);
      REQUIRE(site != nullptr);
      CHECK(entry[2] == site->gene_id);
      CHECK(entry[3] == ".");
      CHECK(entry[4] == std::to_string(site->tss));
      CHECK(entry[5] == std::string(1, site->strand));
      if (f[0].back() == 'a' || f[0].back() == 'b') {
        // Upstream (gene sense) is negative: the 300 bp one is -300, the 40 bp one +40.
        const int64_t distance = std::stoll(entry[6]);
        CHECK((distance == 40 || distance == -300));
      }
      CHECK(entry[9] == (std::stoll(entry[6]) < 0 ? "upstream_gene_variant" : "sequence_variant"));
      for (size_t t = 7; t < 9; ++t) CHECK(std::isfinite(std::stod(entry[t])));
      if (f[0] == "multi") CHECK(f[3] == "<DEL>");
    } else {
      CHECK(f[1] == ".");
      CHECK(f[2] == want);
    }
  }
  // The input object is untouched.
  CHECK(*v->s3->StoredObject(kBucket, "runs/2026/chr20-test.vcf.gz") == bytes);
  CHECK(RecordCount(Bcftools({"view", out})) == vcf.expect.size());
  // The field's reader of such annotations lists exactly the GEX_ANN sub-fields.
  CHECK(Bcftools({"+split-vep", "-l", "-a", "GEX_ANN", out}) ==
        "0\tAllele\n1\tGene\n2\tGene_ID\n3\tTranscript_ID\n4\tTSS\n5\tStrand\n"
        "6\tTSS_distance\n7\tlog2FC_1\n8\tlog2FC_2\n9\tConsequence\n");

  // The annotated copy cannot be submitted again: it already carries GEX_* fields.
  const std::string again = v->Upload("runs/2026/again.vcf.gz", ReadFile(out));
  auto refused = v->Post(Body(again), alice);
  CHECK(refused.status == 400);
  CHECK_THAT(Message(refused), Catch::Contains("GEX_"));

  // Another client cannot see the job.
  CHECK(v->Get("/v1/tasks/jobs/" + job, v->svc->keys().bob).status == 404);
}

TEST_CASE("variant workflow: a gene panel restricts scoring and is reported resolved",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  BuiltVcf vcf = BuildChr20Vcf(*v);
  const std::string uri = v->Upload("panel/chr20.vcf", vcf.text);
  // The genes of the snv0* records, by lower-case symbol, and of the deletion, by versioned id.
  std::string snv0_gene = vcf.expect["snv0a"].substr(4);
  const Site* del_site = FindSite(*v, vcf.expect["del"].substr(4));
  REQUIRE(del_site != nullptr);
  std::string lower = snv0_gene;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  const std::string panel = R"(, "window": 1000, "tissues": ["adult heart"], "genes": [")" + lower +
                            R"(", ")" + del_site->gene_id + R"(.7"])";

  auto unknown = v->Post(
      Body(uri, R"(, "genes": ["NOT_A_GENE_1", ")" + lower + R"(", "ENSG99999999999"])"), alice);
  CHECK(unknown.status == 400);
  CHECK_THAT(Message(unknown), Catch::Contains("NOT_A_GENE_1"));
  CHECK_THAT(Message(unknown), Catch::Contains("ENSG99999999999"));
  auto empty = v->Post(Body(uri, R"(, "genes": [])"), alice);
  CHECK(empty.status == 422);

  auto done = v->Poll(JobId(v->Post(Body(uri, panel), alice)), alice);
  INFO(done.body);
  REQUIRE(done.status == 200);
  auto doc = ParseJson(done.body);
  const auto& genes = (*doc)["meta"]["options_applied"]["genes"];
  REQUIRE(genes.Size() == 2);
  const Site* snv0_site = FindSite(*v, snv0_gene);
  CHECK(std::string(genes[0].GetString()) == snv0_site->gene_id);
  CHECK(std::string(genes[1].GetString()) == del_site->gene_id);
  const auto& counts = (*doc)["data"]["counts"];
  CheckCountsInvariants(counts);
  CHECK(counts["annotated"].GetInt64() == 3);  // snv0a, snv0b, del
  // snv1a, snv1b, multi and symbolic (near genes outside the panel) are
  // NO_REQUESTED_GENE_IN_WINDOW, which comes before NO_SUPPORTED_ALT.
  CHECK(counts["not_run_reasons"]["NO_REQUESTED_GENE_IN_WINDOW"].GetInt64() == 4);
  const std::string out = SaveOutput(*v, *doc, "panel.annotated.vcf.gz");
  const std::string header = Bcftools({"view", "-h", out});
  CHECK(header.find("##GEXRequestedGenes=" + snv0_site->gene_id + "," + del_site->gene_id) !=
        std::string::npos);
  CHECK(header.find("##GEXWindow=1000") != std::string::npos);
  CHECK(RecordCount(Bcftools({"view", out})) == vcf.expect.size());
}

TEST_CASE("variant workflow: real Debian VCFs (vt's chr20 indels, 1000 Genomes chr22)",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;

  SECTION("vt-examples normalize/01_IN.vcf.gz: chr20 indels, some near start sites") {
    auto run = RunDebianVcf(*v, "vt-examples", "usr/share/doc/vt/examples/normalize/01_IN.vcf.gz",
                            "vt/01_IN.vcf.gz");
    if (!run) return;
    const auto& doc = run->doc;
    const auto& counts = (*doc)["data"]["counts"];
    // What the contract's rule gives, computed here from the catalogue: a record is in range
    // when a start site lies within 5,000 bp of its REF span.
    const std::string plain = Bcftools({"query", "-f", "%POS\t%REF\n", run->path});
    int64_t in_range = 0;
    int64_t records = 0;
    for (const auto& line : Lines(plain)) {
      const auto f = Split(line, '\t');
      const int64_t first = std::stoll(f[0]);
      const int64_t last = first + static_cast<int64_t>(f[1].size()) - 1;
      ++records;
      for (const auto& s : v->sites) {
        if (s.tss >= first - 5000 && s.tss <= last + 5000) {
          ++in_range;
          break;
        }
      }
    }
    CHECK(counts["variants_in"].GetInt64() == records);
    CHECK(counts["annotated"].GetInt64() == in_range);
    CHECK(in_range > 0);
    CHECK(counts["not_run_reasons"]["OUTSIDE_TSS_WINDOW"].GetInt64() == records - in_range);
    CHECK((*doc)["meta"].HasMember("model"));
    const std::string out = SaveOutput(*v, *doc, "vt.annotated.vcf.gz");
    CHECK(RecordCount(Bcftools({"view", out})) == static_cast<size_t>(records));
  }

  SECTION("r-bioc-variantannotation chr22.vcf.gz: nothing on chr22 in a chr20 catalogue") {
    auto run = RunDebianVcf(*v, "r-bioc-variantannotation",
                            "usr/lib/R/site-library/VariantAnnotation/extdata/chr22.vcf.gz",
                            "1kg/chr22.vcf.gz");
    if (!run) return;
    const auto& doc = run->doc;
    const auto& counts = (*doc)["data"]["counts"];
    CHECK(counts["variants_in"].GetInt64() == 10376);
    CHECK(counts["annotated"].GetInt64() == 0);
    CHECK(counts["not_run"].GetInt64() == 10376);
    CHECK(counts["not_run_reasons"].MemberCount() == 1);
    CHECK(counts["not_run_reasons"]["NO_TSS_ON_CONTIG"].GetInt64() == 10376);
    CHECK(counts["associations"].GetInt64() == 0);
    // Nothing was scored: no meta.model, no ##GEXModel.
    CHECK_FALSE((*doc)["meta"].HasMember("model"));
    const std::string out = SaveOutput(*v, *doc, "chr22.annotated.vcf.gz");
    CHECK(Bcftools({"view", "-h", out}).find("##GEXModel") == std::string::npos);
    CHECK(RecordCount(Bcftools({"view", out})) == 10376);
  }
}

TEST_CASE("variant workflow: job identity (resubmission, client_ref, new ETag, failed re-runs)",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  const std::string bob = v->svc->keys().bob;
  BuiltVcf vcf = BuildChr20Vcf(*v);
  const std::string key = "identity/case.vcf";
  const std::string uri = v->Upload(key, vcf.text);
  const std::string options = R"(, "window": 100, "tissues": ["liver"])";

  const std::string first = JobId(v->Post(Body(uri, options), alice));
  auto again = v->Post(Body(uri, options), alice);
  CHECK(JobId(again) == first);  // while it runs
  REQUIRE(v->Poll(first, alice).status == 200);
  CHECK(JobId(v->Post(Body(uri, options), alice)) == first);  // once it succeeded
  // Each part of the case makes another job.
  CHECK(JobId(v->Post(Body(uri, options, R"(, "client_ref": "second run")"), alice)) != first);
  CHECK(JobId(v->Post(Body(uri, R"(, "window": 101, "tissues": ["liver"])"), alice)) != first);
  const std::string bobs = JobId(v->Post(Body(uri, options), bob));
  CHECK(bobs != first);
  CHECK(v->Get("/v1/tasks/jobs/" + bobs, alice).status == 404);
  // A replaced object (new ETag) is a new job.
  v->Upload(key, vcf.text + "20\t" + std::to_string(v->sites[5].tss) + "\tnew\t" +
                     std::string(1, v->RefBase(v->sites[5].tss)) +
                     "\t<DEL>\t.\tPASS\t.\t.\t.\t.\n");
  const std::string replaced = JobId(v->Post(Body(uri, options), alice));
  CHECK(replaced != first);
  auto replaced_done = v->Poll(replaced, alice);
  REQUIRE(replaced_done.status == 200);
  CHECK((*ParseJson(replaced_done.body))["data"]["counts"]["variants_in"].GetInt64() ==
        static_cast<int64_t>(vcf.expect.size()) + 1);

  // A failed job runs again when resubmitted.
  const std::string bad = v->Upload(
      "identity/bad.vcf", vcf.text + "20\tnot-a-position\tx\tA\tG\t.\tPASS\t.\t.\t.\t.\n");
  const std::string failed = JobId(v->Post(Body(bad), alice));
  CHECK(v->Poll(failed, alice).status == 400);
  const std::string rerun = JobId(v->Post(Body(bad), alice));
  CHECK(rerun != failed);
  CHECK(v->Poll(rerun, alice).status == 400);
}

TEST_CASE("variant workflow: bad VCFs fail the job clearly, write nothing, keep the input",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  BuiltVcf vcf = BuildChr20Vcf(*v);
  // Several bgzip blocks, so the header reads fine and the damage is found by the job.
  std::string long_text = vcf.text;
  const std::string far_line = Lines(vcf.text)[Lines(vcf.text).size() - 2];  // the "far" record
  const auto far = Split(far_line, '\t');
  for (int i = 0; i < 5000; ++i) {
    long_text += "20\t" + far[1] + "\tfill" + std::to_string(i) + "\t" + far[3] + "\t" + far[4] +
                 "\t50\tPASS\tDP=1\tGT\t0/1\t0/0\n";
  }
  const std::string good_gz = Bgzip(v->dir, "for-truncation.vcf", long_text);
  REQUIRE(long_text.size() > 3 * 65536);  // bgzip blocks hold 64 KiB of text each
  struct Bad {
    std::string what, key, bytes, says;
  };
  std::string wrong_columns = vcf.text + "20\t1000\tshort\tA\n";
  std::vector<Bad> cases = {
      {"malformed POS", "bad/pos.vcf",
       vcf.text + "20\tnot-a-position\tx\tA\tG\t.\tPASS\t.\t.\t.\t.\n", "record"},
      {"too few columns", "bad/columns.vcf", wrong_columns, "record"},
      {"truncated gzip", "bad/truncated.vcf.gz", good_gz.substr(0, good_gz.size() - 40),
       "truncated"},
      {"gzip cut in half", "bad/half.vcf.gz", good_gz.substr(0, good_gz.size() / 2), "truncated"},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.what);
    auto submitted = v->Post(Body(v->Upload(bad.key, bad.bytes)), alice);
    const std::string job = JobId(submitted);  // the header is fine: accepted
    auto failed = v->Poll(job, alice);
    INFO(failed.body);
    CHECK(failed.status == 400);
    CHECK(Code(failed) == "bad_request");
    CHECK_THAT(Message(failed), Catch::Contains(bad.says));
    const std::string stem = bad.key.substr(0, bad.key.find(".vcf"));
    CHECK_FALSE(v->s3->StoredObject(kBucket, stem + ".annotated." + job.substr(0, 8) + ".vcf.gz")
                    .has_value());
    CHECK(*v->s3->StoredObject(kBucket, bad.key) == bad.bytes);
  }
  // Problems visible in the header are refused before a job exists.
  auto not_vcf = v->Post(Body(v->Upload("bad/notes.vcf", "these are not variants\n")), alice);
  CHECK(not_vcf.status == 400);
  auto empty = v->Post(Body(v->Upload("bad/empty.vcf", "")), alice);
  CHECK(empty.status == 400);
  CHECK_THAT(Message(empty), Catch::Contains("empty"));
  auto missing = v->Post(Body("s3://" + kBucket + "/bad/absent.vcf"), alice);
  CHECK(missing.status == 400);
  auto prefix = v->Post(Body("s3://" + kBucket + "/bad/"), alice);
  CHECK(prefix.status == 400);
  auto suffix = v->Post(Body("s3://" + kBucket + "/bad/notes.txt"), alice);
  CHECK(suffix.status == 400);
  // Nothing was left in the runner's scratch directory.
  std::string listing;
  RunCommand({"/usr/bin/find", v->work_dir, "-mindepth", "1", "-type", "d"}, &listing);
  CHECK(listing.empty());
}

TEST_CASE("variant workflow: a runner killed mid-job: another runner finishes it, one output",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  // Enough scoring to kill the runner in the middle of it: an SNV 50 bp downstream of each of
  // 300 start sites, three tissues (about 1,800 expression calls).
  std::vector<std::pair<int64_t, char>> snvs;
  for (size_t i = 0; i < v->sites.size() && snvs.size() < 300; ++i) {
    const Site& s = v->sites[i];
    const int64_t pos = s.strand == '+' ? s.tss + 50 : s.tss - 50;
    snvs.emplace_back(pos, v->RefBase(pos));
  }
  std::sort(snvs.begin(), snvs.end());
  std::ostringstream t;
  t << "##fileformat=VCFv4.2\n##contig=<ID=20,length=63025520>\n"
       "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  for (const auto& [pos, ref] : snvs) {
    t << "20\t" << pos << "\t.\t" << ref << "\t" << (ref == 'A' ? 'G' : 'A') << "\t.\tPASS\t.\n";
  }
  const std::string text = t.str();
  const std::string uri = v->Upload("killed/many.vcf", text);
  const std::string body = Body(uri, R"(, "tissues": ["heart", "liver", "brain"])");

  // The service's own runner steps aside, so that the job goes to the one about to be killed.
  REQUIRE(v->runner.Stop(std::chrono::seconds(30)));
  ChildProcess doomed;
  const std::string doomed_dir = MakeTempDir("dnaserve-variant-doomed");
  REQUIRE(v->StartVariantRunner(&doomed, doomed_dir, "doomed-runner"));
  const std::string job = JobId(v->Post(body, alice));
  std::string message;
  for (int i = 0; i < 1200 && message.rfind("scoring", 0) != 0; ++i) {
    auto running = v->Get("/v1/tasks/jobs/" + job, alice);
    INFO(running.body);
    REQUIRE(running.status == 202);
    auto doc = ParseJson(running.body);
    const auto& progress = (*doc)["data"]["progress"];
    CHECK(std::string((*doc)["data"]["job_id"].GetString()) == job);
    CHECK(progress["current_percent"].IsNumber());
    CHECK(progress["elapsed_seconds"].IsNumber());
    CHECK(std::string((*doc)["meta"]["task"].GetString()) == "genomic_variant_interpretation");
    message = progress["message"].GetString();
    if (message.rfind("scoring", 0) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(message.rfind("scoring", 0) == 0);

  // The runner dies without a word; what it downloaded stays in its scratch directory.
  doomed.Kill();
  std::string left;
  RunCommand({"/usr/bin/find", doomed_dir, "-mindepth", "1"}, &left);
  CHECK_FALSE(left.empty());
  // Another runner takes the job over once its heartbeat is overdue and runs it to the end.
  REQUIRE(v->StartVariantRunner(&v->runner, v->work_dir, "runner-after-kill"));
  auto done = v->Poll(job, alice);
  INFO(done.body);
  REQUIRE(done.status == 200);
  auto result = ParseJson(done.body);
  const auto& counts = (*result)["data"]["counts"];
  CheckCountsInvariants(counts);
  CHECK(counts["variants_in"].GetInt64() == static_cast<int64_t>(snvs.size()));
  CHECK(counts["annotated"].GetInt64() == static_cast<int64_t>(snvs.size()));
  // Exactly one output object, the input untouched.
  CHECK(v->s3->StoredKeys(kBucket, "killed/") ==
        std::vector<std::string>{"killed/many.annotated." + job.substr(0, 8) + ".vcf.gz",
                                 "killed/many.vcf"});
  CHECK(*v->s3->StoredObject(kBucket, "killed/many.vcf") == text);

  // Restarted on the same scratch directory, the killed runner first removes what it left.
  REQUIRE(v->StartVariantRunner(&doomed, doomed_dir, "doomed-runner-restarted"));
  CHECK(WaitFor(
      [&] {
        std::string listing;
        RunCommand({"/usr/bin/find", doomed_dir, "-mindepth", "1"}, &listing);
        return listing.empty();
      },
      std::chrono::seconds(20)));
  doomed.Stop();
}

namespace {

// A /proc/<pid>/status figure in kB (VmHWM: peak resident memory), or -1.
int64_t ProcStatusKb(int pid, const std::string& field) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// Resets the process's VmHWM to its current RSS (Linux: "5" > clear_refs), so each hostile
// input's peak is its own. False when the kernel refuses (the figure is then cumulative).
bool ResetPeakMemory(int pid) {
  std::ofstream clear("/proc/" + std::to_string(pid) + "/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// A refusal's body with the URI named in it and its request id replaced by placeholders: the
// parts that may differ between two refusals of the same kind.
std::string RefusalTemplate(const HttpResult& r, const std::string& uri) {
  auto doc = ParseJson(r.body);
  REQUIRE(doc->IsObject());
  REQUIRE(doc->HasMember("error"));
  const rapidjson::Value& error = (*doc)["error"];
  std::string shape = std::to_string(r.status) + " " + error["code"].GetString() + " fields:";
  for (auto m = error.MemberBegin(); m != error.MemberEnd(); ++m) {
    shape += std::string(" ") + m->name.GetString();
  }
  std::string message = error["message"].GetString();
  for (size_t at = message.find(uri); at != std::string::npos; at = message.find(uri, at)) {
    message.replace(at, uri.size(), "<uri>");
  }
  return shape + " message: " + message;
}

// Lines of the S3 server's request log after the first `from`.
std::vector<std::string> RequestsSince(const VariantService& v, size_t from) {
  auto all = v.s3->RequestLog();
  return std::vector<std::string>(all.begin() + static_cast<std::ptrdiff_t>(std::min(from, all.size())),
                                  all.end());
}

}  // namespace

TEST_CASE("variant workflow: hostile VCFs end in their bound with the runner's memory bounded",
          "[integration][variant][bounds]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  constexpr int64_t kMaxText = int64_t{256} << 20;
  // A runner of its own with a low model-call allowance (the million-record case reaches it in
  // seconds) and a decompressed-size bound a test can pass in seconds; the other bounds keep
  // their defaults. The service's runner steps aside meanwhile and comes back however this ends.
  REQUIRE(v->runner.Stop(std::chrono::seconds(30)));
  // A runner is up once it logged runner_started.
  auto wait_started = [](const std::string& log) {
    return WaitFor([&] { return ReadFile(log).find("runner_started") != std::string::npos; },
                   std::chrono::seconds(30));
  };
  struct RestoreRunner {
    VariantService* v;
    std::function<bool(const std::string&)> wait;
    ~RestoreRunner() {
      if (v->StartVariantRunner(&v->runner, v->work_dir, "runner-after-hostile")) {
        wait(v->dir + "/runner-after-hostile.log");
      }
    }
  } restore{v, wait_started};
  ChildProcess hostile;
  REQUIRE(v->StartVariantRunner(&hostile, MakeTempDir("dnaserve-variant-hostile"), "hostile-runner",
                                {{"DNASERVE_JOB_MAX_MODEL_CALLS", "2000"},
                                 {"DNASERVE_VCF_MAX_DECOMPRESSED_BYTES", std::to_string(kMaxText)}}));
  REQUIRE(wait_started(v->dir + "/hostile-runner.log"));
  const int pid = hostile.pid();
  const std::string header =
      "##fileformat=VCFv4.2\n##contig=<ID=20,length=63025520>\n"
      "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  std::map<std::string, std::string> figures;  // case -> "peak RSS MB, seconds"

  // Submits `bytes` as `key`, polls the job to its end: 400 bad_request naming `says`. Records
  // the runner's peak memory for it.
  auto run = [&](const std::string& name, const std::string& key, const std::string& bytes,
                 const std::string& options, const std::string& says) {
    CAPTURE(name);
    const bool reset = ResetPeakMemory(pid);
    const auto started = std::chrono::steady_clock::now();
    const int64_t before = ProcStatusKb(pid, "VmRSS");
    const std::string job = JobId(v->Post(Body(v->Upload(key, bytes), options), alice));
    auto failed = v->Poll(job, alice);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    INFO(failed.body);
    CHECK(failed.status == 400);
    CHECK(Code(failed) == "bad_request");
    CHECK_THAT(Message(failed), Catch::Contains(says));
    const int64_t peak = ProcStatusKb(pid, "VmHWM");
    const std::string figure = std::to_string(bytes.size() / 1000) + " kB object: runner RSS " +
                               std::to_string(before / 1024) + " MB before, peak " +
                               std::to_string(peak / 1024) + " MB" +
                               (reset ? "" : " (cumulative)") + ", " +
                               std::to_string(static_cast<int>(seconds + 0.5)) + " s; " +
                               Message(failed);
    figures[name] = figure;
    // Bounded: well under what the input would take if read whole (gigabytes for the bombs).
    CHECK(peak > 0);
    CHECK(peak < 600 * 1024);
    const std::string stem = key.substr(0, key.find(".vcf"));
    CHECK_FALSE(v->s3->StoredObject(kBucket, stem + ".annotated." + job.substr(0, 8) + ".vcf.gz")
                    .has_value());
  };

  // A catalogue start site well inside chr20.
  const Site& site = v->sites[v->sites.size() / 2];
  const char ref = v->RefBase(site.tss);

  {  // a record with 65,000 ALT alleles at a start site
    std::string alts;
    const char* bases[] = {"A", "C", "G", "T"};
    for (int i = 0, n = 0; n < 65000; ++i) {
      if (bases[i % 4][0] == ref) continue;
      alts += (alts.empty() ? "" : ",") + std::string(bases[i % 4]);
      ++n;
    }
    REQUIRE(std::count(alts.begin(), alts.end(), ',') == 64999);
    const std::string vcf = header + "20\t" + std::to_string(site.tss) + "\tmany\t" +
                            std::string(1, ref) + "\t" + alts + "\t.\tPASS\t.\n";
    run("65,000 ALTs", "hostile/alts.vcf", vcf, "",
        "record 1 (20:" + std::to_string(site.tss) + ") has 65,000 ALT alleles; at most 1,000");
  }

  {  // a small gzip inflating to one line of 4 GiB
    const std::string filler = GzipMember(std::string(64 << 20, 'A'));
    std::string bomb = GzipMember(header + "20\t" + std::to_string(site.tss) + "\tbomb\t" +
                                  std::string(1, ref) + "\tC\t.\tPASS\tX=");
    for (int i = 0; i < 64; ++i) bomb += filler;  // 64 x 64 MiB
    bomb += GzipMember("\n");
    INFO("compressed bytes: " << bomb.size());
    REQUIRE(bomb.size() < (8 << 20));
    run("gzip bomb, one 4 GiB line", "hostile/bomb.vcf.gz", bomb, "",
        "line longer than 8,388,608 bytes (this service's limit per line) at record 1");
  }

  {  // a small gzip inflating to 4 GiB of 1 MiB records
    const std::string line = "20\t" + std::to_string(site.tss) + "\tbig\t" + std::string(1, ref) +
                             "\tC\t.\tPASS\tX=" + std::string(1 << 20, 'A') + "\n";
    const std::string member = GzipMember(line);
    std::string bomb = GzipMember(header);
    for (int i = 0; i < 4096; ++i) bomb += member;
    INFO("compressed bytes: " << bomb.size());
    REQUIRE(bomb.size() < (8 << 20));
    run("gzip bomb, 4 GiB of 1 MiB records", "hostile/records.vcf.gz", bomb, "",
        "decompresses to more than " + std::string("268,435,456") + " bytes");
  }

  {  // a million records near start sites, 16 tissues
    std::string text = header;
    text.reserve(30 << 20);
    const int64_t per_site = 1000000 / static_cast<int64_t>(v->sites.size()) + 1;
    int64_t records = 0;
    for (size_t i = 0; i < v->sites.size() && records < 1000000; ++i) {
      for (int64_t k = 0; k < per_site && records < 1000000; ++k, ++records) {
        text += "20\t" + std::to_string(v->sites[i].tss - per_site / 2 + k) + "\t.\tN\tA\t.\t.\t.\n";
      }
    }
    REQUIRE(records == 1000000);
    std::string tissues = R"(, "tissues": [)";
    for (int t = 0; t < 16; ++t) tissues += (t ? ", \"tissue " : "\"tissue ") + std::to_string(t) + "\"";
    tissues += "]";
    run("1,000,000 records, 16 tissues", "hostile/million.vcf.gz", GzipMember(text, 6), tissues,
        "model calls (");  // refused in the first pass: "the job needs about N model calls (...)"
    CHECK_THAT(figures["1,000,000 records, 16 tissues"], Catch::Contains("at most 2,000 are allowed"));
  }
  for (const auto& [name, figure] : figures) WARN(name << ": " << figure);
  hostile.Stop(std::chrono::seconds(30));
}

TEST_CASE("variant workflow: tenants: another client's object is refused as a missing one, and "
          "the store never sees the request",
          "[integration][variant][grants]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const TenantKeys& keys = v->tenants;
  BuiltVcf vcf = BuildChr20Vcf(*v);
  const std::string private_key = "inputs/private-" + std::to_string(getpid()) + ".vcf";
  REQUIRE(v->s3->PutObject(kTenantBucket, private_key, vcf.text) == 200);
  const std::string theirs = "s3://" + kTenantBucket + "/" + private_key;
  const std::string theirs_missing = "s3://" + kTenantBucket + "/inputs/no-such-object.vcf";
  const std::string own_missing = "s3://" + kEveBucket + "/no-such-object.vcf";
  const size_t before = v->s3->RequestLog().size();

  // Eve names A's object, a missing object of A's, and a missing object of her own: one answer.
  auto existing = v->Post(Body(theirs), keys.eve);
  auto missing = v->Post(Body(theirs_missing), keys.eve);
  auto own = v->Post(Body(own_missing), keys.eve);
  INFO(existing.body << "\n" << missing.body << "\n" << own.body);
  CHECK(existing.status == 400);
  CHECK(Code(existing) == "bad_request");
  CHECK(RefusalTemplate(existing, theirs) == RefusalTemplate(missing, theirs_missing));
  CHECK(RefusalTemplate(existing, theirs) == RefusalTemplate(own, own_missing));
  // A prefix next to hers, dot segments and escapes do not reach A's inputs/ either.
  for (const std::string& uri :
       {"s3://" + kTenantBucket + "/inputs-eve/../" + private_key,
        "s3://" + kTenantBucket + "/inputs-eve%2F..%2F" + private_key,
        "s3://" + kTenantBucket + "/inputs-eve/./../" + private_key,
        "s3://" + kTenantBucket + "/inputs-evening/x.vcf"}) {
    CAPTURE(uri);
    CHECK(RefusalTemplate(v->Post(Body(uri), keys.eve), uri) ==
          RefusalTemplate(existing, theirs));
  }
  // Reading granted but not writing: the write refusal, before anything is read.
  auto read_only = v->Post(Body(theirs), keys.reader);
  CHECK(read_only.status == 400);
  CHECK(Code(read_only) == "bad_request");
  CHECK_THAT(Message(read_only),
             Catch::StartsWith("cannot write the annotated VCF into s3://" + kTenantBucket +
                               "/inputs/:"));

  // The store saw Eve's request for her own (missing) object, and nothing of A's bucket.
  const auto seen = RequestsSince(*v, before);
  std::string seen_text;
  for (const auto& line : seen) seen_text += line + "\n";
  INFO("S3 requests since Eve's first:\n" << seen_text);
  CHECK(std::any_of(seen.begin(), seen.end(), [](const std::string& line) {
    return line.find("/" + kEveBucket + "/no-such-object.vcf") != std::string::npos;
  }));
  CHECK(std::none_of(seen.begin(), seen.end(), [](const std::string& line) {
    return line.find("/" + kTenantBucket + "/") != std::string::npos;
  }));

  // A itself: accepted, annotated beside the input, every request signed with A's own key.
  const size_t before_a = v->s3->RequestLog().size();
  const std::string job = JobId(v->Post(Body(theirs), keys.tenant_a));
  CHECK(v->Get("/v1/tasks/jobs/" + job, keys.eve).status == 404);
  auto done = v->Poll(job, keys.tenant_a);
  INFO(done.body);
  REQUIRE(done.status == 200);
  const std::string output = (*ParseJson(done.body))["data"]["output"]["uri"].GetString();
  CHECK(output.rfind("s3://" + kTenantBucket + "/inputs/", 0) == 0);
  CHECK(v->s3->StoredObject(kTenantBucket, output.substr(("s3://" + kTenantBucket + "/").size()))
            .has_value());
  const auto a_requests = RequestsSince(*v, before_a);
  size_t signed_by_a = 0;
  for (const auto& line : a_requests) {
    if (line.find("/" + kTenantBucket + "/") == std::string::npos) continue;
    CAPTURE(line);
    CHECK(line.find("key=" + kTenantAccessKey) != std::string::npos);
    ++signed_by_a;
  }
  CHECK(signed_by_a >= 3);  // HEAD, header sniff, GET, PUT
}

TEST_CASE("variant workflow: POST /v1/variants/score's expression scorer publishes the numbers "
          "the workflow writes for the same variants and contexts",
          "[integration][variant]") {
  VARIANT_SERVICE_OR_SKIP(v);
  const std::string alice = v->svc->keys().alice;
  // The records the workflow annotates (SNVs on both sides of two start sites, a deletion over
  // a third TSS, a multi-allelic record), and the same contexts by id, CURIE and free text.
  BuiltVcf vcf = BuildChr20Vcf(*v);
  const std::vector<std::string> contexts = {"E066", "UBERON:0002048", "heart"};
  const std::string uri = v->Upload("runs/2026/score-equality.vcf.gz",
                                    Bgzip(v->dir, "score-equality.vcf", vcf.text));
  auto done = v->Poll(
      JobId(v->Post(Body(uri, R"(, "tissues": ["E066", "UBERON:0002048", "heart"])"), alice)),
      alice);
  INFO(done.body);
  REQUIRE(done.status == 200);
  auto doc = ParseJson(done.body);
  const std::string out = SaveOutput(*v, *doc, "score-equality.annotated.vcf.gz");
  // What the workflow wrote: by "CHROM:POS:REF:ALT", each (gene id, context) -> the text.
  std::map<std::string, std::map<std::pair<std::string, size_t>, std::string>> written;
  for (const auto& row :
       Lines(Bcftools({"query", "-f", "%CHROM:%POS:%REF:%ALT\t%INFO/GEX_ANN\n", out}))) {
    const auto f = Split(row, '\t');
    if (f[1] == ".") continue;
    for (const auto& entry_text : Split(f[1], ',')) {
      const auto entry = Split(entry_text, '|');
      REQUIRE(entry.size() == 7 + contexts.size() + 1);
      // The ALT of this entry (a multi-allelic record lists each ALT's entries).
      const auto key = Split(f[0], ':');
      const std::string variant = key[0] + ":" + key[1] + ":" + key[2] + ":" + entry[0];
      for (size_t c = 0; c < contexts.size(); ++c) {
        written[variant][{entry[2], c}] = entry[7 + c];
      }
    }
  }
  REQUIRE(written.size() >= 5);

  // The same variants scored directly, the workflow's window (5,000 bp) and contexts.
  std::string variants;
  std::vector<std::string> order;
  for (const auto& [variant, unused] : written) {
    order.push_back(variant);
    variants += (variants.empty() ? "\"" : ", \"") + variant + "\"";
  }
  const std::string body = "{\"variants\": [" + variants +
                           "], \"scorers\": {\"expression\": {\"contexts\": [\"E066\", "
                           "\"UBERON:0002048\", \"heart\"], \"window\": 5000}}}";
  auto scored = GatewayRequest("POST", v->base, "/v1/variants/score",
                               {"Authorization: Bearer " + alice, "Content-Type: application/json"},
                               body, 300);
  INFO(scored.body.substr(0, 2000));
  REQUIRE(scored.status == 200);
  auto sdoc = ParseJson(scored.body);
  const auto& data = (*sdoc)["data"];
  CHECK(std::string(data["scorers"]["expression"]["model"].GetString()) ==
        std::string((*doc)["meta"]["model"].GetString()));
  const auto& results = data["results"];
  REQUIRE(results.Size() == order.size());
  size_t compared = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    INFO(order[i]);
    REQUIRE(results[i].HasMember("expression"));
    std::map<std::pair<std::string, size_t>, std::string> published;
    for (const auto& gene : results[i]["expression"].GetArray()) {
      const auto& per_context = gene["contexts"];
      REQUIRE(per_context.Size() == contexts.size());
      for (size_t c = 0; c < contexts.size(); ++c) {
        CHECK(std::string(per_context[c]["context"].GetString()) == contexts[c]);
        // The published number, in the workflow's notation (5 significant digits).
        char text[32];
        std::snprintf(text, sizeof text, "%.5g",
                      per_context[c]["log2_fold_change"].GetDouble());
        published[{gene["gene_id"].GetString(), c}] = text;
      }
    }
    // The same genes, and for each gene and context the same number.
    CHECK(published == written[order[i]]);
    compared += published.size();
  }
  CHECK(compared >= 15);
}
