// Expression contexts against the real stack: GET /v1/tasks/expression/contexts lists the
// packages' contexts with their ontology terms (every answer checked against the served OpenAPI
// document by the fixture), and a prediction names its context by id, CURIE or free text, with
// the prediction made for the context the response names.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/integration/service_fixture.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

std::string Str(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsString() ? v[key].GetString() : "<absent>";
}

struct Predicted {
  double value = 0;
  std::shared_ptr<rapidjson::Document> doc;
  const rapidjson::Value& match() const { return (*doc)["meta"]["description_match"]; }
};

Predicted Predict(Service& svc, const std::string& description) {
  // RandomDna's fixed seed: the same window every call, so values compare across descriptions.
  const std::string body = "{\"sequence\": \"" + RandomDna(9198) +
                           "\", \"options\": {\"description\": \"" + description + "\"}}";
  auto r = svc.Post("/v1/tasks/expression/predict", body, svc.keys().alice);
  INFO(description << ": " << r.body.substr(0, 800));
  REQUIRE(r.status == 200);
  Predicted out;
  out.doc = ParseJson(r.body);
  out.value = (*out.doc)["data"]["prediction"]["expression_log_tpm"].GetDouble();
  REQUIRE(out.match().IsObject());
  return out;
}

}  // namespace

TEST_CASE("contexts: GET /v1/tasks/expression/contexts lists the contexts with CURIEs",
          "[integration][contexts]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  auto r = svc->Get("/v1/tasks/expression/contexts");  // public: no key needed
  INFO(r.body.substr(0, 600));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  CHECK(Str(*doc, "task") == "expression");
  const auto& models = (*doc)["models"];
  REQUIRE(models.IsArray());
  REQUIRE(models.Size() >= 1);
  const auto& model = models[0];
  CHECK(Str(model, "name") == Str(*doc, "default_model"));
  CHECK(model["free_text_threshold"].GetDouble() == Approx(0.48));
  const auto& contexts = model["contexts"];
  REQUIRE(contexts.Size() == 56);
  bool liver = false;
  for (const auto& c : contexts.GetArray()) {
    CHECK(Str(c, "curie").find(':') != std::string::npos);
    if (Str(c, "id") == "E066") {
      liver = true;
      CHECK(Str(c, "curie") == "UBERON:0002107");
      CHECK(Str(c, "name") == "Liver");
      CHECK(Str(c, "group") == "Other");
    }
  }
  CHECK(liver);
  // The models list of the same task still answers as before.
  CHECK(svc->Get("/v1/tasks/expression/models").status == 200);
}

TEST_CASE("contexts: a prediction names its context by id, CURIE or free text",
          "[integration][contexts]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const Predicted by_id = Predict(*svc, "E066");
  const Predicted by_curie = Predict(*svc, "UBERON:0002107");
  const Predicted by_text = Predict(*svc, "adult human liver");
  for (const Predicted* p : {&by_id, &by_curie, &by_text}) {
    CHECK(p->match()["matched"].GetBool());
    CHECK(Str(p->match()["contexts"][0], "id") == "E066");
    CHECK(Str(p->match()["contexts"][0], "curie") == "UBERON:0002107");
    // The model ran on the same context each time, so the same number.
    CHECK(p->value == by_id.value);
  }
  CHECK(Str(by_id.match(), "matched_by") == "id");
  CHECK(Str(by_curie.match(), "matched_by") == "curie");
  CHECK(Str(by_text.match(), "matched_by") == "text");

  // The issue's case: a CD4 T-cell context, never H1 Cells.
  const Predicted cd4 = Predict(*svc, "CD4 T cells");
  CHECK(cd4.match()["matched"].GetBool());
  const std::string cd4_id = Str(cd4.match()["contexts"][0], "id");
  CHECK((cd4_id == "E037" || cd4_id == "E038"));
  CHECK(cd4.value == Predict(*svc, cd4_id).value);

  // Not training contexts: unmatched, and the prediction is the mean over contexts, the same
  // whatever the unmatched text (an unknown CURIE or id included).
  const Predicted kidney = Predict(*svc, "kidney");
  CHECK_FALSE(kidney.match()["matched"].GetBool());
  CHECK(Str(kidney.match(), "matched_by") == "text");
  CHECK(kidney.match()["contexts"][0]["similarity"].GetDouble() < 0.48);
  const Predicted b_cells = Predict(*svc, "B cells");
  CHECK_FALSE(b_cells.match()["matched"].GetBool());
  const Predicted kidney_curie = Predict(*svc, "UBERON:0002113");
  CHECK_FALSE(kidney_curie.match()["matched"].GetBool());
  CHECK(Str(kidney_curie.match(), "matched_by") == "curie");
  CHECK(kidney_curie.match()["contexts"].Size() == 0);
  CHECK(b_cells.value == kidney.value);
  CHECK(kidney_curie.value == kidney.value);
  CHECK(Predict(*svc, "E999").value == kidney.value);
}

