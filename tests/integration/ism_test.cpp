// POST /v1/ism (in-silico mutagenesis) end to end over real HTTP: a gateway and a runner of the
// integration service (same redis-server, a database of their own) whose runner holds the GRCh37
// chr20 reference (scripts/build-catalogue, Debian vt-examples), the bundled splice-human worker
// for the splice scorer and the service's workers for the others. Each cell checked against
// POST /v1/variants/score for the same SNV on the same stack (byte for byte), by interval and by
// sequence; the hostile inputs; the CLI's table. Every answer is checked against the served
// OpenAPI document (GatewayRequest). Skips with a message when the Debian packages cannot be had.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "runner/genome/reference_genome.h"
#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

// Its splice worker is the bundled splice-human package (per-base scores with a flank).
using IsmService = ReferenceStack;

std::unique_ptr<IsmService> MakeIsmService(std::string* reason) {
  auto s = std::make_unique<IsmService>();
  if (!s->Open("dnaserve-ism-it", reason)) return nullptr;
  // Database 5: a queue and job store of its own.
  if (!s->Start(5, true, "splice", reason)) return nullptr;
  // The gateway knows every scorer's models before the tests ask.
  for (const char* task : {"chromatin", "promoter"}) {
    for (int i = 0; i < 300; ++i) {
      if (HttpRequest("GET", s->base + "/v1/tasks/" + task + "/models", {}, "").status == 200) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return s;
}

#define REQUIRE_ISM_SERVICE(var) REQUIRE_SHARED_FIXTURE(IsmService, var, MakeIsmService)

std::string Text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return buffer.GetString();
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// The variant-score value a cell must equal, as text: splice DS_max, chromatin the first
// feature's delta, promoter's delta.
std::string ScoreValue(const rapidjson::Value& result, const std::string& scorer) {
  INFO(Text(result));
  if (scorer == "splice") return Text(result["splice"]["DS_max"]);
  if (scorer == "chromatin") return Text(result["chromatin"][0]["delta"]);
  return Text(result["promoter"]["delta"]);
}

struct Cell {
  int64_t genome_position;  // chr20, 1-based
  std::string ref, alt;
  std::string value;        // the ISM cell, as JSON text
  std::string feature;      // chromatin
};

// Cells of an ISM answer at `indices` (window offsets), every ALT, with chr20 positions
// (`to_genome` added to a position).
std::vector<Cell> CellsAt(const rapidjson::Value& data, const std::vector<size_t>& indices,
                          int64_t to_genome) {
  std::vector<Cell> out;
  for (size_t i : indices) {
    const auto& p = data["positions"][static_cast<rapidjson::SizeType>(i)];
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      Cell c;
      c.genome_position = p["position"].GetInt64() + to_genome;
      c.ref = p["ref"].GetString();
      c.alt = p["alt"][a].GetString();
      c.value = Text(p["delta"][a]);
      if (p.HasMember("feature")) c.feature = p["feature"][a].GetString();
      out.push_back(c);
    }
  }
  return out;
}

// Each cell against POST /v1/variants/score for its SNV, one request for all of them.
void CheckAgainstVariantScore(const IsmService& s, const std::vector<Cell>& cells,
                              const std::string& scorer, const std::string& options,
                              const std::string& digest) {
  std::string variants;
  for (const Cell& c : cells) {
    variants += (variants.empty() ? "" : ", ") +
                Quoted("chr20:" + std::to_string(c.genome_position) + ":" + c.ref + ":" + c.alt);
  }
  auto r = s.Post("/v1/variants/score", "{\"variants\": [" + variants + "], \"scorers\": {\"" +
                                            scorer + "\": " + options + "}}");
  INFO(r.body.substr(0, 2000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& results = (*doc)["data"]["results"];
  REQUIRE(results.Size() == cells.size());
  CHECK(std::string((*doc)["data"]["scorers"][scorer.c_str()]["package_digest"].GetString()) ==
        digest);
  for (size_t i = 0; i < cells.size(); ++i) {
    INFO("chr20:" << cells[i].genome_position << ":" << cells[i].ref << ":" << cells[i].alt);
    const auto& result = results[static_cast<rapidjson::SizeType>(i)];
    CHECK(cells[i].value == ScoreValue(result, scorer));
    if (scorer == "chromatin") {
      CHECK(cells[i].feature == std::string(result["chromatin"][0]["name"].GetString()));
    }
  }
}

// The window's REF bases and the three ALTs of each position, in A, C, G, T order.
void CheckMatrixShape(const rapidjson::Value& data, const std::string& window_bases,
                      int64_t first_position) {
  const auto& positions = data["positions"];
  REQUIRE(positions.Size() == window_bases.size());
  for (rapidjson::SizeType i = 0; i < positions.Size(); ++i) {
    const auto& p = positions[i];
    CHECK(p["position"].GetInt64() == first_position + static_cast<int64_t>(i));
    CHECK(std::string(p["ref"].GetString()) == window_bases.substr(i, 1));
    std::string alts;
    for (const auto& a : p["alt"].GetArray()) alts += a.GetString();
    std::string expected;
    for (char b : std::string("ACGT")) {
      if (b != window_bases[i]) expected += b;
    }
    CHECK(alts == expected);
    CHECK(p["delta"].Size() == 3);
  }
}

// A 20 kb stretch of chr20 with no N, and the window in its middle.
constexpr int64_t kContextStart = 5743601;
constexpr int64_t kContextEnd = 5763600;

}  // namespace

TEST_CASE("ism: by interval, every splice cell equals POST /v1/variants/score's DS_max",
          "[ism]") {
  REQUIRE_ISM_SERVICE(s);
  // Around chr20:5753600 (the OpenAPI example); the context reaches 50 + 1,000 bp (distance +
  // flank) past the window on both sides, so the scorer sees the same bases as variant scoring.
  const int64_t first = 5753598, last = 5753602;
  const std::string body =
      "{\"interval\": {\"region\": \"chr20:5,752,401-5,754,800\"}, \"window\": {\"start\": " +
      std::to_string(first) + ", \"end\": " + std::to_string(last) +
      "}, \"scorers\": {\"splice\": {\"distance\": 50}}}";
  auto r = s->Post("/v1/ism", body);
  INFO(r.body.substr(0, 3000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& data = (*doc)["data"];
  CHECK(std::string(data["task"].GetString()) == "ism");
  CHECK(std::string(data["scorer"].GetString()) == "splice");
  CHECK(std::string(data["model"].GetString()) == "splice-human");
  const std::string digest = data["package_digest"].GetString();
  CHECK(digest.rfind("sha256:", 0) == 0);
  CHECK(std::string((*doc)["meta"]["package_digest"].GetString()) == digest);
  CHECK(std::string(data["context"]["coordinates"].GetString()) == "contig");
  CHECK((*doc)["meta"]["interval"]["start"].GetInt64() == 5752401);
  CheckMatrixShape(data, s->Cut(first, last), first);
  // One worker call per SNV: its REF and ALT blocks on both strands packed together
  // (runner/workflows/splice_batch.h), so three per position.
  CHECK((*doc)["meta"]["model_calls"].GetInt64() == 3 * (last - first + 1));
  // Every cell, both ends included.
  CheckAgainstVariantScore(*s, CellsAt(data, {0, 1, 2, 3, 4}, 0), "splice", "{\"distance\": 50}",
                           digest);
}

TEST_CASE("ism: by sequence, chromatin and promoter cells equal POST /v1/variants/score",
          "[ism]") {
  REQUIRE_ISM_SERVICE(s);
  const std::string context = s->Cut(kContextStart, kContextEnd);
  REQUIRE(context.find('N') == std::string::npos);
  // Positions 10,001-10,020 of the sequence: chr20:5,753,601-5,753,620.
  const int64_t first = 10001, last = 10020;
  const int64_t to_genome = kContextStart - 1;
  for (const std::string scorer : {"chromatin", "promoter"}) {
    DYNAMIC_SECTION(scorer) {
      const std::string options = scorer == "chromatin" ? "{\"top\": 3}" : "{\"distance\": 500}";
      const std::string body = "{\"sequence\": " + Quoted(context) + ", \"window\": {\"start\": " +
                               std::to_string(first) + ", \"end\": " + std::to_string(last) +
                               "}, \"scorers\": {\"" + scorer + "\": " + options + "}}";
      auto r = s->Post("/v1/ism", body);
      INFO(r.body.substr(0, 3000));
      REQUIRE(r.status == 200);
      auto doc = ParseJson(r.body);
      const auto& data = (*doc)["data"];
      CHECK(std::string(data["scorer"].GetString()) == scorer);
      CHECK(std::string(data["context"]["coordinates"].GetString()) == "sequence");
      CHECK(data["context"]["length"].GetInt64() == static_cast<int64_t>(context.size()));
      CHECK_FALSE((*doc)["meta"].HasMember("interval"));
      CHECK(data["window_bp"].GetInt64() > 0);
      CheckMatrixShape(data, context.substr(first - 1, last - first + 1), first);
      CheckAgainstVariantScore(*s, CellsAt(data, {0, 9, 19}, to_genome), scorer, options,
                               data["package_digest"].GetString());

      // Asynchronous on request: the same matrix from the poll.
      auto submitted = s->Post("/v1/ism", body, {"Prefer: respond-async"});
      REQUIRE(submitted.status == 202);
      auto job = ParseJson(submitted.body);
      const std::string link = (*job)["data"]["links"]["result"].GetString();
      HttpResult polled;
      for (int i = 0; i < 600; ++i) {
        polled = GatewayRequest("GET", s->base, link,
                                {"Authorization: Bearer " + s->svc->keys().alice}, "", 30);
        if (polled.status == 200) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      REQUIRE(polled.status == 200);
      auto async_doc = ParseJson(polled.body);
      CHECK(Text((*async_doc)["data"]["positions"]) == Text(data["positions"]));
    }
  }
}

TEST_CASE("ism: a 200 bp window is 800 distinct chromatin calls, not 1,200", "[ism]") {
  REQUIRE_ISM_SERVICE(s);
  const std::string context = s->Cut(kContextStart, kContextEnd);
  const std::string body = "{\"sequence\": " + Quoted(context) +
                           ", \"window\": {\"start\": 5001, \"end\": 5200}, \"scorers\": "
                           "{\"chromatin\": null}}";
  auto r = s->Post("/v1/ism", body);
  INFO(r.body.substr(0, 2000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  CheckMatrixShape((*doc)["data"], context.substr(5000, 200), 5001);
  // One REF window per position (shared by its three ALTs) and three ALT windows.
  CHECK((*doc)["meta"]["model_calls"].GetInt64() == 4 * 200);
}

TEST_CASE("ism: hostile inputs are 4xx in the envelope, with where", "[ism]") {
  REQUIRE_ISM_SERVICE(s);
  const std::string context = s->Cut(kContextStart, kContextStart + 2999);
  const std::string seq = "{\"sequence\": " + Quoted(context);
  struct Case {
    std::string name, body;
    long status;
    std::string loc;  // the first error's location, joined by '.'
  };
  const std::vector<Case> cases = {
      {"window over 200 bp", seq + ", \"window\": {\"start\": 1, \"end\": 201}}", 422,
       "body.window"},
      {"window past the sequence", seq + ", \"window\": {\"start\": 2990, \"end\": 3001}}", 422,
       "body.window"},
      {"start after end", seq + ", \"window\": {\"start\": 20, \"end\": 10}}", 422,
       "body.window"},
      {"N in the window",
       "{\"sequence\": \"ACGTACGTNNACGT\", \"window\": {\"start\": 1, \"end\": 14}}", 422,
       "body.window"},
      {"no window", seq + "}", 422, "body.window"},
      {"unknown scorer",
       seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": {\"conservation\": {}}}",
       422, "body.scorers.conservation"},
      {"bad option",
       seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": {\"splice\": "
             "{\"distance\": -1}}}",
       422, "body.scorers.splice.distance"},
      {"unknown option",
       seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": {\"chromatin\": "
             "{\"distance\": 5}}}",
       422, "body.scorers.chromatin.distance"},
      {"two scorers",
       seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": {\"splice\": {}, "
             "\"promoter\": {}}}",
       422, "body.scorers"},
      {"expression on a sequence that is not its 9,198 bp window",
       seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": {\"expression\": "
             "{\"contexts\": [\"E066\"]}}}",
       422, "body.sequence"},
      {"sequence and interval",
       seq + ", \"interval\": {\"region\": \"chr20:1-100\"}, \"window\": {\"start\": 1, "
             "\"end\": 10}}",
       422, "body"},
      {"window outside the interval",
       "{\"interval\": {\"region\": \"chr20:5,000,001-5,001,000\"}, \"window\": {\"start\": "
       "5000901, \"end\": 5001001}}",
       422, "body.window"},
      {"N in the interval's window (the runner reads it)",
       "{\"interval\": {\"region\": \"chr20:1-1000\"}, \"window\": {\"start\": 1, \"end\": "
       "10}, \"scorers\": {\"chromatin\": null}}",
       422, "body.window"},
      {"unknown contig (the runner)",
       "{\"interval\": {\"region\": \"chr99:1-1000\"}, \"window\": {\"start\": 1, \"end\": "
       "10}, \"scorers\": {\"chromatin\": null}}",
       422, "body.interval.contig"},
      {"an extra key", seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"model\": \"x\"}", 422,
       "body.model"},
      {"not JSON", "{\"sequence\": ", 400, ""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto r = s->Post("/v1/ism", c.body);
    INFO(r.body.substr(0, 1500));
    CHECK(r.status == c.status);
    auto doc = ParseJson(r.body);
    REQUIRE(doc->HasMember("error"));
    if (c.status == 422) {
      CHECK(std::string((*doc)["error"]["code"].GetString()) == "validation_failed");
      CHECK(FirstErrorLocation(*doc) == c.loc);
    }
  }
  // A format other than JSON.
  auto tsv = s->Post("/v1/ism?format=bed",
                     seq + ", \"window\": {\"start\": 1, \"end\": 10}, \"scorers\": "
                           "{\"chromatin\": null}}");
  CHECK(tsv.status == 415);
}

TEST_CASE("ism: the CLI writes the matrix as a position x base table", "[ism]") {
  REQUIRE_ISM_SERVICE(s);
  const std::string context = s->Cut(kContextStart, kContextStart + 2999);
  const std::string body = "{\"sequence\": " + Quoted(context) +
                           ", \"window\": {\"start\": 1496, \"end\": 1500}, \"scorers\": "
                           "{\"chromatin\": {\"top\": 1}}}";
  auto r = s->Post("/v1/ism", body);
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const std::string table = s->dir + "/ism.tsv";
  std::string log;
  const int rc = RunCommand(
      {"/usr/bin/python3", "-c",
       "import sys; from dnaserve_client.cli import main; sys.exit(main(sys.argv[1:]))",
       "--url", s->base, "ism", "--sequence", context, "--window", "1496-1500", "--scorer",
       "chromatin", "--top", "1", "-o", table},
      &log,
      {{"PYTHONPATH", SourceDir() + "/clients/python"},
       {"DNASERVE_API_KEY", s->svc->keys().alice}});
  INFO(log);
  REQUIRE(rc == 0);
  std::istringstream lines(ReadFile(table));
  std::string line;
  REQUIRE(std::getline(lines, line));
  CHECK(line == "position\tref\tA\tC\tG\tT");
  const auto& positions = (*doc)["data"]["positions"];
  for (rapidjson::SizeType i = 0; i < positions.Size(); ++i) {
    const auto& p = positions[i];
    std::map<std::string, std::string> by_base = {{p["ref"].GetString(), ""}};
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      by_base[p["alt"][a].GetString()] = Text(p["delta"][a]);
    }
    const std::string expected = std::to_string(p["position"].GetInt64()) + "\t" +
                                 p["ref"].GetString() + "\t" + by_base["A"] + "\t" +
                                 by_base["C"] + "\t" + by_base["G"] + "\t" + by_base["T"];
    REQUIRE(std::getline(lines, line));
    CHECK(line == expected);
  }
  CHECK_FALSE(std::getline(lines, line));
  // A usage error is caught before anything is sent.
  std::string usage;
  CHECK(RunCommand({"/usr/bin/python3", "-c",
                    "import sys; from dnaserve_client.cli import main; "
                    "sys.exit(main(sys.argv[1:]))",
                    "--url", s->base, "ism", "--sequence", "ACGT", "--window", "1to4"},
                   &usage,
                   {{"PYTHONPATH", SourceDir() + "/clients/python"},
                    {"DNASERVE_API_KEY", s->svc->keys().alice}}) != 0);
  CHECK(usage.find("--window") != std::string::npos);
}
