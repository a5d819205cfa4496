// Checks what a dnaserve gateway answers against the OpenAPI document it serves: the status must
// be one the operation documents, the Content-Type one that status documents, and a JSON body
// must be valid against that response's schema (JSON Schema, by valijson). The integration
// tests' Service::Get/Post run every response through it, so a response the document does not
// describe fails the test that received it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tests/support/test_env.h"

namespace dnaserve::testing {

class OpenApiCheck {
 public:
  // `document` is the text of /v1/openapi.json; not an OpenAPI document -> *error, nullptr.
  static std::unique_ptr<OpenApiCheck> FromDocument(const std::string& document,
                                                    std::string* error);
  ~OpenApiCheck();

  // Empty when the document describes `response` to `method` `target` (a path, with or without
  // a query); otherwise what is wrong. Safe to call from several threads.
  std::string Check(const std::string& method, const std::string& target,
                    const HttpResult& response) const;

 private:
  struct Impl;
  explicit OpenApiCheck(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnaserve::testing