TEST_CASE("contexts: the CLI warns on stderr and exits 5 when no training context matched",
          "[integration][contexts]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string dir = MakeTempDir("contexts-cli");
  {
    std::ofstream(dir + "/window.fa") << ">window\n" << RandomDna(9198) << "\n";
  }
  // The CLI from the source tree over Debian's python3 (the SDK's own install is what
  // clients_test checks); no bytecode written into the checkout.
  const std::map<std::string, std::string> env = {
      {"DNASERVE_URL", svc->base_url()}, {"DNASERVE_API_KEY", svc->keys().alice},
      {"HOME", dir}, {"XDG_CONFIG_HOME", dir + "/.config"}, {"PYTHONDONTWRITEBYTECODE", "1"},
      {"PYTHONPATH", SourceDir() + "/clients/python"}};
  auto run = [&](const std::string& description, const std::string& output, std::string* log) {
    return RunCommand({"/usr/bin/python3", "-m", "dnaserve_client.cli", "predict", "expression",
                       dir + "/window.fa", "--description", description, "-q", "-o", output},
                      log, env);
  };
  std::string log;
  CHECK(run("kidney", dir + "/kidney.json", &log) == 5);
  INFO(log);
  CHECK(log.find("warning: the description matched no training context") != std::string::npos);
  // Flagged, not refused: the output is written.
  std::ifstream written(dir + "/kidney.json");
  CHECK(written.good());
  std::string liver_log;
  CHECK(run("E066", dir + "/liver.json", &liver_log) == 0);
  CHECK(liver_log.find("warning") == std::string::npos);
}

namespace {

// The manifest of a package the service serves (PrepareModels copied them to <dir>/models).
std::shared_ptr<rapidjson::Document> ServedManifest(const Service& svc, const std::string& id) {
  std::ifstream in(svc.log_dir() + "/models/" + id + "/manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  return ParseJson(text.str());
}

// The output labels as the tool text gives them: all up to 8, else their number.
std::string OutputsOf(const rapidjson::Value& manifest) {
  const auto& labels = manifest["output_labels"];
  if (labels.Size() > 8) return std::to_string(labels.Size()) + " labels";
  std::string out;
  for (const auto& l : labels.GetArray()) out += (out.empty() ? "" : ", ") + std::string(l.GetString());
  return out;
}

}  // namespace

TEST_CASE("contexts: MCP tool texts say what each task's default package says",
          "[integration][contexts][mcp]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  auto r = svc->Post("/mcp", R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
                     svc->keys().alice,
                     {"Accept: application/json", "MCP-Protocol-Version: 2025-06-18"});
  INFO(r.body.substr(0, 400));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& tools = (*doc)["result"]["tools"];
  int checked = 0;
  for (const auto& tool : tools.GetArray()) {
    const std::string name = tool["name"].GetString();
    if (name.rfind("predict_", 0) != 0) continue;
    const std::string task = name.substr(8);
    const std::string text = tool["description"].GetString();
    auto models = ParseJson(svc->Get("/v1/tasks/" + task + "/models").body);
    const std::string id = (*models)["default_model"].GetString();
    auto manifest = ServedManifest(*svc, id);
    INFO(name << " / " << id << ": " << text);
    REQUIRE(manifest->IsObject());
    // What the model scores and its training data: the package's own description, verbatim.
    CHECK(text.find("Default model: " + id + ". " + (*manifest)["description"].GetString()) !=
          std::string::npos);
    CHECK(text.find("Outputs: " + OutputsOf(*manifest) + ".") != std::string::npos);
    // Resolution from the manifest's tokenizer and windows.
    const std::string tokenizer = (*manifest)["tokenizer"]["type"].GetString();
    const auto window = std::to_string((*manifest)["context_window_bp"].GetInt64());
    if (task == "splice" || task == "annotation") {
      if (tokenizer == "char") CHECK(text.find("Resolution: per base") != std::string::npos);
      if (tokenizer == "kmer") {
        CHECK(text.find("Resolution: per " +
                        std::to_string((*manifest)["tokenizer"]["k"].GetInt()) + "-mer token") !=
              std::string::npos);
      }
      CHECK((text.find("byte-pair") != std::string::npos) == (tokenizer == "bpe"));
    } else {
      CHECK(text.find("Resolution: ") != std::string::npos);
      CHECK(text.find(" bp window") != std::string::npos);
    }
    ++checked;
  }
  CHECK(checked == 6);

  // list_contexts answers the REST listing's contexts.
  auto call = svc->Post(
      "/mcp",
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_contexts","arguments":{}}})",
      svc->keys().alice, {"Accept: application/json", "MCP-Protocol-Version: 2025-06-18"});
  INFO(call.body.substr(0, 400));
  REQUIRE(call.status == 200);
  auto result = ParseJson(call.body);
  const auto& sc = (*result)["result"]["structuredContent"];
  CHECK(Str(sc, "status") == "completed");
  CHECK(sc["models"][0]["contexts"].Size() == 56);
}
