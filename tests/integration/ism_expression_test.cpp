// POST /v1/ism with the expression scorer end to end over real HTTP (a gateway and a runner of
// the integration service on a database of their own, the runner holding the GRCh37 chr20
// reference and start-site catalogue of scripts/build-catalogue, the service's expression
// worker): each cell against POST /v1/variants/score's expression log2_fold_change for the same
// SNV, gene and context on the same stack (as JSON text); the gene chosen and named; a sequence
// that is the gene's expression window; the misuse cases as 422s at their fields; the MCP tool
// and the CLI's table. Every answer is checked against the served OpenAPI document
// (GatewayRequest). Skips with a message when the Debian packages cannot be had.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

std::unique_ptr<ReferenceStack> MakeExpressionIsmStack(std::string* reason) {
  auto s = std::make_unique<ReferenceStack>();
  if (!s->Open("dnaserve-ism-expression-it", reason)) return nullptr;
  // Database 11: a queue and job store of its own; the service's workers.
  if (!s->Start(11, false, "expression", reason)) return nullptr;
  return s;
}

#define REQUIRE_EXPRESSION_ISM_STACK(var) \
  REQUIRE_SHARED_FIXTURE(ReferenceStack, var, MakeExpressionIsmStack)

std::string Text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return buffer.GetString();
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

struct Site {
  std::string symbol, gene_id;
  int64_t tss = 0;  // 1-based
  char strand = '+';
};

std::vector<Site> CatalogueSites(const ReferenceStack& s) {
  std::vector<Site> sites;
  std::istringstream lines(ReadFile(s.built.catalogue));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string contig, tss, strand, symbol, gene_id;
    f >> contig >> tss >> strand >> symbol >> gene_id;
    sites.push_back({symbol, gene_id, std::stoll(tss), strand[0]});
  }
  std::sort(sites.begin(), sites.end(), [](const Site& a, const Site& b) { return a.tss < b.tss; });
  return sites;
}

// A '+' start site with no other within 10 kb and no N in its expression window.
Site LonelyPlusSite(const ReferenceStack& s) {
  const std::vector<Site> sites = CatalogueSites(s);
  for (size_t i = 0; i < sites.size(); ++i) {
    if (sites[i].strand != '+' || sites[i].tss < 20000) continue;
    bool alone = true;
    for (size_t j = 0; j < sites.size(); ++j) {
      if (j != i && std::llabs(sites[j].tss - sites[i].tss) < 10000) alone = false;
    }
    if (alone && s.Cut(sites[i].tss - 4599, sites[i].tss + 4598).find('N') == std::string::npos) {
      return sites[i];
    }
  }
  FAIL("no lonely '+' start site in the catalogue");
  return {};
}

// A position more than 10 kb from every start site, with no N around it.
int64_t FarFromGenes(const ReferenceStack& s) {
  const std::vector<Site> sites = CatalogueSites(s);
  for (size_t i = 0; i + 1 < sites.size(); ++i) {
    const int64_t mid = (sites[i].tss + sites[i + 1].tss) / 2;
    if (sites[i + 1].tss - sites[i].tss > 30000 && sites[i].tss > 20000 &&
        s.Cut(mid - 100, mid + 100).find('N') == std::string::npos) {
      return mid;
    }
  }
  FAIL("no stretch of chr20 30 kb without a start site");
  return 0;
}

std::string Region(int64_t start, int64_t end) {
  return "chr20:" + std::to_string(start) + "-" + std::to_string(end);
}

std::string Body(const std::string& context, int64_t first, int64_t last,
                 const std::string& expression) {
  return "{" + context + ", \"window\": {\"start\": " + std::to_string(first) +
         ", \"end\": " + std::to_string(last) + "}, \"scorers\": {\"expression\": " + expression +
         "}}";
}

std::string IntervalContext(int64_t start, int64_t end) {
  return "\"interval\": {\"region\": \"" + Region(start, end) + "\"}";
}

std::shared_ptr<rapidjson::Document> Ism(const ReferenceStack& s, const std::string& body) {
  auto r = s.Post("/v1/ism", body);
  INFO(r.body.substr(0, 3000));
  REQUIRE(r.status == 200);
  return ParseJson(r.body);
}

