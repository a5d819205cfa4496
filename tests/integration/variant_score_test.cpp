// POST /v1/variants/score end to end over real HTTP: a gateway and a runner of the integration
// service (same redis-server, a database of their own, the real splice worker) whose runner
// holds the GRCh37 chr20 reference (scripts/build-catalogue, Debian vt-examples). Junctions
// come from the RefSeq exon table the catalogue is built from (Debian subread-data): the G of an
// internal exon's acceptor AG, changed, against random SNVs far from any exon. Every answer is
// checked against the served OpenAPI document (GatewayRequest). Skips with a message when the
// Debian packages cannot be had.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/digest.h"
#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

const std::string kPath = "/v1/variants/score";

struct ScoreService {
  Service* svc = nullptr;
  BuiltCatalogue built;
  std::unique_ptr<dnaserve::variant::ReferenceGenome> reference;
  std::string dir;
  std::string base;
  std::string workers;  // the runner's DNASERVE_WORKERS (a replacement runner gets the same)
  LaunchedWorker splice;  // the bundled splice-human package (the service's are tiny models)
  LaunchedGateway gateway;
  ChildProcess runner;
  std::vector<int64_t> acceptor_g;  // 1-based positions of the G of internal acceptors' AG (+)
  std::vector<int64_t> boundaries;  // every exon start and end on chr20, sorted

  HttpResult Post(const std::string& body, std::vector<std::string> extra = {}) const {
    std::vector<std::string> headers = {"Authorization: Bearer " + svc->keys().alice,
                                        "Content-Type: application/json"};
    for (auto& h : extra) headers.push_back(std::move(h));
    return GatewayRequest("POST", base, kPath, headers, body, 300);
  }
  std::string Base(int64_t pos1, int64_t n = 1) const {
    auto bases = reference->Fetch("20", pos1 - 1, pos1 - 1 + n);
    REQUIRE(bases.ok());
    return *bases;
  }
  bool FarFromExons(int64_t pos, int64_t margin) const {
    auto it = std::lower_bound(boundaries.begin(), boundaries.end(), pos - margin);
    return it == boundaries.end() || *it > pos + margin;
  }
};

// chr20 '+' genes of the RefSeq exon table: the G of each internal exon's acceptor AG (checked
// against the reference), and every exon boundary.
bool ReadJunctions(const std::string& gz, ScoreService* s, std::string* why) {
  gzFile f = gzopen(gz.c_str(), "rb");
  if (!f) {
    *why = "cannot open " + gz;
    return false;
  }
  std::map<std::string, std::vector<int64_t>> plus_starts;  // gene -> exon starts
  char line[4096];
  while (gzgets(f, line, sizeof line)) {
    std::istringstream fields(line);
    std::string gene, chr, strand;
    int64_t start = 0, end = 0;
    if (!(fields >> gene >> chr >> start >> end >> strand)) continue;
    if (chr != "chr20") continue;
    s->boundaries.push_back(start);
    s->boundaries.push_back(end);
    if (strand == "+") plus_starts[gene].push_back(start);
  }
  gzclose(f);
  std::sort(s->boundaries.begin(), s->boundaries.end());
  for (auto& [gene, starts] : plus_starts) {
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    if (starts.size() < 3) continue;
    const int64_t exon = starts[1];  // the second exon: internal
    if (s->Base(exon - 2, 2) == "AG") s->acceptor_g.push_back(exon - 1);
    if (s->acceptor_g.size() == 8) break;
  }
  if (s->acceptor_g.size() < 5) {
    *why = "fewer than 5 AG acceptors found in " + gz;
    return false;
  }
  return true;
}

ScoreService* GetScoreService(std::string* skip) {
  static std::string reason;
  static ScoreService* instance = []() -> ScoreService* {
    std::string failure;
    Service* svc = Service::Get(&failure);
    if (svc == nullptr) {
      reason = "the integration service did not start: " + failure;
      return nullptr;
    }
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto exons = DebianPackageFile(
        "subread-data", "usr/share/doc/subread/examples/annotation/hg19_RefSeq_exon.txt.gz",
        &reason);
    if (!exons) return nullptr;
    auto s = std::make_unique<ScoreService>();
    s->svc = svc;
    s->built = *built;
    auto reference = dnaserve::variant::ReferenceGenome::Open(built->fasta);
    if (!reference.ok()) {
      reason = reference.status().message();
      return nullptr;
    }
    s->reference = std::move(reference).value();
    if (!ReadJunctions(*exons, s.get(), &reason)) return nullptr;
    s->dir = MakeTempDir("dnaserve-variant-score-it");
    // The real splice model: the one the service ships as its splice default (per-base, char
    // tokens, a 1,000 bp flank), not the integration service's generated tiny one.
    if (!StartBundledSpliceWorker(s->dir, &s->splice, &reason)) return nullptr;
    // The service's workers, but splice from the one above.
    const std::string workers = WorkersWithSplice(*svc, s->splice.address());
    s->workers = workers;
    // Database 2: the integration service's runner holds no reference.
    if (!StartReferenceStack(*svc, 2, workers, *built, "splice", s->dir, &s->runner, &s->gateway,
                             &reason)) {
      return nullptr;
    }
    s->base = s->gateway.base_url();
    // Its gateway, runner and splice worker stopped at exit, before the integration service's
    // (atexit runs in reverse order): left running, every test process would leave three.
    std::atexit([] { delete instance; });
    return s.release();
  }();
  *skip = reason;
  return instance;
}

