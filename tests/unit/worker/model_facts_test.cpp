// Model facts derived from a package's manifest (worker/manifest/model_facts.h), which the models
// list and the MCP tool texts publish: checked on the committed packages, so a tool text says
// what the served model does (issue 27: "per byte-pair token" was claimed for a per-base model).
#include "worker/manifest/model_facts.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_env.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {
namespace {

ModelManifest Committed(const std::string& id) {
  std::ifstream in(dnaserve::testing::SourceDir() + "/worker/packages/" + id + "/manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseManifest(text.str(), id);
  CATCH_INFO(id << ": " << (m.ok() ? "" : m.status().message()));
  CATCH_REQUIRE(m.ok());
  return *m;
}

CATCH_TEST_CASE("model facts: resolution and outputs of the committed default packages",
                "[model_facts]") {
  const auto splice = Committed("splice-human");
  CATCH_CHECK(Resolution(splice) == "per base; 15,000 bp windows score their central 13,000 bp");
  CATCH_CHECK(OutputsLine(splice) == "neither, acceptor, donor");

  const auto chromatin = Committed("chromatin-human");
  CATCH_CHECK(Resolution(chromatin) == "919 values per 1,000 bp window, a window every 200 bp");
  CATCH_CHECK(OutputsLine(chromatin) == "919 labels");

  const auto promoter = Committed("promoter-human");
  CATCH_CHECK(Resolution(promoter) == "one value per 2,000 bp window, a window every 1,000 bp");
  CATCH_CHECK(OutputsLine(promoter) == "promoter");

  CATCH_CHECK(Resolution(Committed("expression-human")) ==
              "one value per 9,198 bp window centred on the TSS");
  CATCH_CHECK(Resolution(Committed("annotation-human")) ==
              "per base on both strands; 4,096 bp windows");
  CATCH_CHECK(Resolution(Committed("enhancer-fly-untrained")) ==
              "2 values per 249 bp window, a window every 249 bp");
  CATCH_CHECK(OutputsLine(Committed("enhancer-fly-untrained")) == "dev, hk");
}

CATCH_TEST_CASE("model facts: token-level models say they are per token", "[model_facts]") {
  ModelManifest m = Committed("splice-human");
  m.tokenizer.type = TokenizerType::kKmer;
  m.tokenizer.k = 6;
  m.tokenizer.stride = 6;
  CATCH_CHECK(Resolution(m).rfind("per 6-mer token (a token every 6 bp);", 0) == 0);
  m.tokenizer.stride = 1;
  CATCH_CHECK(Resolution(m).rfind("per 6-mer token (a token every base);", 0) == 0);
  m.tokenizer.type = TokenizerType::kBpe;
  CATCH_CHECK(Resolution(m).rfind("per byte-pair token", 0) == 0);
  // A plain (unflanked) window scores all of itself.
  m.output_window_bp = m.context_window_bp;
  CATCH_CHECK(Resolution(m).find("central") == std::string::npos);
}

}  // namespace
}  // namespace dnaserve::worker