// Each cell against POST /v1/variants/score's expression scorer (context E066) for its SNV, the
// gene `gene_id` at `tss`: its log2_fold_change, as JSON text.
void CheckAgainstVariantScore(const ReferenceStack& s, const rapidjson::Value& data,
                              const std::string& gene_id, int64_t tss) {
  std::vector<std::string> variants, cells;
  for (const auto& p : data["positions"].GetArray()) {
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      variants.push_back("chr20:" + std::to_string(p["position"].GetInt64()) + ":" +
                         p["ref"].GetString() + ":" + p["alt"][a].GetString());
      cells.push_back(Text(p["delta"][a]));
    }
  }
  std::string list;
  for (const std::string& v : variants) list += (list.empty() ? "" : ", ") + Quoted(v);
  auto r = s.Post("/v1/variants/score", "{\"variants\": [" + list +
                                            "], \"scorers\": {\"expression\": {\"contexts\": "
                                            "[\"E066\"]}}}");
  INFO(r.body.substr(0, 2000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& results = (*doc)["data"]["results"];
  REQUIRE(results.Size() == variants.size());
  CHECK(Text((*doc)["data"]["scorers"]["expression"]["package_digest"]) ==
        Text(data["package_digest"]));
  std::set<std::string> distinct;
  for (rapidjson::SizeType i = 0; i < results.Size(); ++i) {
    INFO(variants[i] << ": " << Text(results[i]).substr(0, 800));
    const rapidjson::Value* gene = nullptr;
    for (const auto& g : results[i]["expression"].GetArray()) {
      if (gene_id == g["gene_id"].GetString() && g["tss"].GetInt64() == tss) gene = &g;
    }
    REQUIRE(gene != nullptr);
    CHECK(cells[i] == Text((*gene)["contexts"][0]["log2_fold_change"]));
    distinct.insert(cells[i]);
  }
  CHECK(distinct.size() > 1);  // the model tells SNVs apart: equal cells would prove little
}

}  // namespace

TEST_CASE("ism expression: by interval every cell equals POST /v1/variants/score's log2 fold "
          "change",
          "[ism-expression]") {
  REQUIRE_EXPRESSION_ISM_STACK(s);
  const Site gene = LonelyPlusSite(*s);
  INFO(gene.symbol << " " << gene.gene_id << " TSS " << gene.tss);
  // The context holds the gene's whole 9,198 bp window; the ISM window straddles the TSS.
  const int64_t first = gene.tss - 5, last = gene.tss + 4;
  const std::string context = IntervalContext(gene.tss - 6000, gene.tss + 6000);
  auto doc = Ism(*s, Body(context, first, last, "{\"contexts\": [\"E066\"]}"));
  const auto& data = (*doc)["data"];
  CHECK(std::string(data["scorer"].GetString()) == "expression");
  CHECK(std::string(data["expression"]["gene"]["gene_id"].GetString()) == gene.gene_id);
  CHECK(data["expression"]["gene"]["tss"].GetInt64() == gene.tss);
  CHECK(data["expression"]["candidates"].GetInt64() == 1);
  CHECK(data["expression"]["context"]["matched"].GetBool());
  CHECK(std::string(data["expression"]["context"]["id"].GetString()) == "E066");
  CHECK(std::string(data["package_digest"].GetString()).rfind("sha256:", 0) == 0);
  REQUIRE(data["positions"].Size() == static_cast<size_t>(last - first + 1));
  CHECK(std::string(data["positions"][0]["ref"].GetString()) == s->Base(first));
  // The context's match, one REF row and 3 x L ALT rows.
  CHECK((*doc)["meta"]["model_calls"].GetInt64() == 2 + 3 * (last - first + 1));
  CheckAgainstVariantScore(*s, data, gene.gene_id, gene.tss);

  // Named by symbol, in lower case: the same gene, the same matrix.
  std::string lower = gene.symbol;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto named = Ism(*s, Body(context, first, last,
                            "{\"contexts\": [\"E066\"], \"gene\": " + Quoted(lower) + "}"));
  CHECK(Text((*named)["data"]["positions"]) == Text(data["positions"]));
}

