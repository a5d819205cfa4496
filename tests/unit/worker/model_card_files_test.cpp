// The card files a worker serves (worker/service/model_card_files.h): MODEL_CARD.md and only the
// PNGs that card embeds, never a caller-chosen path, a symlink or an oversized file.
#include "worker/service/model_card_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"

using dnaserve::ErrorCode;
using dnaserve::worker::CardFigureNames;
using dnaserve::worker::kMaxCardFigureBytes;
using dnaserve::worker::kMaxModelCardBytes;
using dnaserve::worker::ModelManifest;
using dnaserve::worker::ReadCardFile;
using dnaserve::worker::testing::WriteFile;

namespace {

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\x01\xff", 3);

// A package directory inside a scratch directory, so "../secret.png" exists and stays inside it.
ModelManifest PackageWithFigures(std::string* dir) {
  const std::string scratch = dnaserve::testing::MakeTempDir("card-files");
  *dir = scratch + "/promoter-cards";
  mkdir(dir->c_str(), 0755);
  ModelManifest m;
  m.id = "promoter-cards";
  m.package_dir = *dir;
  m.model_card_file = "MODEL_CARD.md";
  WriteFile(*dir + "/MODEL_CARD.md",
            "---\nlicense: mit\n---\n# promoter-cards\n\n![ROC curve](roc.png)\n\n"
            "![a path](../secret.png) ![a url](https://example.invalid/x.png) "
            "![hidden](.hidden.png) ![not png](manifest.json) ![twice](roc.png)\n"
            "![link](link.png) ![big](big.png) ![gone](missing.png) ![dir](folder.png)\n");
  WriteFile(*dir + "/roc.png", kPng);
  WriteFile(*dir + "/.hidden.png", kPng);
  WriteFile(*dir + "/manifest.json", "{}");
  WriteFile(*dir + "/unlinked.png", kPng);
  WriteFile(*dir + "/../secret.png", kPng);
  WriteFile(*dir + "/big.png", std::string(kMaxCardFigureBytes + 1, 'x'));
  CATCH_REQUIRE(symlink((*dir + "/manifest.json").c_str(), (*dir + "/link.png").c_str()) == 0);
  mkdir((*dir + "/folder.png").c_str(), 0755);
  return m;
}

}  // namespace

CATCH_TEST_CASE("card figure names: plain .png links only, in order, once", "[card]") {
  auto names = CardFigureNames(
      "![a](roc.png) ![b](pr.png) ![c](../x.png) ![d](/abs.png) ![e](sub/dir.png) "
      "![f](.dot.png) ![g](a%2fb.png) ![h](x.PNG) ![i](roc.png) ![j](cal-1_v2.png) ![k](.png) "
      "![unclosed](open.png");
  CATCH_CHECK(names == std::vector<std::string>{"roc.png", "pr.png", "cal-1_v2.png"});
  CATCH_CHECK(CardFigureNames("no images, [a link](roc.png)").empty());
  CATCH_CHECK(CardFigureNames("![long](" + std::string(200, 'a') + ".png)").empty());
}

CATCH_TEST_CASE("the card and its embedded figures are served, nothing else", "[card]") {
  std::string dir;
  ModelManifest m = PackageWithFigures(&dir);

  auto card = ReadCardFile(m, "");
  CATCH_REQUIRE(card.ok());
  CATCH_CHECK(card->content_type == "text/markdown; charset=utf-8");
  CATCH_CHECK(card->content.rfind("---\nlicense: mit", 0) == 0);

  auto roc = ReadCardFile(m, "roc.png");
  CATCH_REQUIRE(roc.ok());
  CATCH_CHECK(roc->content_type == "image/png");
  CATCH_CHECK(roc->content == kPng);  // binary, NUL bytes included

  for (const std::string& hostile : std::vector<std::string>{
           "../secret.png", "..%2fsecret.png", "/etc/passwd", "manifest.json", "MODEL_CARD.md",
           "model.pt", ".hidden.png", "unlinked.png", "link.png", "folder.png", "missing.png",
           "roc.png/", "roc.png\n", std::string("roc.png\0x", 9), "ROC.PNG", "..", ".",
           std::string(300, 'a') + ".png"}) {
    CATCH_INFO(hostile);
    auto r = ReadCardFile(m, hostile);
    CATCH_REQUIRE_FALSE(r.ok());
    CATCH_CHECK(r.status().code() == ErrorCode::kNotFound);
    CATCH_CHECK(r.status().message().find(dir) == std::string::npos);  // no path echoed
  }
  auto big = ReadCardFile(m, "big.png");
  CATCH_REQUIRE_FALSE(big.ok());
  CATCH_CHECK(big.status().code() == ErrorCode::kInternal);
}

CATCH_TEST_CASE("a card over its bound or missing is refused", "[card]") {
  std::string dir = dnaserve::testing::MakeTempDir("card-big");
  ModelManifest m;
  m.id = "x";
  m.package_dir = dir;
  m.model_card_file = "MODEL_CARD.md";
  auto missing = ReadCardFile(m, "");
  CATCH_CHECK(missing.status().code() == ErrorCode::kNotFound);
  WriteFile(dir + "/MODEL_CARD.md", std::string(kMaxModelCardBytes + 1, '#'));
  auto big = ReadCardFile(m, "");
  CATCH_CHECK(big.status().code() == ErrorCode::kInternal);
}
