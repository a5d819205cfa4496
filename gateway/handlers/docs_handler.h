// GET /docs (Swagger UI), GET /redoc (ReDoc), GET /viewer (the igv.js track viewer) and their
// static assets.
//
// The documentation must render with no internet access, so the pages reference only assets
// this handler serves itself. The assets come from npm (gateway/docs/package.json, installed
// with `npm ci --prefix gateway/docs`); each allow-listed file is read from disk once and then
// served from memory. When the assets are not installed, /docs and /redoc still answer with a
// page that says how to install them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/http/http_types.h"

namespace dnaserve::gateway {

class DocsHandler {
 public:
  // `assets_root` is the node_modules directory of gateway/docs (it holds swagger-ui-dist/ and
  // redoc/). It is read lazily, so the gateway starts even when the assets are not installed.
  explicit DocsHandler(std::string assets_root);

  // The Swagger UI page, pointing at /v1/openapi.json.
  HttpResponse Docs() const;
  // The ReDoc page, pointing at /v1/openapi.json.
  HttpResponse Redoc() const;
  // The track viewer (gateway/docs/viewer), with its Content-Security-Policy.
  HttpResponse Viewer() const;
  // `path` is the full request path, e.g. "/docs/assets/swagger-ui.css". Only the exact paths of
  // the allow-list are served; anything else (including every traversal or encoded variant) is a
  // 404 not_found envelope carrying `request_id`, as is an allow-listed file that is not installed.
  HttpResponse Asset(const std::string& path, const std::string& request_id = {}) const;

  // True when every file the three pages load can be read.
  bool AssetsInstalled() const;

 private:
  // The contents of the allow-listed file served at `url_path`, read on first use; nullptr when
  // it cannot be read (failures are not cached, so an install done while the gateway runs is
  // picked up).
  std::shared_ptr<const std::string> Load(const std::string& url_path,
                                          const std::string& relative_path) const;
  bool Installed(const std::string& url_prefix) const;

  std::string assets_root_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const std::string>> cache_;  // by URL path
};

}  // namespace dnaserve::gateway