TEST_CASE("ism expression: a sequence that is the gene's window gives the interval's cells",
          "[ism-expression]") {
  REQUIRE_EXPRESSION_ISM_STACK(s);
  const Site gene = LonelyPlusSite(*s);
  // The expression window of a '+' gene: TSS - 4,599 to TSS + 4,598, the TSS at position 4,600.
  const int64_t to_contig = gene.tss - 4600;
  const std::string window = s->Cut(gene.tss - 4599, gene.tss + 4598);
  REQUIRE(window.size() == 9198);
  auto by_sequence =
      Ism(*s, Body("\"sequence\": " + Quoted(window), 4591, 4610, "{\"contexts\": [\"E066\"]}"));
  const auto& seq_data = (*by_sequence)["data"];
  CHECK(seq_data["expression"]["gene"]["tss"].GetInt64() == 4600);
  CHECK_FALSE(seq_data["expression"]["gene"].HasMember("gene_id"));
  CHECK(std::string(seq_data["context"]["coordinates"].GetString()) == "sequence");
  auto by_interval = Ism(*s, Body(IntervalContext(gene.tss - 6000, gene.tss + 6000),
                                  4591 + to_contig, 4610 + to_contig, "{\"contexts\": [\"E066\"]}"));
  const auto& a = seq_data["positions"];
  const auto& b = (*by_interval)["data"]["positions"];
  REQUIRE(a.Size() == b.Size());
  for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
    CHECK(a[i]["position"].GetInt64() + to_contig == b[i]["position"].GetInt64());
    CHECK(Text(a[i]["delta"]) == Text(b[i]["delta"]));
  }
}