#define REQUIRE_SCORE_SERVICE(var)                 \
  std::string var##_skip;                          \
  ScoreService* var = GetScoreService(&var##_skip); \
  if (var == nullptr) {                            \
    WARN("skipped: " << var##_skip);               \
    return;                                        \
  }

std::string Snv(int64_t pos, const std::string& ref, const std::string& alt) {
  return "chr20:" + std::to_string(pos) + ":" + ref + ":" + alt;
}

char OtherBase(char b) { return b == 'C' ? 'T' : 'C'; }

// `n` SNVs at seeded random chr20 positions at least 5 kb from any exon boundary.
std::vector<std::string> RandomSnvs(const ScoreService& s, size_t n, uint32_t seed) {
  std::vector<std::string> out;
  uint32_t x = seed;
  while (out.size() < n) {
    x = x * 1664525u + 1013904223u;
    const int64_t pos = 2000000 + static_cast<int64_t>(x % 58000000u);
    if (!s.FarFromExons(pos, 5000)) continue;
    const std::string ref = s.Base(pos);
    if (ref == "N") continue;
    out.push_back(Snv(pos, ref, std::string(1, OtherBase(ref[0]))));
  }
  return out;
}

std::string Body(const std::vector<std::string>& variants, const std::string& extra = "") {
  std::string body = "{\"variants\": [";
  for (size_t i = 0; i < variants.size(); ++i) body += (i ? ", " : "") + variants[i];
  return body + "]" + extra + "}";
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// The splice object of one result, re-serialised (compared byte for byte between requests).
std::string SpliceText(const rapidjson::Value& result) {
  REQUIRE(result.HasMember("splice"));
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  result["splice"].Accept(writer);
  return buffer.GetString();
}

}  // namespace

TEST_CASE("variant scoring: annotated acceptors score far above random SNVs, errors per variant",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  std::vector<std::string> variants;
  std::vector<std::string> junctions;
  for (size_t i = 0; i < 5; ++i) {
    const int64_t g = s->acceptor_g[i];
    junctions.push_back(Snv(g, "G", "C"));
    variants.push_back(Quoted(junctions.back()));
  }
  const std::vector<std::string> randoms = RandomSnvs(*s, 5, 20261128);
  for (const auto& r : randoms) variants.push_back(Quoted(r));
  const int64_t g0 = s->acceptor_g[0];
  const int64_t g1 = s->acceptor_g[1];
  const std::string before = s->Base(g1 - 2);  // the base before the AG
  // Per-variant errors and the other forms, after the ten (indices 10-).
  variants.push_back(Quoted(Snv(g0, "T", "C")));              // 10 reference_mismatch
  variants.push_back(Quoted("chr99:100:A:G"));                // 11 unknown_contig
  variants.push_back(Quoted("chr20:999999999:A:G"));          // 12 position_out_of_range
  variants.push_back(Quoted("chr20:100:A:*"));                // 13 unsupported_allele
  variants.push_back(Quoted("chr20:100:A:<DEL>"));            // 14 unsupported_allele
  variants.push_back(Quoted("chr20:100:A:A" + std::string(60, 'C')));  // 15 indel_too_long
  variants.push_back("{\"contig\": \"20\", \"position\": " + std::to_string(g0) +
                     ", \"ref\": \"g\", \"alt\": \"c\"}");  // 16 duplicate of 0 (object, lower)
  variants.push_back(Quoted("chr20-" + std::to_string(g1) + "-g-t"));  // 17 lower case, '-'
  // 18: the AG deleted (REF = the base before it + AG, ALT = that base).
  variants.push_back(Quoted("chr20:" + std::to_string(g1 - 2) + ":" + before + "AG:" + before));
  // 19: an insertion inside the AG.
  variants.push_back(Quoted("chr20:" + std::to_string(g1 - 1) + ":A:ATTT"));
  variants.push_back(Quoted("not a variant"));                  // 20 invalid_variant
  variants.push_back(Quoted("chr20:100:AT:GC"));              // 21 unsupported_variant
  variants.push_back("{\"assembly\": \"GRCh38\", \"contig\": \"chr20\", \"position\": 100, "
                     "\"ref\": \"A\", \"alt\": \"G\"}");  // 22 unknown_assembly

  auto r = s->Post(Body(variants));
  INFO(r.body.substr(0, 2000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& data = (*doc)["data"];
  const auto& results = data["results"];
  REQUIRE(results.Size() == variants.size());
  CHECK(std::string(data["scorers"]["splice"]["model"].GetString()) == "splice-human");
  const std::string digest = data["scorers"]["splice"]["package_digest"].GetString();
  CHECK(digest.rfind("sha256:", 0) == 0);
  CHECK(digest.size() == 7 + 64);
  CHECK(std::string((*doc)["meta"]["package_digest"].GetString()) == digest);
  CHECK(data["scorers"]["splice"]["distance"].GetInt64() == 50);
  CHECK(data["counts"]["errors"].GetInt64() == 10);
  CHECK(data["counts"]["scored"].GetInt64() == static_cast<int64_t>(variants.size()) - 10);

  auto error_of = [&](size_t i) -> std::string {
    INFO("variant " << i);
    if (!results[i].HasMember("error")) return "";
    return results[i]["error"]["code"].GetString();
  };
  CHECK(error_of(10) == "reference_mismatch");
  CHECK(error_of(11) == "unknown_contig");
  CHECK(error_of(12) == "position_out_of_range");
  CHECK(error_of(13) == "unsupported_allele");
  CHECK(error_of(14) == "unsupported_allele");
  CHECK(error_of(15) == "indel_too_long");
  CHECK(error_of(16) == "duplicate_variant");
  CHECK(error_of(17) == "");
  CHECK(error_of(18) == "");
  CHECK(error_of(19) == "");
  CHECK(error_of(20) == "invalid_variant");
  CHECK(error_of(21) == "unsupported_variant");
  CHECK(error_of(22) == "unknown_assembly");
  CHECK(std::string(results[16]["error"]["message"].GetString()).find("variants[0]") !=
        std::string::npos);
  CHECK(std::string(results[17]["variant"]["ref"].GetString()) == "G");

  // The junctions' acceptor loss against the random SNVs' largest delta of any kind.
  double random_max = 0;
  for (size_t i = 5; i < 10; ++i) {
    INFO(randoms[i - 5]);
    REQUIRE(results[i].HasMember("splice"));
    random_max = std::max(random_max, results[i]["splice"]["DS_max"].GetDouble());
  }
  int above = 0;
  double best_loss = 0;
  for (size_t i = 0; i < 5; ++i) {
    const auto& splice = results[i]["splice"];
    INFO(junctions[i] << " DS_AL " << splice["DS_AL"].GetDouble() << " DP_AL "
                      << splice["DP_AL"].GetInt64() << " random max " << random_max);
    CHECK(std::string(splice["strand"].GetString()) == "+");
    if (splice["DS_AL"].GetDouble() > random_max) ++above;
    if (splice["DS_AL"].GetDouble() > best_loss) {
      best_loss = splice["DS_AL"].GetDouble();
      // The lost acceptor is the exon's first base, the one after the G.
      CHECK(splice["DP_AL"].GetInt64() == 1);
    }
  }
  CHECK(above >= 4);
  CHECK(best_loss >= 0.3);
  CHECK(random_max < 0.1);
}

TEST_CASE("variant scoring: a variant scores the same alone and among 100", "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  // The junction SNV the model reads as strongest (so the comparison is not of zeros), and the
  // deletion of its AG.
  std::vector<std::string> candidates;
  for (size_t i = 0; i < 5; ++i) candidates.push_back(Quoted(Snv(s->acceptor_g[i], "G", "C")));
  auto first = s->Post(Body(candidates));
  REQUIRE(first.status == 200);
  auto f = ParseJson(first.body);
  size_t best = 0;
  for (size_t i = 1; i < 5; ++i) {
    if ((*f)["data"]["results"][i]["splice"]["DS_max"].GetDouble() >
        (*f)["data"]["results"][best]["splice"]["DS_max"].GetDouble()) {
      best = i;
    }
  }
  const int64_t g = s->acceptor_g[best];
  const std::string junction = Snv(g, "G", "C");
  const std::string deletion =
      "chr20:" + std::to_string(g - 2) + ":" + s->Base(g - 2) + "AG:" + s->Base(g - 2);
  auto alone = s->Post(Body({Quoted(junction)}));
  REQUIRE(alone.status == 200);
  auto alone_deletion = s->Post(Body({Quoted(deletion)}));
  REQUIRE(alone_deletion.status == 200);

  std::vector<std::string> hundred;
  for (const auto& r : RandomSnvs(*s, 98, 7)) hundred.push_back(Quoted(r));
  hundred.insert(hundred.begin() + 41, Quoted(junction));
  hundred.insert(hundred.begin() + 77, Quoted(deletion));
  REQUIRE(hundred.size() == 100);
  auto batch = s->Post(Body(hundred));
  REQUIRE(batch.status == 200);
  auto a = ParseJson(alone.body);
  auto d = ParseJson(alone_deletion.body);
  auto b = ParseJson(batch.body);
  const auto& results = (*b)["data"]["results"];
  REQUIRE(results.Size() == 100);
  CHECK(SpliceText((*a)["data"]["results"][0]) == SpliceText(results[41]));
  CHECK(SpliceText((*d)["data"]["results"][0]) == SpliceText(results[77]));
  // And not trivially: the junction's scores are not all zero.
  CHECK((*a)["data"]["results"][0]["splice"]["DS_max"].GetDouble() > 0.3);
  CHECK((*d)["data"]["results"][0]["splice"]["DS_AL"].GetDouble() > 0.3);
}

TEST_CASE("variant scoring: a RefSeq accession names the same contig as chr20 and 20",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  const int64_t g = s->acceptor_g[0];
  const std::string position = std::to_string(g);
  auto by_name = s->Post(Body({Quoted("chr20:" + position + ":G:C")}));
  auto by_accession = s->Post(Body({Quoted("NC_000020.10:" + position + ":G:C"),
                                    Quoted("20:" + position + ":G:C"),
                                    Quoted("NC_000020.11:" + position + ":G:C")}));
  REQUIRE(by_name.status == 200);
  REQUIRE(by_accession.status == 200);
  auto n = ParseJson(by_name.body);
  auto a = ParseJson(by_accession.body);
  const auto& results = (*a)["data"]["results"];
  REQUIRE(results.Size() == 3);
  INFO(by_accession.body.substr(0, 1500));
  REQUIRE(results[0].HasMember("splice"));
  CHECK(SpliceText(results[0]) == SpliceText((*n)["data"]["results"][0]));
  CHECK(std::string(results[0]["input"].GetString()) == "NC_000020.10:" + position + ":G:C");
  // The same variant under another of its contig's names is a duplicate of the first.
  REQUIRE(results[1].HasMember("error"));
  CHECK(std::string(results[1]["error"]["code"].GetString()) == "duplicate_variant");
  // The GRCh38 accession is not a name of the GRCh37 contig.
  REQUIRE(results[2].HasMember("error"));
  CHECK(std::string(results[2]["error"]["code"].GetString()) == "unknown_contig");
}

TEST_CASE("variant scoring: request-level errors are 4xx in the envelope", "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  // Past the batch limit (20,000; more than 100 is a job).
  std::vector<std::string> many(20001, Quoted("chr20:100:A:G"));
  auto too_many = s->Post(Body(many));
  CHECK(too_many.status == 422);
  CHECK(too_many.body.find("20000") != std::string::npos);
  CHECK(too_many.body.find("body") != std::string::npos);
  auto not_list = s->Post("{\"variants\": \"chr20:100:A:G\"}");
  CHECK(not_list.status == 422);
  auto scorer = s->Post(Body({Quoted("chr20:100:A:G")}, ", \"scorers\": {\"promoterz\": {}}"));
  CHECK(scorer.status == 422);
  CHECK(scorer.body.find("promoterz") != std::string::npos);
  auto distance =
      s->Post(Body({Quoted("chr20:100:A:G")}, ", \"scorers\": {\"splice\": {\"distance\": 5001}}"));
  CHECK(distance.status == 422);
  auto malformed = s->Post("{\"variants\": [");
  CHECK(malformed.status == 400);
  auto async = s->Post(Body({Quoted("chr20:100:A:G")}), {"Prefer: respond-async"});
  CHECK(async.status == 400);
  auto xml = s->Post(Body({Quoted("chr20:100:A:G")}), {"Accept: application/xml"});
  CHECK(xml.status == 415);
  for (const auto* r : {&too_many, &not_list, &scorer, &distance, &malformed, &async, &xml}) {
    auto doc = ParseJson(r->body);
    CHECK(doc->HasMember("error"));
  }
  // A sync answer is also the job's stored result, polled as any job's (and documented).
  auto scored = s->Post(Body({Quoted(Snv(s->acceptor_g[0], "G", "C"))}));
  REQUIRE(scored.status == 200);
  auto scored_doc = ParseJson(scored.body);
  const std::string job_id = (*scored_doc)["meta"]["job_id"].GetString();
  auto polled = GatewayRequest("GET", s->base, "/v1/tasks/jobs/" + job_id,
                               {"Authorization: Bearer " + s->svc->keys().alice});
  CHECK(polled.status == 200);
  CHECK(polled.body == scored.body);
  // Without a key: 401, before anything is read.
  auto anonymous = GatewayRequest("POST", s->base, kPath, {"Content-Type: application/json"},
                                  Body({Quoted("chr20:100:A:G")}));
  CHECK(anonymous.status == 401);
}

TEST_CASE("GET /v1/genomes lists what the runner holds, with lengths and MD5s", "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  // The runner publishes once it has read its reference (an MD5 over all of chr20).
  std::shared_ptr<rapidjson::Document> doc;
  const rapidjson::Value* grch37 = nullptr;
  for (int i = 0; i < 600 && grch37 == nullptr; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = GatewayRequest("GET", s->base, "/v1/genomes");
    REQUIRE(r.status == 200);
    doc = ParseJson(r.body);
    for (const auto& a : (*doc)["data"]["assemblies"].GetArray()) {
      if (std::string(a["name"].GetString()) == "GRCh37") grch37 = &a;
    }
  }
  REQUIRE(grch37 != nullptr);
  const auto& contigs = (*grch37)["contigs"];
  REQUIRE(contigs.Size() == 1);
  const auto& chr20 = contigs[0];
  CHECK(std::string(chr20["name"].GetString()) == "20");
  CHECK(std::string(chr20["aliases"][0].GetString()) == "chr20");
  const auto length = s->reference->ContigLength("20");
  REQUIRE(length);
  CHECK(chr20["length"].GetInt64() == *length);
  // The digest recomputed here from the FASTA (upper case; chr20 has only ACGTN).
  auto bases = s->reference->Fetch("20", 0, *length);
  REQUIRE(bases.ok());
  CHECK(std::string(chr20["md5"].GetString()) ==
        dnaserve::HexDigest(dnaserve::DigestAlgorithm::kMd5, *bases));
}

namespace {

struct CatalogueSite {
  std::string symbol, gene_id;
  int64_t tss = 0;  // 1-based
  char strand = '+';
};

std::vector<CatalogueSite> CatalogueSites(const ScoreService& s) {
  std::vector<CatalogueSite> sites;
  std::istringstream lines(ReadFile(s.built.catalogue));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string contig, tss, strand, symbol, gene_id;
    f >> contig >> tss >> strand >> symbol >> gene_id;
    sites.push_back({symbol, gene_id, std::stoll(tss), strand[0]});
  }
  std::sort(sites.begin(), sites.end(),
            [](const CatalogueSite& a, const CatalogueSite& b) { return a.tss < b.tss; });
  return sites;
}

// The default model of `task`, as the models list publishes it.
std::string DefaultModel(const ScoreService& s, const std::string& task) {
  auto r = GatewayRequest("GET", s.base, "/v1/tasks/" + task + "/models",
                          {"Authorization: Bearer " + s.svc->keys().alice});
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  REQUIRE((*doc)["default_model"].IsString());
  return (*doc)["default_model"].GetString();
}

// Waits until the gateway knows the models of every scorer's task (the fixture waits for
// splice only): before that, admission answers 503 for the others.
void WaitForRosters(const ScoreService& s) {
  for (const char* task : {"expression", "chromatin", "promoter"}) {
    for (int i = 0; i < 300; ++i) {
      if (HttpRequest("GET", s.base + "/v1/tasks/" + task + "/models", {}, "").status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

std::string PredictBody(const std::string& sequence, const std::string& options) {
  return "{\"sequence\": \"" + sequence + "\", \"options\": " + options + "}";
}

}  // namespace

TEST_CASE("variant scoring: expression, chromatin and promoter, each naming its model",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  WaitForRosters(*s);
  // A start site with no other within 10 kb, and an SNV 40 bp into its gene.
  const std::vector<CatalogueSite> sites = CatalogueSites(*s);
  const CatalogueSite* lonely = nullptr;
  for (size_t i = 0; i < sites.size() && lonely == nullptr; ++i) {
    bool alone = sites[i].tss > 20000;
    for (size_t j = 0; j < sites.size(); ++j) {
      if (j != i && std::llabs(sites[j].tss - sites[i].tss) < 10000) alone = false;
    }
    if (alone) lonely = &sites[i];
  }
  REQUIRE(lonely != nullptr);
  const int64_t pos = lonely->strand == '+' ? lonely->tss + 40 : lonely->tss - 40;
  const std::string ref = s->Base(pos);
  const std::string snv = Snv(pos, ref, std::string(1, OtherBase(ref[0])));
  // And one more than 4,599 bp (the default window) from every start site.
  int64_t far = 0;
  for (size_t i = 0; i + 1 < sites.size() && far == 0; ++i) {
    if (sites[i + 1].tss - sites[i].tss > 30000 && sites[i].tss > 20000 &&
        s->Base(sites[i].tss + 15000) != "N") {
      far = sites[i].tss + 15000;
    }
  }
  REQUIRE(far > 0);
  const std::string far_snv = Snv(far, s->Base(far), std::string(1, OtherBase(s->Base(far)[0])));
  const std::string scorers =
      ", \"scorers\": {\"splice\": {}, \"expression\": {\"contexts\": [\"E066\", "
      "\"UBERON:0002048\", \"brain\"]}, \"chromatin\": null, \"promoter\": {}}";
  auto r = s->Post(Body({Quoted(snv), Quoted(far_snv), Quoted(Snv(pos, ref, ref)),
                         Quoted("chr20:" + std::to_string(pos) + ":" +
                                std::string(1, OtherBase(ref[0])) + ":" + ref)},
                        scorers));
  INFO(r.body.substr(0, 3000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& data = (*doc)["data"];
  const auto& results = data["results"];
  REQUIRE(results.Size() == 4);

  // Every scorer names the default model of its task and that package's digest.
  std::set<std::string> digests;
  for (const char* task : {"splice", "expression", "chromatin", "promoter"}) {
    INFO(task);
    REQUIRE(data["scorers"].HasMember(task));
    CHECK(std::string(data["scorers"][task]["model"].GetString()) == DefaultModel(*s, task));
    const std::string digest = data["scorers"][task]["package_digest"].GetString();
    CHECK(digest.rfind("sha256:", 0) == 0);
    CHECK(digest.size() == 7 + 64);
    digests.insert(digest);
  }
  CHECK(digests.size() == 4);
  // Per-variant errors stay per variant, whatever the scorers.
  CHECK(std::string(results[2]["error"]["code"].GetString()) == "invalid_variant");
  CHECK(std::string(results[3]["error"]["code"].GetString()) == "reference_mismatch");
  CHECK_FALSE(results[3].HasMember("expression"));
  CHECK(data["counts"]["scored"].GetInt64() == 2);

  // expression: the contexts as the worker resolved them, the gene, REF and ALT levels.
  const auto& contexts = data["scorers"]["expression"]["contexts"];
  REQUIRE(contexts.Size() == 3);
  CHECK(contexts[0]["matched"].GetBool());
  CHECK(std::string(contexts[0]["id"].GetString()) == "E066");
  CHECK(contexts[1]["matched"].GetBool());
  CHECK(std::string(contexts[1]["id"].GetString()) == "E096");  // UBERON:0002048, lung
  CHECK(data["scorers"]["expression"]["window"].GetInt64() == 4599);
  const auto& genes = results[0]["expression"];
  REQUIRE(genes.Size() == 1);
  CHECK(std::string(genes[0]["gene_id"].GetString()) == lonely->gene_id);
  CHECK(genes[0]["tss"].GetInt64() == lonely->tss);
  CHECK(genes[0]["tss_distance"].GetInt64() == 40);
  REQUIRE(genes[0]["contexts"].Size() == 3);
  for (const auto& c : genes[0]["contexts"].GetArray()) {
    const double ref_log = c["ref_log_tpm"].GetDouble();
    const double alt_log = c["alt_log_tpm"].GetDouble();
    CHECK(c["ref_tpm"].GetDouble() == Approx(std::max(0.0, std::expm1(ref_log))).epsilon(1e-3));
    const double tpm_ref = std::max(0.0, std::expm1(ref_log));
    const double tpm_alt = std::max(0.0, std::expm1(alt_log));
    CHECK(c["log2_fold_change"].GetDouble() ==
          Approx(std::log2((tpm_alt + 1) / (tpm_ref + 1))).margin(2e-4));
  }
  // The contexts are different model inputs: not all three REF levels are equal.
  const auto& gc = genes[0]["contexts"];
  CHECK_FALSE((gc[0]["ref_log_tpm"].GetDouble() == gc[1]["ref_log_tpm"].GetDouble() &&
               gc[1]["ref_log_tpm"].GetDouble() == gc[2]["ref_log_tpm"].GetDouble()));
  CHECK(results[1]["expression"].Size() == 0);  // no start site in the window

  // chromatin: the top 10 of every feature, by |ALT - REF|; REF is what the chromatin task
  // says of the same 1,000 bp window (the variant at its centre).
  CHECK(data["scorers"]["chromatin"]["top"].GetInt64() == 10);
  const int64_t features_total = data["scorers"]["chromatin"]["features_total"].GetInt64();
  CHECK(features_total == 919);
  const auto& features = results[0]["chromatin"];
  REQUIRE(features.Size() == 10);
  for (rapidjson::SizeType i = 0; i < features.Size(); ++i) {
    const auto& f = features[i];
    CHECK(f["delta"].GetDouble() ==
          Approx(f["alt"].GetDouble() - f["ref"].GetDouble()).margin(2e-4));
    if (i > 0) {
      CHECK(std::fabs(features[i - 1]["delta"].GetDouble()) + 2e-4 >=
            std::fabs(f["delta"].GetDouble()));
    }
  }
  const int64_t width = data["scorers"]["chromatin"]["window_bp"].GetInt64();
  auto window = s->reference->Fetch("20", pos - 1 - width / 2, pos - 1 + width / 2);
  REQUIRE(window.ok());
  auto chromatin = GatewayRequest(
      "POST", s->base, "/v1/tasks/chromatin/predict",
      {"Authorization: Bearer " + s->svc->keys().alice, "Content-Type: application/json"},
      PredictBody(*window, "{\"threshold\": 0}"));
  REQUIRE(chromatin.status == 200);
  auto cdoc = ParseJson(chromatin.body);
  std::map<int64_t, double> task_probability;
  const auto& by_category = (*cdoc)["data"]["windows"][0]["features"];
  for (auto m = by_category.MemberBegin(); m != by_category.MemberEnd(); ++m) {
    for (const auto& f : m->value.GetArray()) {
      task_probability[f["index"].GetInt64()] = f["probability"].GetDouble();
    }
  }
  for (const auto& f : features.GetArray()) {
    INFO(f["name"].GetString());
    CHECK(f["ref"].GetDouble() == Approx(task_probability[f["index"].GetInt64()]).margin(1e-4));
  }

  // promoter: three windows (centres -1000, 0, +1000), the largest of each allele; the REF
  // maximum is what the promoter task says of its window.
  const auto& promoter = results[0]["promoter"];
  CHECK(promoter["windows"].GetInt64() == 3);
  CHECK(promoter["delta"].GetDouble() ==
        Approx(promoter["alt"].GetDouble() - promoter["ref"].GetDouble()).margin(2e-4));
  const int64_t pwidth = data["scorers"]["promoter"]["window_bp"].GetInt64();
  CHECK(data["scorers"]["promoter"]["step"].GetInt64() == pwidth / 2);
  const int64_t centre = pos - 1 + promoter["ref_offset"].GetInt64();
  auto pwindow = s->reference->Fetch("20", centre - pwidth / 2, centre + pwidth / 2);
  REQUIRE(pwindow.ok());
  auto predicted = GatewayRequest(
      "POST", s->base, "/v1/tasks/promoter/predict",
      {"Authorization: Bearer " + s->svc->keys().alice, "Content-Type: application/json"},
      PredictBody(*pwindow, "{}"));
  REQUIRE(predicted.status == 200);
  auto pdoc = ParseJson(predicted.body);
  CHECK(promoter["ref"].GetDouble() ==
        Approx((*pdoc)["data"]["window_details"][0]["score"].GetDouble()).margin(1e-4));

  // Options: top and distance are applied.
  auto small = s->Post(Body({Quoted(snv)}, ", \"scorers\": {\"chromatin\": {\"top\": 3}, "
                                           "\"promoter\": {\"distance\": 0}}"));
  REQUIRE(small.status == 200);
  auto sdoc = ParseJson(small.body);
  CHECK((*sdoc)["data"]["results"][0]["chromatin"].Size() == 3);
  CHECK((*sdoc)["data"]["results"][0]["promoter"]["windows"].GetInt64() == 1);
  CHECK_FALSE((*sdoc)["data"]["results"][0].HasMember("splice"));
  CHECK_FALSE((*sdoc)["data"]["scorers"].HasMember("splice"));
  CHECK(std::string((*sdoc)["meta"]["model"].GetString()) ==
        (*sdoc)["data"]["scorers"]["chromatin"]["model"].GetString());
  // The same variant's chromatin scores alone as among the others (by feature: two features
  // with the same |delta| may come in either order once a float moves by an ulp).
  const auto& alone = (*sdoc)["data"]["results"][0]["chromatin"][0];
  bool found = false;
  for (const auto& f : features.GetArray()) {
    if (f["index"].GetInt64() != alone["index"].GetInt64()) continue;
    found = true;
    CHECK(f["delta"].GetDouble() == alone["delta"].GetDouble());
    CHECK(f["ref"].GetDouble() == alone["ref"].GetDouble());
  }
  CHECK(found);
}

TEST_CASE("variant scoring: the other scorers' options are checked, and a scorer whose model "
          "is not served is a clear error",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  const std::string v = Quoted("chr20:100000:A:G");
  for (const std::string scorers :
       {"{\"expression\": {}}", "{\"expression\": {\"contexts\": []}}",
        "{\"chromatin\": {\"top\": 0}}", "{\"promoter\": {\"distance\": 10001}}",
        "{\"promoter\": {\"window\": 5}}"}) {
    auto r = s->Post(Body({v}, ", \"scorers\": " + scorers));
    INFO(scorers << " -> " << r.body);
    CHECK(r.status == 422);
    CHECK(r.body.find("\"scorers\"") != std::string::npos);
  }
  // A gateway whose chromatin workers never answer: the chromatin scorer cannot run, the
  // others still do.
  std::string workers;
  std::istringstream entries(s->svc->workers_spec());
  for (std::string entry; std::getline(entries, entry, ',');) {
    if (entry.rfind("chromatin=", 0) == 0) entry = "chromatin=127.0.0.1:" + std::to_string(FreePort());
    workers += (workers.empty() ? "" : ",") + entry;
  }
  GatewayLaunch launch = s->svc->AnotherGateway(s->dir + "/gateway-no-chromatin.log");
  launch.redis_url = s->svc->redis_url() + "/2";
  launch.workers = workers;
  LaunchedGateway gateway;
  gateway.Start(std::move(launch));
  REQUIRE(gateway.WaitUntilListening(std::chrono::seconds(30)));
  const std::string base = gateway.base_url();
  for (int i = 0; i < 300; ++i) {
    if (HttpRequest("GET", base + "/v1/tasks/promoter/models", {}, "").status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::vector<std::string> headers = {"Authorization: Bearer " + s->svc->keys().alice,
                                            "Content-Type: application/json"};
  auto refused = HttpRequest("POST", base + kPath, headers,
                             Body({v}, ", \"scorers\": {\"chromatin\": {}}"), 60);
  INFO(refused.body);
  CHECK(refused.status == 503);
  auto error = ParseJson(refused.body);
  REQUIRE(error->HasMember("error"));
  CHECK_THAT(std::string((*error)["error"]["message"].GetString()),
             Catch::Contains("chromatin scorer"));
  auto promoter = HttpRequest("POST", base + kPath, headers,
                              Body({v}, ", \"scorers\": {\"promoter\": {}}"), 60);
  CHECK(promoter.status == 200);
}

TEST_CASE("variant scoring: the Python SDK's score_variants and the MCP tool score_variants",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  WaitForRosters(*s);
  const std::string snv = Snv(s->acceptor_g[0], "G", "C");
  // The SDK from this checkout (its dependencies are Debian's), against this service.
  const std::string script =
      "import json, os\n"
      "from dnaserve_client import Client, DnaserveError\n"
      "c = Client(os.environ['DNASERVE_URL'], os.environ['DNASERVE_API_KEY'])\n"
      "r = c.score_variants(['" + snv + "', 'chr20:1:A:*'], splice={'distance': 10},\n"
      "                     expression=['E066'], chromatin={'top': 2}, promoter=True)\n"
      "print(json.dumps({'data': r.data, 'model': r.model}))\n"
      "try:\n"
      "    c.score_variants(['" + snv + "'], chromatin={'top': 0})\n"
      "except DnaserveError as e:\n"
      "    print(json.dumps({'status': e.status, 'code': e.code}))\n";
  const std::string path = s->dir + "/sdk_score.py";
  std::ofstream(path) << script;
  std::string out;
  const int rc = RunCommand({"/usr/bin/python3", path}, &out,
                            {{"PYTHONPATH", SourceDir() + "/clients/python"},
                             {"DNASERVE_URL", s->base},
                             {"DNASERVE_API_KEY", s->svc->keys().alice}});
  INFO(out);
  REQUIRE(rc == 0);
  std::istringstream lines(out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  auto sdk = ParseJson(first);
  const auto& data = (*sdk)["data"];
  CHECK(data["scorers"]["splice"]["distance"].GetInt64() == 10);
  CHECK(data["scorers"]["chromatin"]["top"].GetInt64() == 2);
  CHECK(data["scorers"]["promoter"]["distance"].GetInt64() == 1000);
  CHECK(std::string(data["scorers"]["expression"]["contexts"][0]["id"].GetString()) == "E066");
  CHECK(data["results"][0]["chromatin"].Size() == 2);
  CHECK(data["results"][0].HasMember("promoter"));
  CHECK(data["results"][0].HasMember("expression"));
  CHECK(std::string(data["results"][1]["error"]["code"].GetString()) == "unsupported_allele");
  CHECK(std::string((*sdk)["model"].GetString()) == "splice-human");
  auto refused = ParseJson(second);
  CHECK((*refused)["status"].GetInt() == 422);
  CHECK(std::string((*refused)["code"].GetString()) == "validation_failed");

  // The CLI: a small VCF (a multi-allelic record is one variant per ALT) and one more variant.
  const int64_t g = s->acceptor_g[0];
  const std::string vcf_path = s->dir + "/small.vcf";
  std::ofstream(vcf_path) << "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                          << "20\t" << g << "\t.\tG\tC,T\t.\t.\t.\n";
  const std::string cli_out = s->dir + "/cli-score.json";
  std::string cli_log;
  const int cli_rc = RunCommand(
      {"/usr/bin/python3", "-c",
       "import sys; from dnaserve_client.cli import main; sys.exit(main(sys.argv[1:]))",
       "--url", s->base, "score-variants", "chr20:1:A:*", "--vcf", vcf_path, "--top", "1",
       "--splice", "-o", cli_out},
      &cli_log,
      {{"PYTHONPATH", SourceDir() + "/clients/python"},
       {"DNASERVE_API_KEY", s->svc->keys().alice}});
  INFO(cli_log);
  REQUIRE(cli_rc == 0);
  auto cli = ParseJson(ReadFile(cli_out));
  const auto& cli_results = (*cli)["data"]["results"];
  REQUIRE(cli_results.Size() == 3);
  CHECK(std::string(cli_results[0]["error"]["code"].GetString()) == "unsupported_allele");
  CHECK(std::string(cli_results[1]["input"].GetString()) == "20:" + std::to_string(g) + ":G:C");
  CHECK(cli_results[1]["splice"]["DS_AL"].GetDouble() > 0.3);
  CHECK(cli_results[2]["chromatin"].Size() == 1);
  CHECK(cli_log.find("1 of 3 variants were not scored") != std::string::npos);

  // MCP: one stateless tools/call.
  const std::vector<std::string> headers = {
      "Authorization: Bearer " + s->svc->keys().alice, "Content-Type: application/json",
      "Accept: application/json, text/event-stream", "MCP-Protocol-Version: 2025-06-18"};
  auto call = HttpRequest(
      "POST", s->base + "/mcp", headers,
      "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": {\"name\": "
      "\"score_variants\", \"arguments\": {\"variants\": [\"" + snv + "\"], \"scorers\": "
      "{\"splice\": {}, \"chromatin\": {\"top\": 1}}}}}",
      120);
  INFO(call.body.substr(0, 2000));
  REQUIRE(call.status == 200);
  auto rpc = ParseJson(call.body);
  const auto& result = (*rpc)["result"];
  CHECK_FALSE(result["isError"].GetBool());
  const auto& sc = result["structuredContent"];
  CHECK(std::string(sc["status"].GetString()) == "completed");
  CHECK(std::string(sc["task"].GetString()) == "variant_score");
  CHECK(sc["results_total"].GetInt64() == 1);
  CHECK(sc["results"][0]["splice"]["DS_AL"].IsNumber());
  CHECK(sc["results"][0]["chromatin"].Size() == 1);
  CHECK(std::string(sc["scorers"]["chromatin"]["package_digest"].GetString()).rfind("sha256:", 0) ==
        0);
  // The tool's description names each scorer's model, from the packages the workers report.
  auto list = HttpRequest("POST", s->base + "/mcp", headers,
                          "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/list\"}", 30);
  REQUIRE(list.status == 200);
  auto tools = ParseJson(list.body);
  std::string description;
  for (const auto& t : (*tools)["result"]["tools"].GetArray()) {
    if (std::string(t["name"].GetString()) == "score_variants") {
      description = t["description"].GetString();
      CHECK(t["inputSchema"]["properties"].HasMember("scorers"));
    }
  }
  for (const char* task : {"splice", "expression", "chromatin", "promoter"}) {
    CHECK_THAT(description, Catch::Contains(DefaultModel(*s, task)));
  }
}

// ---- batch jobs: a VCF body or more than 100 variants (runner/workflows/variant_score_batch.h)

namespace {

std::string VcfOf(const std::vector<std::string>& records) {
  std::string text = "##fileformat=VCFv4.2\n##contig=<ID=chr20>\n"
                     "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  for (const auto& r : records) text += r + "\n";
  return text;
}

// "chr20:pos:ref:alt" -> its VCF record.
std::string RecordOf(const std::string& variant) {
  std::vector<std::string> parts;
  std::istringstream in(variant);
  for (std::string p; std::getline(in, p, ':');) parts.push_back(p);
  REQUIRE(parts.size() == 4);
  return parts[0] + "\t" + parts[1] + "\t.\t" + parts[2] + "\t" + parts[3] + "\t.\t.\t.";
}

HttpResult PostVcf(const ScoreService& s, const std::string& body,
                   const std::string& content_type = "text/x-vcf",
                   const std::string& query = "") {
  return GatewayRequest("POST", s.base, kPath + query,
                        {"Authorization: Bearer " + s.svc->keys().alice,
                         "Content-Type: " + content_type},
                        body, 300);
}

HttpResult GetAsAlice(const ScoreService& s, const std::string& path) {
  return GatewayRequest("GET", s.base, path, {"Authorization: Bearer " + s.svc->keys().alice});
}

std::string JobIdOf(const HttpResult& accepted) {
  REQUIRE(accepted.status == 202);
  auto doc = ParseJson(accepted.body);
  return (*doc)["data"]["job_id"].GetString();
}

// Polls the job until it has finished; its final answer.
HttpResult FinishedJob(const ScoreService& s, const std::string& job_id,
                       std::chrono::seconds timeout = std::chrono::seconds(900)) {
  HttpResult last;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    last = GetAsAlice(s, "/v1/tasks/jobs/" + job_id);
    if (last.status != 202) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  FAIL("job " << job_id << " did not finish; last answer " << last.body);
  return last;
}

// The job's annotated VCF, saved as `name` in the fixture's directory.
std::string SaveAnnotatedVcf(const ScoreService& s, const std::string& job_id,
                             const std::string& name) {
  auto file = GetAsAlice(s, "/v1/tasks/jobs/" + job_id + "/files/annotated.vcf.gz");
  REQUIRE(file.status == 200);
  CHECK(file.Header("content-type").value_or("") == "application/gzip");
  const std::string path = s.dir + "/" + name;
  WriteFile(path, file.body);
  return path;
}

std::string Bcftools(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/bcftools"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  INFO("bcftools " << args.front());
  REQUIRE(RunCommand(argv, &out, {}, /*drop_stderr=*/true) == 0);
  return out;
}

std::string BgzipText(const ScoreService& s, const std::string& name, const std::string& text) {
  const std::string path = s.dir + "/" + name;
  WriteFile(path, text);
  std::string out;
  REQUIRE(RunCommand({"/usr/bin/bgzip", "-f", path}, &out) == 0);
  return ReadFile(path + ".gz");
}

// `zeros` bytes of zeros as one gzip member: about 1/1000 of that on the wire.
std::string GzipBomb(size_t zeros) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  const std::string block(1 << 20, '\0');
  std::string out;
  std::vector<char> buffer(1 << 16);
  for (size_t done = 0; done < zeros; done += block.size()) {
    const bool last = done + block.size() >= zeros;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    z.avail_in = static_cast<uInt>(block.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(buffer.data(), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

std::string ErrorCodeOf(const rapidjson::Value& result) {
  return result.HasMember("error") ? result["error"]["code"].GetString() : "";
}

}  // namespace

TEST_CASE("variant scoring: a VCF body is a batch job whose annotated VCF bcftools reads",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  const int64_t acceptor = s->acceptor_g[0];
  const std::string far = RandomSnvs(*s, 1, 99)[0];
  const std::string indel_alt = "A" + std::string(60, 'C');
  const std::vector<std::string> records = {
      RecordOf(Snv(acceptor, "G", "C")),                      // 0: scored
      RecordOf(far),                                          // 1: scored
      "chr20\t" + std::to_string(acceptor) + "\t.\tG\tA,T\t.\t.\t.",  // 2, 3: split per ALT
      "chr20\t" + std::to_string(acceptor) + "\t.\tT\tC\t.\t.\t.",    // 4: REF mismatch
      "chrUn_gl000220\t100\t.\tA\tG\t.\t.\t.",                        // 5: unknown contig
      "chr20\t99999999\t.\tA\tG\t.\t.\t.",                            // 6: off the contig
      "chr20\t100000\t.\tA\t<DEL>\t.\t.\t.",                          // 7: symbolic
      "chr20\t100000\t.\tA\t*\t.\t.\t.",                              // 8: '*'
      "chr20\t100000\t.\tA\t" + indel_alt + "\t.\t.\t.",              // 9: indel > 50 bp
      "chr20\t" + std::to_string(acceptor) + "\t.\tg\tc\t.\t.\t.",    // 10: lower case = 0
  };
  auto accepted = PostVcf(*s, BgzipText(*s, "batch.vcf", VcfOf(records)), "application/gzip");
  const std::string job_id = JobIdOf(accepted);
  auto done = FinishedJob(*s, job_id);
  REQUIRE(done.status == 200);
  auto summary = ParseJson(done.body);
  const auto& data = (*summary)["data"];
  const auto& results = data["results"];
  REQUIRE(results.Size() == 11);
  for (rapidjson::SizeType i = 0; i < results.Size(); ++i) {
    CHECK(results[i]["index"].GetInt64() == static_cast<int64_t>(i));
  }
  CHECK(ErrorCodeOf(results[0]).empty());
  CHECK(ErrorCodeOf(results[1]).empty());
  CHECK(ErrorCodeOf(results[2]).empty());
  CHECK(ErrorCodeOf(results[3]).empty());
  CHECK(std::string(results[3]["variant"]["alt"].GetString()) == "T");
  CHECK(ErrorCodeOf(results[4]) == "reference_mismatch");
  CHECK(ErrorCodeOf(results[5]) == "unknown_contig");
  CHECK(ErrorCodeOf(results[6]) == "position_out_of_range");
  CHECK(ErrorCodeOf(results[7]) == "unsupported_allele");
  CHECK(ErrorCodeOf(results[8]) == "unsupported_allele");
  CHECK(ErrorCodeOf(results[9]) == "indel_too_long");
  CHECK(ErrorCodeOf(results[10]) == "duplicate_variant");
  CHECK(data["counts"]["errors"].GetInt64() == 7);
  CHECK(data["errors_by_code"]["unsupported_allele"].GetInt64() == 2);
  const std::string model = data["scorers"]["splice"]["model"].GetString();
  const std::string digest = data["scorers"]["splice"]["package_digest"].GetString();
  CHECK(digest.rfind("sha256:", 0) == 0);
  CHECK((*summary)["meta"]["batch"].GetBool());
  CHECK((*summary)["meta"]["chunks"].GetInt64() == 1);

  // The same variant scored alone, synchronously: the same scores.
  auto alone = s->Post(Body({Quoted(Snv(acceptor, "G", "C"))}));
  REQUIRE(alone.status == 200);
  auto alone_doc = ParseJson(alone.body);
  CHECK(SpliceText((*alone_doc)["data"]["results"][0]) == SpliceText(results[0]));
  CHECK(results[0]["splice"]["DS_max"].GetDouble() > 0.1);  // the acceptor's G, changed

  // The annotated VCF: every record in order, bcftools reads it and its annotation fields.
  const std::string vcf = SaveAnnotatedVcf(*s, job_id, "batch.annotated.vcf.gz");
  CHECK(data["files"][0]["bytes"].GetInt64() == static_cast<int64_t>(ReadFile(vcf).size()));
  const auto body = Bcftools({"view", "-H", vcf});
  CHECK(std::count(body.begin(), body.end(), '\n') == 11);
  const auto header = Bcftools({"view", "-h", vcf});
  CHECK(header.find("##dnaserve_scorer=<ID=splice,Model=" + model +
                    ",PackageDigest=" + digest + ">") != std::string::npos);
  const auto fields = Bcftools({"+split-vep", "-l", "-a", "DNASERVE_SPLICE", vcf});
  CHECK(fields.find("DS_AG") != std::string::npos);
  CHECK(fields.find("DP_DL") != std::string::npos);
  CHECK(fields.find("Consequence") != std::string::npos);
  const auto ds = Bcftools({"+split-vep", "-a", "DNASERVE_SPLICE", "-f", "%POS %ALT %DS_MAX\n",
                            "-d", vcf});
  std::istringstream first_line(ds);
  int64_t pos = 0;
  std::string alt;
  double ds_max = -1;
  first_line >> pos >> alt >> ds_max;
  CHECK(pos == acceptor);
  CHECK(alt == "C");
  CHECK(ds_max == results[0]["splice"]["DS_max"].GetDouble());
  const auto errors = Bcftools({"query", "-f", "%INFO/DNASERVE_ERROR\n", vcf});
  CHECK(errors.find("reference_mismatch") != std::string::npos);
  CHECK(errors.find("indel_too_long") != std::string::npos);

  // Only what a job publishes is served, and only to its owner.
  CHECK(GetAsAlice(*s, "/v1/tasks/jobs/" + job_id + "/files/chunk-0").status == 404);
  auto foreign = GatewayRequest("GET", s->base,
                                "/v1/tasks/jobs/" + job_id + "/files/annotated.vcf.gz",
                                {"Authorization: Bearer " + s->svc->keys().bob});
  CHECK(foreign.status == 404);
}

TEST_CASE("variant scoring: hostile batch inputs get a clear 4xx or per-variant errors",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  // 100,000 records: past the 20,000 a job scores, named in a 413.
  std::vector<std::string> many;
  for (int i = 0; i < 100000; ++i) many.push_back("chr20\t" + std::to_string(100 + i) +
                                                  "\t.\tA\tG\t.\t.\t.");
  auto huge = PostVcf(*s, BgzipText(*s, "huge.vcf", VcfOf(many)), "application/gzip");
  CHECK(huge.status == 413);
  CHECK(huge.body.find("20000") != std::string::npos);
  // A gzip bomb: 256 MiB of zeros in about 256 kB. Refused once 64 MiB are inflated.
  auto bomb = PostVcf(*s, GzipBomb(size_t{256} << 20), "application/gzip");
  CHECK(bomb.status == 413);
  CHECK(bomb.body.find("64 MiB") != std::string::npos);
  auto corrupt = PostVcf(*s, std::string("\x1f\x8b\x08\x00garbage", 12), "application/gzip");
  CHECK(corrupt.status == 400);
  auto not_vcf = PostVcf(*s, "hello\tworld\n");
  CHECK(not_vcf.status == 400);
  auto expression = PostVcf(*s, VcfOf({RecordOf(Snv(100000, "A", "G"))}), "text/x-vcf",
                            "?scorers=expression");
  CHECK(expression.status == 422);
  for (const auto* r : {&huge, &bomb, &corrupt, &not_vcf, &expression}) {
    CHECK(ParseJson(r->body)->HasMember("error"));
  }
  // 10,000 records are one job; none of them on a contig the reference holds, so every one is
  // its own error and the job still completes.
  std::vector<std::string> unknown;
  for (int i = 0; i < 10000; ++i) unknown.push_back("chr99\t" + std::to_string(100 + i) +
                                                    "\t.\tA\tG\t.\t.\t.");
  auto accepted = PostVcf(*s, VcfOf(unknown));
  const std::string job_id = JobIdOf(accepted);
  auto done = FinishedJob(*s, job_id);
  REQUIRE(done.status == 200);
  auto summary = ParseJson(done.body);
  CHECK((*summary)["data"]["counts"]["variants"].GetInt64() == 10000);
  CHECK((*summary)["data"]["errors_by_code"]["unknown_contig"].GetInt64() == 10000);
  CHECK((*summary)["meta"]["chunks"].GetInt64() == 100);
  // More than 100 JSON variants are a job too, whatever Prefer says.
  auto json_batch = s->Post(Body(std::vector<std::string>(101, Quoted("chr99:100:A:G"))));
  auto json_done = FinishedJob(*s, JobIdOf(json_batch));
  REQUIRE(json_done.status == 200);
  CHECK((*ParseJson(json_done.body))["data"]["errors_by_code"]["unknown_contig"].GetInt64() ==
        101);
}

TEST_CASE("variant scoring: a batch job resumes after its runner is killed, with the same output",
          "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  // Four chunks of real scoring: packed splice calls score a chunk in seconds, so the kill
  // below must leave chunks after the one being scored (with two, the job could finish first).
  std::vector<std::string> records;
  for (const auto& v : RandomSnvs(*s, 400, 4242)) records.push_back(RecordOf(v));
  const std::string vcf = VcfOf(records);
  auto accepted = PostVcf(*s, vcf);
  const std::string job_id = JobIdOf(accepted);
  // Once the first chunk is checkpointed (the second is being scored), the runner dies.
  REQUIRE(WaitFor(
      [&] {
        auto polled = GetAsAlice(*s, "/v1/tasks/jobs/" + job_id);
        return polled.status == 202 && polled.body.find("chunk 2 of 4") != std::string::npos;
      },
      std::chrono::seconds(600)));
  s->runner.Kill();
  ChildProcess replacement;
  const std::string log = s->dir + "/runner-replacement.log";
  REQUIRE(StartRunner(&replacement, s->svc->redis_url() + "/2", s->workers, log,
                      {{"DNASERVE_GRCH37_CATALOGUE", s->built.catalogue},
                       {"DNASERVE_GRCH37_FASTA", s->built.fasta},
                       {"DNASERVE_VARIANT_WORK_DIR", s->dir + "/runner-scratch"}}));
  s->runner = std::move(replacement);
  auto resumed = FinishedJob(*s, job_id);
  REQUIRE(resumed.status == 200);
  // The new runner read the first chunk from its checkpoint rather than scoring it again.
  const std::string runner_log = ReadFile(log);
  CHECK(runner_log.find("variant_batch_chunk_resumed") != std::string::npos);
  CHECK(runner_log.find(job_id) != std::string::npos);

  // The same VCF again, uninterrupted: byte for byte the same annotated VCF, the same results.
  const std::string again_id = JobIdOf(PostVcf(*s, vcf));
  auto again = FinishedJob(*s, again_id);
  REQUIRE(again.status == 200);
  const std::string first = ReadFile(SaveAnnotatedVcf(*s, job_id, "resumed.vcf.gz"));
  const std::string second = ReadFile(SaveAnnotatedVcf(*s, again_id, "uninterrupted.vcf.gz"));
  CHECK(first.size() > 100);
  CHECK(first == second);
  auto a = ParseJson(resumed.body);
  auto b = ParseJson(again.body);
  CHECK((*a)["data"]["results"] == (*b)["data"]["results"]);
  CHECK((*a)["data"]["files"][0]["sha256"] == (*b)["data"]["files"][0]["sha256"]);
}

namespace {

// The shipped splice background (worker/packages/splice-human/variant_background.tsv): each
// statistic's values, read here independently of the worker's loader.
std::map<std::string, std::vector<double>> ShippedSpliceBackground() {
  std::ifstream in(SourceDir() + "/worker/packages/splice-human/variant_background.tsv");
  std::map<std::string, std::vector<double>> out;
  std::string line;
  REQUIRE(std::getline(in, line));
  std::vector<std::string> header;
  std::istringstream names(line);
  for (std::string name; std::getline(names, name, '\t');) header.push_back(name);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    for (size_t c = 0; std::getline(fields, field, '\t'); ++c) {
      if (c > 0) out[header[c]].push_back(std::stod(field));
    }
  }
  return out;
}

double ShareAtOrBelow(const std::vector<double>& values, double value) {
  const auto n = std::count_if(values.begin(), values.end(), [&](double v) { return v <= value; });
  return static_cast<double>(n) / static_cast<double>(values.size());
}

}  // namespace

TEST_CASE("variant scoring: quantiles against the shipped background, near 1 for a broken "
          "acceptor, null with a reason without a background",
          "[variant-score][quantiles]") {
  REQUIRE_SCORE_SERVICE(s);
  const auto background = ShippedSpliceBackground();
  REQUIRE(background.count("DS_max") == 1);
  const auto snvs = static_cast<int64_t>(background.at("DS_max").size());
  REQUIRE(snvs >= 1000);

  std::vector<std::string> variants;
  for (size_t i = 0; i < 5; ++i) variants.push_back(Quoted(Snv(s->acceptor_g[i], "G", "C")));
  for (const auto& r : RandomSnvs(*s, 3, 20261129)) variants.push_back(Quoted(r));
  auto r = s->Post(Body(variants));
  INFO(r.body.substr(0, 3000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& data = (*doc)["data"];
  const auto& described = data["backgrounds"]["splice"];
  REQUIRE(described["available"].GetBool());
  CHECK(described["snvs"].GetInt64() == snvs);
  CHECK(described["distance"].GetInt64() == 50);
  CHECK(std::string(described["region"].GetString()).rfind("chr20:", 0) == 0);

  double best_junction = 0.0;
  double highest_quiet = 0.0;
  for (rapidjson::SizeType i = 0; i < data["results"].Size(); ++i) {
    INFO("variant " << i);
    const auto& result = data["results"][i];
    const auto& splice = result["splice"];
    const auto& quantiles = result["quantiles"]["splice"];
    REQUIRE(quantiles.IsObject());
    // Every figure is the share of the shipped file's values at or below the published delta.
    for (const char* name : {"DS_AG", "DS_AL", "DS_DG", "DS_DL", "DS_max"}) {
      INFO(name);
      CHECK(quantiles[name].GetDouble() ==
            ShareAtOrBelow(background.at(name), splice[name].GetDouble()));
    }
    const double q = quantiles["DS_max"].GetDouble();
    if (i < 5) {
      best_junction = std::max(best_junction, q);
    } else {
      highest_quiet = std::max(highest_quiet, q);
    }
  }
  // Not every annotated acceptor's G is one the small model relies on (the test above allows
  // one of five below the random SNVs); the clearest one is in the background's far tail.
  CHECK(best_junction >= 0.99);
  CHECK(highest_quiet < best_junction);
  CHECK(highest_quiet < 0.99);

  // At another distance than the background's: null, and why.
  auto other = s->Post(Body({variants[0]}, ", \"scorers\": {\"splice\": {\"distance\": 20}, "
                                           "\"promoter\": {}}"));
  INFO(other.body.substr(0, 3000));
  REQUIRE(other.status == 200);
  auto odoc = ParseJson(other.body);
  const auto& odata = (*odoc)["data"];
  CHECK(odata["results"][0]["quantiles"]["splice"].IsNull());
  CHECK_FALSE(odata["backgrounds"]["splice"]["available"].GetBool());
  CHECK(std::string(odata["backgrounds"]["splice"]["reason"].GetString()) ==
        "the variant background of splice-human was scored at distance 50; this request used "
        "20");
  // The promoter package ships no background: its quantile is null, not invented.
  CHECK(odata["results"][0]["quantiles"]["promoter"].IsNull());
  CHECK_FALSE(odata["backgrounds"]["promoter"]["available"].GetBool());
  CHECK(std::string(odata["backgrounds"]["promoter"]["reason"].GetString()).find(
            "ships no variant background") != std::string::npos);
}
