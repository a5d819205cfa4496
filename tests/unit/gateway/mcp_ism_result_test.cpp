// The ism tool's result (gateway/mcp/tool_results.h): a POST /v1/ism answer cut to the cells
// with the largest |delta|, with what the cells are (scorer, options, value, window).
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "gateway/mcp/tool_catalogue.h"
#include "gateway/mcp/tool_results.h"

using namespace dnaserve::gateway;
using namespace dnaserve::gateway::mcp;

namespace {

rapidjson::Document ParseResult(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  INFO(text);
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

// A chromatin ISM answer of `length` positions from 101; the delta of position p's i-th ALT is
// (-1)^i * (p * 3 + i) / 1000, so the largest |delta| is the last position's third ALT.
std::string IsmBody(int length) {
  std::string positions;
  for (int p = 101; p < 101 + length; ++p) {
    if (p > 101) positions += ',';
    std::string deltas;
    for (int i = 0; i < 3; ++i) {
      const double delta = (i % 2 ? -1 : 1) * (p * 3 + i) / 1000.0;
      deltas += (i ? "," : "") + std::to_string(delta);
    }
    positions += "{\"position\":" + std::to_string(p) +
                 R"(,"ref":"A","alt":["C","G","T"],"delta":[)" + deltas +
                 R"(],"feature":["f1","f2","f3"]})";
  }
  return R"({"data":{"task":"ism","scorer":"chromatin","model":"m","package_digest":"sha256:x",)"
         R"("options":{"top":3},"window_bp":200,"value":"delta of the feature",)"
         R"("context":{"length":500,"coordinates":"sequence"},"window":{"start":101,"end":)" +
         std::to_string(100 + length) + R"(,"length":)" + std::to_string(length) +
         R"(},"positions":[)" + positions +
         R"(]},"meta":{"job_id":"j1","request_id":"r1","task":"ism","model":"m",)"
         R"("package_digest":"sha256:x","cold_start":false,"model_load_time_ms":0,)"
         R"("inference_time_ms":1,"model_calls":3}})";
}

}  // namespace

TEST_CASE("mcp results: an ISM matrix is cut to its cells with the largest absolute delta",
          "[gateway][mcp]") {
  HttpResponse r;
  r.body = IsmBody(30);
  auto result = ParseResult(JobToolResult(r, ResultStyle{true, "http://h:1"}));
  CHECK_FALSE(result["isError"].GetBool());
  const auto& sc = result["structuredContent"];
  CHECK(std::string(sc["status"].GetString()) == "completed");
  CHECK(std::string(sc["scorer"].GetString()) == "chromatin");
  CHECK(sc["options"]["top"].GetInt() == 3);
  CHECK(sc["window"]["length"].GetInt() == 30);
  CHECK(sc.HasMember("value"));
  CHECK_FALSE(sc.HasMember("positions"));  // the whole matrix stays in the job
  const auto& top = sc["top_items"];
  CHECK(std::string(top["list"].GetString()) == "data.positions");
  CHECK(top["total"].GetInt() == 90);
  REQUIRE(top["returned"].GetInt() == static_cast<int>(kTopItems));
  // The largest |delta| first, negative ones by their size; each cell whole.
  const auto& first = top["items"][0];
  CHECK(first["position"].GetInt() == 130);
  CHECK(std::string(first["ref"].GetString()) == "A");
  CHECK(std::string(first["alt"].GetString()) == "T");
  CHECK(std::string(first["feature"].GetString()) == "f3");
  CHECK(first["delta"].GetDouble() == Approx(0.392));
  CHECK(top["items"][1]["delta"].GetDouble() == Approx(-0.391));
  double previous = 1e9;
  for (const auto& item : top["items"].GetArray()) {
    const double size = std::abs(item["delta"].GetDouble());
    CHECK(size <= previous);
    previous = size;
  }
  CHECK(std::string(sc["full_result"]["job_url"].GetString()) == "http://h:1/v1/tasks/jobs/j1");
}

TEST_CASE("mcp tools: ism wraps POST /v1/ism and is not read-only", "[gateway][mcp]") {
  const ToolDef* ism = FindTool("ism");
  REQUIRE(ism != nullptr);
  CHECK(ism->kind == ToolKind::kIsm);
  CHECK_FALSE(AsyncThresholdBp(*ism).has_value());  // synchronous, as REST by default
}
