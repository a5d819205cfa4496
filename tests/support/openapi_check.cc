#include "tests/support/openapi_check.h"

// valijson's adapter must come before any RapidJSON header (it sets RAPIDJSON_ASSERT).
#include <valijson/adapters/rapidjson_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <optional>
#include <sstream>
#include <vector>

namespace dnaserve::testing {
namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  for (std::string segment; std::getline(in, segment, '/');) out.push_back(segment);
  return out;
}

// A JSON Pointer token: '~' -> "~0", '/' -> "~1".
std::string Escape(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The body as sent, or inflated when the gateway sent it gzip-encoded (finished job results).
std::optional<std::string> Decoded(const HttpResult& response) {
  if (response.Header("content-encoding").value_or("") != "gzip") return response.body;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out;
  char buffer[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(response.body.data()));
  z.avail_in = static_cast<uInt>(response.body.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

// The pointer of the response object `pointer` names, following its local `$ref`s
// (`#/components/responses/...`), so a shared response is checked like an inline one; empty, with
// `problem` set, for a reference that leaves the document, dangles or loops.
std::string ResolvedResponse(const rapidjson::Document& doc, std::string pointer,
                             std::string* problem) {
  for (int hops = 0; hops < 8; ++hops) {
    const rapidjson::Value* response = rapidjson::Pointer(pointer.c_str()).Get(doc);
    if (response == nullptr || !response->IsObject()) {
      *problem = "the document's response " + pointer + " is not an object";
      return "";
    }
    const auto ref = response->FindMember("$ref");
    if (ref == response->MemberEnd()) return pointer;
    const std::string target = ref->value.IsString() ? ref->value.GetString() : "";
    if (target.rfind("#/", 0) != 0) {
      *problem = "the response " + pointer + " refers outside the document: '" + target + "'";
      return "";
    }
    pointer = target.substr(1);
  }
  *problem = "the response references starting at " + pointer + " do not end";
  return "";
}

}  // namespace

struct OpenApiCheck::Impl {
  rapidjson::Document document;
  mutable std::mutex mu;
  mutable std::map<std::string, std::unique_ptr<valijson::Schema>> schemas;  // by pointer

  // The document's path template that `path` instantiates, preferring literal segments
  // (/v1/tasks/jobs/{job_id} over /v1/tasks/{task}/models); nullopt when none does.
  std::optional<std::string> Template(const std::string& path) const {
    const std::vector<std::string> actual = Segments(path);
    std::optional<std::string> best;
    int best_literals = -1;
    for (const auto& entry : document["paths"].GetObject()) {
      const std::string candidate = entry.name.GetString();
      const std::vector<std::string> pattern = Segments(candidate);
      if (pattern.size() != actual.size()) continue;
      int literals = 0;
      bool match = true;
      for (size_t i = 0; i < pattern.size() && match; ++i) {
        const bool parameter = !pattern[i].empty() && pattern[i].front() == '{';
        if (parameter) {
          match = !actual[i].empty();
        } else {
          match = pattern[i] == actual[i];
          ++literals;
        }
      }
      if (match && literals > best_literals) {
        best = candidate;
        best_literals = literals;
      }
    }
    return best;
  }

  // Validates `body` against the schema at `pointer`; the problems, or empty.
  std::string Validate(const std::string& pointer, const rapidjson::Document& body) const {
    std::lock_guard<std::mutex> lock(mu);
    auto& schema = schemas[pointer];
    if (!schema) {
      // The whole document as the root, so that its #/components/... references resolve, with
      // a root $ref to the schema wanted (draft 7: $ref replaces its siblings).
      rapidjson::Document root;
      root.CopyFrom(document, root.GetAllocator());
      const std::string ref = "#" + pointer;
      root.AddMember("$ref", rapidjson::Value(ref.c_str(), root.GetAllocator()),
                     root.GetAllocator());
      auto parsed = std::make_unique<valijson::Schema>();
      try {
        valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
        valijson::adapters::RapidJsonAdapter adapter(root);
        parser.populateSchema(adapter, *parsed);
      } catch (const std::exception& e) {
        schemas.erase(pointer);
        return "the schema at " + pointer + " cannot be used: " + e.what();
      }
      schema = std::move(parsed);
    }
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    valijson::adapters::RapidJsonAdapter target(body);
    if (validator.validate(*schema, target, &results)) return "";
    std::string out = "body does not match " + pointer + ":";
    valijson::ValidationResults::Error error;
    for (int shown = 0; shown < 8 && results.popError(error); ++shown) {
      out += "\n  ";
      for (const auto& part : error.context) out += part;
      out += ": " + error.description;
    }
    return out;
  }
};

OpenApiCheck::OpenApiCheck(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OpenApiCheck::~OpenApiCheck() = default;

std::unique_ptr<OpenApiCheck> OpenApiCheck::FromDocument(const std::string& document,
                                                         std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->document.Parse(document.c_str(), document.size());
  if (impl->document.HasParseError() || !impl->document.IsObject() ||
      !impl->document.HasMember("paths") || !impl->document["paths"].IsObject()) {
    *error = "not an OpenAPI document: " + document.substr(0, 200);
    return nullptr;
  }
  return std::unique_ptr<OpenApiCheck>(new OpenApiCheck(std::move(impl)));
}

std::string OpenApiCheck::Check(const std::string& method, const std::string& target,
                                const HttpResult& response) const {
  if (response.status == 0) return "";  // no response at all: the test sees that itself
  const std::string path = target.substr(0, target.find('?'));
  const std::string what = method + " " + path + " -> " + std::to_string(response.status);
  const rapidjson::Document& doc = impl_->document;

  std::string response_pointer;
  const std::optional<std::string> route = impl_->Template(path);
  const std::string operation =
      route ? "/paths/" + Escape(*route) + "/" + Lower(method) : std::string();
  const rapidjson::Value* op =
      route ? rapidjson::Pointer(operation.c_str()).Get(doc) : nullptr;
  if (op == nullptr) {
    // A route the document does not have: only the router's 404 envelope is acceptable.
    if (response.status != 404) return what + ": the document has no such operation";
  } else {
    const std::string status = std::to_string(response.status);
    const rapidjson::Value& responses = (*op)["responses"];
    for (const std::string& key : {status, status.substr(0, 1) + "XX", std::string("default")}) {
      if (responses.HasMember(key.c_str())) {
        response_pointer = operation + "/responses/" + key;
        break;
      }
    }
    if (response_pointer.empty()) return what + ": status not documented for the operation";
    std::string problem;
    response_pointer = ResolvedResponse(doc, response_pointer, &problem);
    if (response_pointer.empty()) return what + ": " + problem;
  }

  const std::string content_type = response.Header("content-type").value_or("");
  const std::string media = Lower(content_type.substr(0, content_type.find(';')));
  std::string schema_pointer;
  if (response_pointer.empty()) {
    schema_pointer = "/components/schemas/ErrorEnvelope";
    if (media != "application/json") return what + ": not the error envelope (" + media + ")";
  } else {
    const rapidjson::Value* content =
        rapidjson::Pointer((response_pointer + "/content").c_str()).Get(doc);
    if (content == nullptr || !content->IsObject() || content->MemberCount() == 0) {
      if (response.body.empty()) return "";
      return what + ": a body where the document describes none";
    }
    if (!content->HasMember(media.c_str())) {
      return what + ": Content-Type '" + media + "' not documented for this status";
    }
    if (media != "application/json") return "";  // text tracks, HTML, event streams
    schema_pointer = response_pointer + "/content/" + Escape(media) + "/schema";
  }

  const std::optional<std::string> body = Decoded(response);
  if (!body) return what + ": a gzip body that does not inflate";
  rapidjson::Document parsed;
  parsed.Parse(body->c_str(), body->size());
  if (parsed.HasParseError()) return what + ": application/json body that is not JSON";
  std::string problem = impl_->Validate(schema_pointer, parsed);
  return problem.empty() ? "" : what + ": " + problem;
}

}  // namespace dnaserve::testing