TEST_CASE("ism expression: misuse is a 422 in the envelope at the field", "[ism-expression]") {
  REQUIRE_EXPRESSION_ISM_STACK(s);
  const Site gene = LonelyPlusSite(*s);
  const int64_t far = FarFromGenes(*s);
  const std::string near = IntervalContext(gene.tss - 6000, gene.tss + 6000);
  const std::string e066 = "{\"contexts\": [\"E066\"]}";
  struct Case {
    std::string name, body, loc;
  };
  const std::vector<Case> cases = {
      {"no gene's window holds the window (runner)",
       Body(IntervalContext(far - 1000, far + 1000), far, far + 9, e066), "body.window"},
      {"a gene the catalogue lacks (runner)",
       Body(near, gene.tss, gene.tss + 9, "{\"contexts\": [\"E066\"], \"gene\": \"NOSUCHGENE1\"}"),
       "body.scorers.expression.gene"},
      {"a gene whose window does not hold the window (runner)",
       Body(IntervalContext(far - 1000, far + 1000), far, far + 9,
            "{\"contexts\": [\"E066\"], \"gene\": " + Quoted(gene.symbol) + "}"),
       "body.scorers.expression.gene"},
      {"two contexts", Body(near, gene.tss, gene.tss + 9, "{\"contexts\": [\"E066\", \"E096\"]}"),
       "body.scorers.expression.contexts"},
      {"no context", Body(near, gene.tss, gene.tss + 9, "{}"), "body.scorers.expression.contexts"},
      {"variant scoring's window",
       Body(near, gene.tss, gene.tss + 9, "{\"contexts\": [\"E066\"], \"window\": 1000}"),
       "body.scorers.expression.window"},
      {"a gene with a sequence",
       Body("\"sequence\": " + Quoted(s->Cut(gene.tss - 4599, gene.tss + 4598)), 4600, 4609,
            "{\"contexts\": [\"E066\"], \"gene\": " + Quoted(gene.symbol) + "}"),
       "body.scorers.expression.gene"},
      {"a sequence that is not the expression window",
       Body("\"sequence\": " + Quoted(s->Cut(gene.tss - 150, gene.tss + 149)), 100, 110, e066),
       "body.sequence"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto r = s->Post("/v1/ism", c.body);
    INFO(r.body.substr(0, 1500));
    CHECK(r.status == 422);
    auto doc = ParseJson(r.body);
    REQUIRE(doc->HasMember("error"));
    CHECK(std::string((*doc)["error"]["code"].GetString()) == "validation_failed");
    CHECK(FirstErrorLocation(*doc) == c.loc);
  }
}

TEST_CASE("ism expression: the MCP tool and the CLI give REST's matrix", "[ism-expression]") {
  REQUIRE_EXPRESSION_ISM_STACK(s);
  const Site gene = LonelyPlusSite(*s);
  const int64_t first = gene.tss, last = gene.tss + 4;
  const std::string region = Region(gene.tss - 6000, gene.tss + 6000);
  auto rest = Ism(*s, Body("\"interval\": {\"region\": \"" + region + "\"}", first, last,
                           "{\"contexts\": [\"E066\"]}"));
  const auto& data = (*rest)["data"];

  // MCP tools/call ism: the gene and the cells.
  const std::string arguments = "{\"interval\": {\"region\": \"" + region +
                                "\"}, \"window\": {\"start\": " + std::to_string(first) +
                                ", \"end\": " + std::to_string(last) +
                                "}, \"scorers\": {\"expression\": {\"contexts\": [\"E066\"]}}}";
  // This stack's gateway: the integration service's own holds no reference.
  auto mcp = GatewayRequest("POST", s->base, "/mcp",
                            {"Authorization: Bearer " + s->svc->keys().alice,
                             "Content-Type: application/json", "Accept: application/json",
                             "MCP-Protocol-Version: 2025-06-18"},
                            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
                            "{\"name\":\"ism\",\"arguments\":" + arguments + "}}",
                            300);
  INFO(mcp.body.substr(0, 2000));
  REQUIRE(mcp.status == 200);
  auto result = ParseJson(mcp.body);
  const auto& sc = (*result)["result"]["structuredContent"];
  CHECK_FALSE((*result)["result"]["isError"].GetBool());
  CHECK(std::string(sc["scorer"].GetString()) == "expression");
  CHECK(Text(sc["expression"]) == Text(data["expression"]));
  CHECK(sc["top_items"]["total"].GetInt64() == 3 * (last - first + 1));
  std::map<std::string, std::string> rest_cells;
  for (const auto& p : data["positions"].GetArray()) {
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      rest_cells[std::to_string(p["position"].GetInt64()) + p["alt"][a].GetString()] =
          Text(p["delta"][a]);
    }
  }
  for (const auto& item : sc["top_items"]["items"].GetArray()) {
    CHECK(Text(item["delta"]) ==
          rest_cells[std::to_string(item["position"].GetInt64()) + item["alt"].GetString()]);
  }

  // The CLI: --scorer expression --context, the position x base table.
  const std::string table = s->dir + "/ism-expression.tsv";
  std::string log;
  const int rc = RunCommand(
      {"/usr/bin/python3", "-c",
       "import sys; from dnaserve_client.cli import main; sys.exit(main(sys.argv[1:]))",
       "--url", s->base, "ism", "--region", region, "--window",
       std::to_string(first) + "-" + std::to_string(last), "--scorer", "expression",
       "--context", "E066", "-o", table},
      &log,
      {{"PYTHONPATH", SourceDir() + "/clients/python"},
       {"DNASERVE_API_KEY", s->svc->keys().alice}});
  INFO(log);
  REQUIRE(rc == 0);
  std::istringstream lines(ReadFile(table));
  std::string line;
  REQUIRE(std::getline(lines, line));
  CHECK(line == "position\tref\tA\tC\tG\tT");
  // Each cell the same number as REST's (Python writes small ones with an exponent, 1e-05).
  for (const auto& p : data["positions"].GetArray()) {
    REQUIRE(std::getline(lines, line));
    std::vector<std::string> fields;
    std::istringstream row(line);
    for (std::string field; std::getline(row, field, '\t');) fields.push_back(field);
    if (!line.empty() && line.back() == '\t') fields.push_back("");
    INFO(line);
    REQUIRE(fields.size() == 6);
    CHECK(fields[0] == std::to_string(p["position"].GetInt64()));
    CHECK(fields[1] == p["ref"].GetString());
    for (rapidjson::SizeType a = 0; a < 3; ++a) {
      const size_t column = 2 + std::string("ACGT").find(p["alt"][a].GetString());
      REQUIRE_FALSE(fields[column].empty());
      CHECK(std::stod(fields[column]) == p["delta"][a].GetDouble());
    }
    CHECK(fields[2 + std::string("ACGT").find(p["ref"].GetString())].empty());
  }
  CHECK_FALSE(std::getline(lines, line));
}
