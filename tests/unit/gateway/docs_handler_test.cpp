// /docs, /redoc and their assets: the pages must work offline (local asset paths only), the
// asset route must serve exactly its allow-list (never a file reached by traversal), and a
// machine without the npm assets must get an install hint instead of a broken page.
#include "gateway/handlers/docs_handler.h"

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "tests/support/test_env.h"

namespace dnaserve::gateway {
namespace {

namespace fs = std::filesystem;

const char* const kSwaggerBundle = "/docs/assets/swagger-ui-bundle.js";
const char* const kSwaggerPreset = "/docs/assets/swagger-ui-standalone-preset.js";
const char* const kSwaggerCss = "/docs/assets/swagger-ui.css";
const char* const kRedocBundle = "/redoc/assets/redoc.standalone.js";

void WriteFile(const fs::path& path, const std::string& contents) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  REQUIRE(out.good());
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A node_modules lookalike with the four files the pages need, plus bait: a file next to them
// that is not allow-listed and a secret outside the root.
struct FakeAssets {
  fs::path dir = dnaserve::testing::MakeTempDir("dnaserve-docs-test");
  fs::path root = dir / "node_modules";

  FakeAssets() {
    WriteFile(root / "swagger-ui-dist/swagger-ui-bundle.js", "/* fake swagger bundle */");
    WriteFile(root / "swagger-ui-dist/swagger-ui-standalone-preset.js", "/* fake preset */");
    WriteFile(root / "swagger-ui-dist/swagger-ui.css", "body { color: black; }");
    WriteFile(root / "swagger-ui-dist/index.html", "not allow-listed");
    WriteFile(root / "redoc/bundles/redoc.standalone.js", "/* fake redoc */");
    WriteFile(root / "igv/dist/igv.min.js", "/* fake igv */");
    WriteFile(root / "dnaserve-viewer/viewer.js", "/* fake viewer */");
    WriteFile(root / "dnaserve-viewer/viewer.css", "main { display: grid; }");
    WriteFile(root / "dnaserve-viewer/viewer.html",
              "<html><link rel=\"stylesheet\" href=\"/viewer/assets/viewer.css\">"
              "<script src=\"/viewer/assets/igv.min.js\"></script>"
              "<script src=\"/viewer/assets/viewer.js\"></script></html>");
    WriteFile(dir / "secret.txt", "top secret");
  }
  ~FakeAssets() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Every src/href/spec-url attribute value of a page.
std::set<std::string> References(const std::string& html) {
  std::set<std::string> refs;
  static const std::regex attr(R"re((?:src|href|spec-url)\s*=\s*"([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), attr); it != std::sregex_iterator();
       ++it) {
    refs.insert((*it)[1].str());
  }
  return refs;
}

void CheckNoInternetReferences(const std::string& html) {
  INFO(html);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("=\"//") == std::string::npos);  // protocol-relative URLs
  for (const auto& ref : References(html)) {
    INFO(ref);
    CHECK(ref.rfind("/", 0) == 0);
    CHECK(ref.rfind("//", 0) != 0);
  }
}

void CheckNotFound(const HttpResponse& response, const std::string& request_id) {
  CHECK(response.status == 404);
  CHECK(response.content_type == "application/json");
  rapidjson::Document doc;
  doc.Parse(response.body.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["error"]["code"].GetString()) == "not_found");
  CHECK(std::string(doc["error"]["request_id"].GetString()) == request_id);
}

TEST_CASE("docs pages reference only the gateway's own assets and the served contract", "[docs]") {
  FakeAssets assets;
  DocsHandler docs(assets.root.string());
  REQUIRE(docs.AssetsInstalled());

  HttpResponse swagger = docs.Docs();
  CHECK(swagger.status == 200);
  CHECK(swagger.content_type.rfind("text/html", 0) == 0);
  CheckNoInternetReferences(swagger.body);
  CHECK(References(swagger.body) ==
        std::set<std::string>{kSwaggerCss, kSwaggerBundle, kSwaggerPreset});
  CHECK(swagger.body.find("url: \"/v1/openapi.json\"") != std::string::npos);
  CHECK(swagger.body.find("validatorUrl: null") != std::string::npos);  // no online validator
  REQUIRE(swagger.FindHeader("Cache-Control") != nullptr);

  HttpResponse redoc = docs.Redoc();
  CHECK(redoc.status == 200);
  CHECK(redoc.content_type.rfind("text/html", 0) == 0);
  CheckNoInternetReferences(redoc.body);
  CHECK(References(redoc.body) == std::set<std::string>{kRedocBundle, "/v1/openapi.json"});

  // Everything a page loads is actually served by the asset route.
  for (const auto& page : {swagger.body, redoc.body}) {
    for (const auto& ref : References(page)) {
      if (ref == "/v1/openapi.json") continue;
      INFO(ref);
      CHECK(docs.Asset(ref).status == 200);
    }
  }
}

TEST_CASE("assets are served with their content types and cache headers", "[docs]") {
  FakeAssets assets;
  DocsHandler docs(assets.root.string());

  HttpResponse js = docs.Asset(kSwaggerBundle);
  CHECK(js.status == 200);
  CHECK(js.body == "/* fake swagger bundle */");
  CHECK(js.content_type.rfind("application/javascript", 0) == 0);
  REQUIRE(js.FindHeader("Cache-Control") != nullptr);
  CHECK(js.FindHeader("Cache-Control")->find("max-age=") != std::string::npos);

  HttpResponse css = docs.Asset(kSwaggerCss);
  CHECK(css.status == 200);
  CHECK(css.body == "body { color: black; }");
  CHECK(css.content_type.rfind("text/css", 0) == 0);

  CHECK(docs.Asset(kSwaggerPreset).body == "/* fake preset */");
  HttpResponse redoc = docs.Asset(kRedocBundle);
  CHECK(redoc.body == "/* fake redoc */");
  CHECK(redoc.content_type.rfind("application/javascript", 0) == 0);
}

TEST_CASE("the viewer page and its assets carry a strict Content-Security-Policy", "[docs]") {
  FakeAssets assets;
  DocsHandler docs(assets.root.string());
  HttpResponse page = docs.Viewer();
  CHECK(page.status == 200);
  CHECK(page.content_type.rfind("text/html", 0) == 0);
  CheckNoInternetReferences(page.body);
  const std::set<std::string> refs = References(page.body);
  CHECK(refs == std::set<std::string>{"/viewer/assets/viewer.css", "/viewer/assets/igv.min.js",
                                      "/viewer/assets/viewer.js"});
  for (const auto& ref : refs) {
    INFO(ref);
    HttpResponse asset = docs.Asset(ref);
    CHECK(asset.status == 200);
    REQUIRE(asset.FindHeader("Content-Security-Policy") != nullptr);
  }
  const std::string* csp = page.FindHeader("Content-Security-Policy");
  REQUIRE(csp != nullptr);
  // Only this origin's scripts, no inline script or eval, requests to this origin only.
  CHECK(csp->find("default-src 'none'") != std::string::npos);
  CHECK(csp->find("script-src 'self';") != std::string::npos);
  CHECK(csp->find("connect-src 'self'") != std::string::npos);
  CHECK(csp->find("frame-ancestors 'none'") != std::string::npos);
  CHECK(csp->find("unsafe-eval") == std::string::npos);
  CHECK(csp->find("http") == std::string::npos);
  // The Swagger UI page keeps working as before: no policy there.
  CHECK(docs.Docs().FindHeader("Content-Security-Policy") == nullptr);

  // The page file itself is not an asset, and a missing viewer explains how to install it.
  CheckNotFound(docs.Asset("/viewer/assets/viewer.html", "req-v"), "req-v");
  CheckNotFound(docs.Asset("/viewer/assets/../../secret.txt", "req-v"), "req-v");
  fs::remove(assets.root / "dnaserve-viewer/viewer.html");
  DocsHandler fresh(assets.root.string());
  HttpResponse missing = fresh.Viewer();
  CHECK(missing.body.find("not installed") != std::string::npos);
  CHECK(missing.FindHeader("Content-Security-Policy") != nullptr);
}

TEST_CASE("asset files are read once and then served from memory", "[docs]") {
  FakeAssets assets;
  DocsHandler docs(assets.root.string());
  REQUIRE(docs.Asset(kSwaggerCss).body == "body { color: black; }");
  WriteFile(assets.root / "swagger-ui-dist/swagger-ui.css", "changed on disk");
  CHECK(docs.Asset(kSwaggerCss).body == "body { color: black; }");
  fs::remove(assets.root / "swagger-ui-dist/swagger-ui.css");
  CHECK(docs.Asset(kSwaggerCss).status == 200);
  CHECK(docs.Docs().body.find("not installed") == std::string::npos);
}

TEST_CASE("traversal and non-allow-listed paths are 404 not_found", "[docs]") {
  FakeAssets assets;
  DocsHandler docs(assets.root.string());
  const std::string secret = (assets.dir / "secret.txt").string();
  const std::vector<std::string> attempts = {
      "/docs/assets/../../secret.txt",
      "/docs/assets/../../../../../../etc/passwd",
      "/docs/assets/%2e%2e/%2e%2e/secret.txt",
      "/docs/assets/%2E%2E%2F%2E%2E%2Fsecret.txt",
      "/docs/assets/..%2f..%2fsecret.txt",
      "/docs/assets/swagger-ui-bundle.js/../../../secret.txt",
      "/docs/assets//etc/passwd",
      "/docs/assets/" + secret,
      secret,
      "/etc/passwd",
      "/docs/assets/index.html",  // in the package, not allow-listed
      "/docs/assets/swagger-ui-bundle.js.map",
      "/docs/assets/swagger-ui-dist/swagger-ui.css",  // the on-disk layout is not a URL
      "/redoc/assets/swagger-ui.css",                 // wrong prefix for the file
      "/docs/assets/redoc.standalone.js",
      "/docs/assets/SWAGGER-UI.CSS",
      "/docs/assets/swagger-ui.css%00.txt",
      std::string("/docs/assets/swagger-ui.css\0", 28),
      "/docs/assets/",
      "/docs/assets",
      "",
  };
  for (const auto& path : attempts) {
    INFO("path: " << path);
    HttpResponse response = docs.Asset(path, "req-404");
    CheckNotFound(response, "req-404");
    CHECK(response.body.find("top secret") == std::string::npos);
    CHECK(response.body.find("not allow-listed") == std::string::npos);
  }
}

TEST_CASE("missing assets: pages explain how to install them, asset route is 404", "[docs]") {
  const fs::path dir = dnaserve::testing::MakeTempDir("dnaserve-docs-missing");
  DocsHandler docs((dir / "node_modules").string());
  CHECK_FALSE(docs.AssetsInstalled());

  for (const HttpResponse& page : {docs.Docs(), docs.Redoc()}) {
    CHECK(page.status == 200);
    CHECK(page.content_type.rfind("text/html", 0) == 0);
    CHECK(page.body.find("not installed") != std::string::npos);
    CHECK(page.body.find("npm ci --prefix gateway/docs") != std::string::npos);
    CHECK(page.body.find("/docs/assets/") == std::string::npos);  // no broken asset loads
    CHECK(page.body.find("/redoc/assets/") == std::string::npos);
    CheckNoInternetReferences(page.body);
  }
  CheckNotFound(docs.Asset(kSwaggerBundle, "req-1"), "req-1");

  // Installing while the gateway runs is picked up: failures are not cached.
  WriteFile(dir / "node_modules/redoc/bundles/redoc.standalone.js", "/* late install */");
  CHECK(docs.Asset(kRedocBundle).body == "/* late install */");
  CHECK(docs.Redoc().body.find(kRedocBundle) != std::string::npos);
  CHECK(docs.Docs().body.find("not installed") != std::string::npos);  // swagger still missing
  fs::remove_all(dir);
}

TEST_CASE("the npm-installed assets are served when present", "[docs][npm]") {
  const fs::path root = fs::path(dnaserve::testing::SourceDir()) / "gateway/docs/node_modules";
  if (!fs::exists(root / "swagger-ui-dist") || !fs::exists(root / "redoc")) {
    WARN("skipped: " << root.string() << " is not installed (run: npm ci --prefix gateway/docs)");
    return;
  }
  DocsHandler docs(root.string());
  REQUIRE(docs.AssetsInstalled());
  CHECK(docs.Docs().body.find("not installed") == std::string::npos);
  CHECK(docs.Redoc().body.find("not installed") == std::string::npos);
  CHECK(docs.Viewer().body.find("not installed") == std::string::npos);
  const std::vector<std::pair<std::string, std::string>> files = {
      {kSwaggerBundle, "swagger-ui-dist/swagger-ui-bundle.js"},
      {kSwaggerPreset, "swagger-ui-dist/swagger-ui-standalone-preset.js"},
      {kSwaggerCss, "swagger-ui-dist/swagger-ui.css"},
      {kRedocBundle, "redoc/bundles/redoc.standalone.js"},
      {"/viewer/assets/igv.min.js", "igv/dist/igv.min.js"},
      {"/viewer/assets/viewer.js", "dnaserve-viewer/viewer.js"},
  };
  for (const auto& [url, relative] : files) {
    INFO(url);
    HttpResponse response = docs.Asset(url);
    REQUIRE(response.status == 200);
    CHECK(response.body.size() > 10000);                  // the real bundles, not a stub
    CHECK((response.body == ReadFile(root / relative)));  // no decomposition: megabytes
  }
}

}  // namespace
}  // namespace dnaserve::gateway
