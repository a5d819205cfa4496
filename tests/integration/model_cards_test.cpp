// Model cards through the real service: the models list links each model's card, the gateway
// fetches the card and its PNGs from a worker of the model's task (GetModelCard), and names
// that are not the card's own figures are refused whatever they look like.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

std::string Code(const HttpResult& r) {
  auto doc = ParseJson(r.body);
  if (!doc->IsObject() || !doc->HasMember("error")) return "";
  return (*doc)["error"]["code"].GetString();
}

// A PNG signature followed by bytes a text path would mangle (NUL, CR LF, high bytes).
std::string FigureBytes() {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  for (int i = 0; i < 4096; ++i) png.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  return png;
}

}  // namespace

TEST_CASE("model cards are linked from the models list and served with their figures",
          "[integration][cards]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  REQUIRE(WaitFor([&] { return svc->Get("/v1/tasks/promoter/models").status == 200; },
                  std::chrono::seconds(30)));
  auto list = ParseJson(svc->Get("/v1/tasks/promoter/models").body);
  const std::string model = (*list)["default_model"].GetString();
  const std::string package = svc->log_dir() + "/models/" + model;

  SECTION("every model of every task has a card link that answers with its MODEL_CARD.md") {
    for (const char* task :
         {"promoter", "splice", "enhancer", "chromatin", "annotation", "expression"}) {
      REQUIRE(WaitFor(
          [&] { return svc->Get(std::string("/v1/tasks/") + task + "/models").status == 200; },
          std::chrono::seconds(30)));
      auto models = ParseJson(svc->Get(std::string("/v1/tasks/") + task + "/models").body);
      for (const auto& m : (*models)["models"].GetArray()) {
        const std::string name = m["name"].GetString();
        INFO(task << " " << name);
        REQUIRE(m.HasMember("card"));
        const std::string card = m["card"].GetString();
        CHECK(card == "/v1/models/" + name + "/card/MODEL_CARD.md");
        auto r = svc->Get(card);
        REQUIRE(r.status == 200);
        CHECK(r.Header("content-type").value_or("").rfind("text/markdown", 0) == 0);
        CHECK(r.body == Slurp(svc->log_dir() + "/models/" + name + "/MODEL_CARD.md"));
        // The short form serves the same card, with or without a key.
        CHECK(svc->Get("/v1/models/" + name + "/card", svc->keys().alice).body == r.body);
      }
    }
  }

  SECTION("a PNG the card embeds is served byte for byte as image/png") {
    const std::string png = FigureBytes();
    std::ofstream(package + "/cards_test_roc.png", std::ios::binary) << png;
    Append(package + "/MODEL_CARD.md", "\n![ROC](cards_test_roc.png)\n");
    auto r = svc->Get("/v1/models/" + model + "/card/cards_test_roc.png");
    REQUIRE(r.status == 200);
    CHECK(r.Header("content-type").value_or("") == "image/png");
    CHECK(r.Header("x-content-type-options").value_or("") == "nosniff");
    CHECK(r.body.size() == png.size());
    CHECK(r.body == png);
  }

  SECTION("names that are not the card's own figures are refused") {
    // On disk in the package but not embedded, or not a figure at all; a symlink the card
    // does embed; and encoded traversals (curl would resolve a literal "../" itself).
    std::ofstream(package + "/cards_test_unlinked.png", std::ios::binary) << FigureBytes();
    unlink((package + "/cards_test_link.png").c_str());
    REQUIRE(symlink("/etc/passwd", (package + "/cards_test_link.png").c_str()) == 0);
    Append(package + "/MODEL_CARD.md", "\n![link](cards_test_link.png) ![up](../keys.png)\n");
    for (const std::string& name : std::vector<std::string>{
             "cards_test_unlinked.png", "cards_test_link.png", "manifest.json", "model.pt",
             "..%2fkeys.json", "%2e%2e%2f%2e%2e%2fkeys.json",
             "..%2F..%2Fmodels%2F" + model + "%2Fmodel.pt", "%2fetc%2fpasswd", "..png", ".png",
             "..", "%00.png", "x%0a.png", "..%2fkeys.png", std::string(300, 'a') + ".png"}) {
      INFO(name);
      auto r = svc->Get("/v1/models/" + model + "/card/" + name);
      CHECK(r.status == 404);
      CHECK(Code(r) == "not_found");
      CHECK(r.body.find("root:") == std::string::npos);
      CHECK(r.body.find(svc->log_dir()) == std::string::npos);
    }
  }

  SECTION("an unknown model is model_not_found, naming the served ones") {
    for (const std::string name : {"no-such-model", "%2e%2e", "promoter-human%2f.."}) {
      INFO(name);
      auto r = svc->Get("/v1/models/" + name + "/card");
      REQUIRE(r.status == 404);
      CHECK(Code(r) == "model_not_found");
      auto doc = ParseJson(r.body);
      CHECK((*doc)["error"]["details"]["available_models"].Size() > 1);
    }
  }

  SECTION("a bad key is refused; the card route takes no body-changing method") {
    CHECK(svc->Get("/v1/models/" + model + "/card", "dns_not_a_real_key").status == 401);
    CHECK(svc->Post("/v1/models/" + model + "/card", "{}").status == 404);
  }
}
