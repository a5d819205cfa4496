// MCP tool texts (gateway/mcp/tool_catalogue.cc) take every model fact from the roster the
// workers report (ModelInfo: the package's description, resolution and outputs), and the task
// part claims nothing about any model. tests/integration/contexts_test.cpp compares the served
// texts with the packages' manifests.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <string>

#include "gateway/mcp/tool_catalogue.h"

using namespace dnaserve;
using namespace dnaserve::gateway::mcp;

namespace {

namespace pb = dnaserve::worker::v1;

std::string ToolText(const core::ModelCatalogue& catalogue, const std::string& name) {
  rapidjson::Document doc;
  doc.Parse(ToolsListJson(catalogue, true).c_str());
  for (const auto& t : doc["tools"].GetArray()) {
    if (name == t["name"].GetString()) return t["description"].GetString();
  }
  return "<no tool " + name + ">";
}

pb::ModelInfo Model(const std::string& id, const std::string& description,
                    const std::string& resolution, const std::string& outputs) {
  pb::ModelInfo m;
  m.set_id(id);
  m.set_is_default(true);
  m.set_description(description);
  m.set_resolution(resolution);
  m.set_outputs(outputs);
  return m;
}

}  // namespace

TEST_CASE("tool texts: the default model's facts come from the reported package",
          "[gateway][mcp]") {
  core::ModelCatalogue catalogue;
  catalogue.SetModels(Task::kSplice,
                      {Model("splice-a", "Splice model A trained on chr20.",
                             "per base; 15,000 bp windows score their central 13,000 bp",
                             "neither, acceptor, donor")});
  catalogue.SetModels(Task::kChromatin, {Model("chromatin-a", "Chromatin model A.",
                                               "919 values per 1,000 bp window, a window every "
                                               "200 bp",
                                               "919 labels")});
  const std::string splice = ToolText(catalogue, "predict_splice");
  CHECK(splice.find(" Default model: splice-a. Splice model A trained on chr20. Resolution: per "
                    "base; 15,000 bp windows score their central 13,000 bp. Outputs: neither, "
                    "acceptor, donor.") != std::string::npos);
  // No model fact of the tool's own: the texts of before claimed tokens and feature lists.
  CHECK(splice.find("byte-pair") == std::string::npos);
  CHECK(splice.find("token") == std::string::npos);
  const std::string chromatin = ToolText(catalogue, "predict_chromatin");
  CHECK(chromatin.find("Chromatin model A. Resolution: 919 values per 1,000 bp window, a window "
                       "every 200 bp. Outputs: 919 labels.") != std::string::npos);
  for (const char* claim : {"DNase", "H3K27ac", "CTCF"}) {
    INFO(claim);
    CHECK(chromatin.find(claim) == std::string::npos);
  }

  // Another package, another text: nothing is cached from the first roster.
  catalogue.SetModels(Task::kSplice, {Model("splice-b", "Splice model B.",
                                            "per 6-mer token (a token every 6 bp); 15,000 bp "
                                            "windows",
                                            "neither, acceptor, donor")});
  const std::string b = ToolText(catalogue, "predict_splice");
  CHECK(b.find("Default model: splice-b. Splice model B. Resolution: per 6-mer token") !=
        std::string::npos);
  CHECK(b.find("splice-a") == std::string::npos);
}

TEST_CASE("tool texts: list_contexts is listed, read-only, without arguments", "[gateway][mcp]") {
  core::ModelCatalogue catalogue;
  rapidjson::Document doc;
  doc.Parse(ToolsListJson(catalogue, true).c_str());
  bool found = false;
  for (const auto& t : doc["tools"].GetArray()) {
    if (std::string("list_contexts") != t["name"].GetString()) continue;
    found = true;
    CHECK(t["annotations"]["readOnlyHint"].GetBool());
    REQUIRE(t["outputSchema"].IsObject());
    CHECK(t["outputSchema"]["properties"].HasMember("models"));
    CHECK(t["inputSchema"]["properties"].ObjectEmpty());
    CHECK(std::string(t["description"].GetString()).find("CURIE") != std::string::npos);
  }
  CHECK(found);
}
