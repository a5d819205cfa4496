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
#include <cstdlib>
#include <catch2/catch.hpp>
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
    WorkerLaunch splice;
    splice.task = "splice";
    splice.models_dir = s->dir + "/models";
    splice.log_path = s->dir + "/worker-splice.log";
    if (std::system(("mkdir -p " + splice.models_dir + " && cp -r " + SourceDir() +
                     "/worker/packages/splice-human " + splice.models_dir + "/")
                        .c_str()) != 0 ||
        !s->splice.Start(std::move(splice)) || !s->splice.WaitUntilListening()) {
      reason = "the splice worker did not start; see " + s->dir + "/worker-splice.log";
      return nullptr;
    }
    // The service's workers, but splice from the one above.
    std::string workers;
    std::istringstream entries(svc->workers_spec());
    for (std::string entry; std::getline(entries, entry, ',');) {
      if (entry.rfind("splice=", 0) == 0) entry = "splice=" + s->splice.address();
      workers += (workers.empty() ? "" : ",") + entry;
    }
    // A database of their own: the integration service's runner holds no reference.
    const std::string redis = svc->redis_url() + "/2";
    if (!StartRunner(&s->runner, redis, workers, s->dir + "/runner.log",
                     {{"DNASERVE_GRCH37_CATALOGUE", built->catalogue},
                      {"DNASERVE_GRCH37_FASTA", built->fasta},
                      {"DNASERVE_VARIANT_WORK_DIR", MakeTempDir("dnaserve-variant-score-scratch")}})) {
      reason = "the runner did not start; see " + s->dir + "/runner.log";
      return nullptr;
    }
    GatewayLaunch launch = svc->AnotherGateway(s->dir + "/gateway.log");
    launch.redis_url = redis;
    launch.workers = workers;
    s->gateway.Start(std::move(launch));
    if (!s->gateway.WaitUntilListening(std::chrono::seconds(30))) {
      reason = "the gateway did not start; see " + s->dir + "/gateway.log";
      return nullptr;
    }
    s->base = s->gateway.base_url();
    for (int i = 0; i < 300; ++i) {
      auto models = HttpRequest("GET", s->base + "/v1/tasks/splice/models", {}, "");
      if (models.status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string error;
    if (!LoadGatewayDocument(s->base, &error)) {
      reason = error;
      return nullptr;
    }
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

TEST_CASE("variant scoring: request-level errors are 4xx in the envelope", "[variant-score]") {
  REQUIRE_SCORE_SERVICE(s);
  std::vector<std::string> many(101, Quoted("chr20:100:A:G"));
  auto too_many = s->Post(Body(many));
  CHECK(too_many.status == 422);
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
