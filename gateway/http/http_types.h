// Plain HTTP request/response structs. Pistache types stop at gateway/server/; handlers, the
// middleware and their tests see only these.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cancellation.h"
#include "gateway/http/response_body.h"
#include "gateway/http/response_stream.h"

namespace dnaserve::gateway {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string peer_ip;    // the socket peer
  // The client as far as trusted proxies vouch for it (gateway/server/client_address.h); the
  // socket peer when no trusted proxy is involved. What the per-IP limit counts.
  std::string client_ip;
  std::string request_id;  // assigned at ingress
  // More than one Authorization line (headers keeps only one of them): ambiguous credentials,
  // refused with 401 invalid_request wherever a key is looked at.
  bool repeated_authorization = false;
  // Fires when the client's connection closes (the HTTP server sets it; null for requests made
  // by hand). Once it has, no response can reach the client: sync work for it may stop.
  std::shared_ptr<Cancellation> connection_closed;

  std::optional<std::string> Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    if (it == headers.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> Query(const std::string& name) const {
    auto it = query.find(name);
    if (it == query.end()) return std::nullopt;
    return it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  // Owned, or shared with the result a sync job stores after the reply (response_body.h).
  ResponseBody body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, in order
  // Set: the body is written as it is produced (`body` is ignored), in HTTP/1.1 chunks.
  std::shared_ptr<ResponseStream> stream;

  void SetHeader(std::string name, std::string value) {
    for (auto& h : headers) {
      if (h.first == name) {
        h.second = std::move(value);
        return;
      }
    }
    headers.emplace_back(std::move(name), std::move(value));
  }
  const std::string* FindHeader(const std::string& name) const {
    for (const auto& h : headers) {
      if (h.first == name) return &h.second;
    }
    return nullptr;
  }
};

}  // namespace dnaserve::gateway
