#include "gateway/handlers/docs_handler.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/status.h"
#include "gateway/http/error_response.h"

namespace dnaserve::gateway {

namespace {

struct AssetFile {
  const char* url_path;       // exact request path
  const char* relative_path;  // under assets_root
  const char* content_type;
};

constexpr const char* kJavaScript = "application/javascript; charset=utf-8";
constexpr const char* kCss = "text/css; charset=utf-8";
constexpr const char* kHtml = "text/html; charset=utf-8";

constexpr const char* kDocsAssetPrefix = "/docs/assets/";
constexpr const char* kRedocAssetPrefix = "/redoc/assets/";
constexpr const char* kViewerAssetPrefix = "/viewer/assets/";

// The viewer handles an API key, so it gets a strict policy: its own scripts only (no inline
// script, no eval), requests only to this origin, nothing may frame it. igv.js sets inline
// styles and hands the tracks around as data: URLs (connect-src data: lets fetch() read those,
// which never leave the browser).
constexpr const char* kViewerCsp =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self' data: blob:; font-src 'self' data:; "
    "worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// The assets change only when package-lock.json does, which needs a gateway restart to pick up
// through the in-memory cache anyway; a day keeps browsers from refetching megabytes per visit.
constexpr const char* kAssetCacheControl = "public, max-age=86400";
// The pages are tiny and switch between the real page and the install hint.
constexpr const char* kPageCacheControl = "no-cache";

// Larger than any of the bundles (about 2 MB); a guard against serving something unexpected.
constexpr std::uintmax_t kMaxAssetBytes = 32u << 20;

// The allow-list. Nothing outside it is ever opened, whatever the request path says.
constexpr std::array<AssetFile, 7> kAssets = {{
    {"/docs/assets/swagger-ui-bundle.js", "swagger-ui-dist/swagger-ui-bundle.js", kJavaScript},
    {"/docs/assets/swagger-ui-standalone-preset.js",
     "swagger-ui-dist/swagger-ui-standalone-preset.js", kJavaScript},
    {"/docs/assets/swagger-ui.css", "swagger-ui-dist/swagger-ui.css", kCss},
    {"/redoc/assets/redoc.standalone.js", "redoc/bundles/redoc.standalone.js", kJavaScript},
    // The viewer's own files are the local package gateway/docs/viewer, linked into
    // node_modules by `npm ci` so that one directory holds every asset.
    {"/viewer/assets/igv.min.js", "igv/dist/igv.min.js", kJavaScript},
    {"/viewer/assets/viewer.js", "dnaserve-viewer/viewer.js", kJavaScript},
    {"/viewer/assets/viewer.css", "dnaserve-viewer/viewer.css", kCss},
}};
// The page itself; not under /viewer/assets/, so only Viewer() serves it.
constexpr AssetFile kViewerPage = {"/viewer", "dnaserve-viewer/viewer.html", kHtml};

constexpr std::string_view kSwaggerPage = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dnaserve API - Swagger UI</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<style>body { margin: 0; }</style>
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script>
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    // The default validator is an online service; the docs must work offline.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
});
</script>
</body>
</html>
)html";

constexpr std::string_view kRedocPage = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dnaserve API - ReDoc</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/v1/openapi.json"></redoc>
<script src="/redoc/assets/redoc.standalone.js"></script>
</body>
</html>
)html";

std::string NotInstalledPage(std::string_view viewer) {
  std::string page = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dnaserve API documentation - assets not installed</title>
</head>
<body>
<h1>The )html";
  page += viewer;
  page += R"html( assets are not installed</h1>
<p>The gateway serves its documentation viewers from local files so that they work without
internet access, and those files have not been installed on this machine yet.</p>
<p>Install them once, from the repository root (<code>scripts/run</code> and
<code>scripts/test</code> do this for you), then reload this page:</p>
<pre>npm ci --prefix gateway/docs</pre>
<p>The machine-readable contract is available now at
<a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
</body>
</html>
)html";
  return page;
}

HttpResponse Page(std::string body) {
  HttpResponse response;
  response.status = 200;
  response.content_type = kHtml;
  response.body = std::move(body);
  response.SetHeader("Cache-Control", kPageCacheControl);
  response.SetHeader("X-Content-Type-Options", "nosniff");
  return response;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

DocsHandler::DocsHandler(std::string assets_root) : assets_root_(std::move(assets_root)) {}

std::shared_ptr<const std::string> DocsHandler::Load(const std::string& url_path,
                                                     const std::string& relative_path) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(url_path);
    if (it != cache_.end()) return it->second;
  }
  // Read outside the lock: two first requests may both read, which is harmless.
  namespace fs = std::filesystem;
  const fs::path path = fs::path(assets_root_) / relative_path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || ec) return nullptr;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxAssetBytes) return nullptr;
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  auto contents = std::make_shared<std::string>(std::istreambuf_iterator<char>(in),
                                                std::istreambuf_iterator<char>());
  if (in.bad()) return nullptr;

  std::lock_guard<std::mutex> lock(mu_);
  // emplace keeps the first reader's copy if two requests raced to load the file.
  return cache_.emplace(url_path, std::move(contents)).first->second;
}

bool DocsHandler::Installed(const std::string& url_prefix) const {
  for (const auto& file : kAssets) {
    if (StartsWith(file.url_path, url_prefix) &&
        Load(file.url_path, file.relative_path) == nullptr) {
      return false;
    }
  }
  return true;
}

bool DocsHandler::AssetsInstalled() const {
  return Installed(kDocsAssetPrefix) && Installed(kRedocAssetPrefix) &&
         Installed(kViewerAssetPrefix);
}

HttpResponse DocsHandler::Docs() const {
  if (!Installed(kDocsAssetPrefix)) return Page(NotInstalledPage("Swagger UI"));
  return Page(std::string(kSwaggerPage));
}

HttpResponse DocsHandler::Redoc() const {
  if (!Installed(kRedocAssetPrefix)) return Page(NotInstalledPage("ReDoc"));
  return Page(std::string(kRedocPage));
}

HttpResponse DocsHandler::Viewer() const {
  auto page = Load(kViewerPage.url_path, kViewerPage.relative_path);
  HttpResponse response = page && Installed(kViewerAssetPrefix)
                              ? Page(*page)
                              : Page(NotInstalledPage("track viewer"));
  response.SetHeader("Content-Security-Policy", kViewerCsp);
  response.SetHeader("Referrer-Policy", "no-referrer");
  return response;
}

HttpResponse DocsHandler::Asset(const std::string& path, const std::string& request_id) const {
  // Exact match only: the request path is never joined to a filesystem path, so "..",
  // percent-encodings and absolute paths cannot reach anything outside the allow-list.
  for (const auto& file : kAssets) {
    if (path != file.url_path) continue;
    std::shared_ptr<const std::string> contents = Load(file.url_path, file.relative_path);
    if (contents == nullptr) break;
    HttpResponse response;
    response.status = 200;
    response.content_type = file.content_type;
    response.body = *contents;
    response.SetHeader("Cache-Control", kAssetCacheControl);
    response.SetHeader("X-Content-Type-Options", "nosniff");
    if (StartsWith(path, kViewerAssetPrefix)) {
      response.SetHeader("Content-Security-Policy", kViewerCsp);
    }
    return response;
  }
  return ErrorResponse(NotFound("no documentation asset at " + path), request_id);
}

}  // namespace dnaserve::gateway
