// The gateway's HTTP transport. Pistache stays behind this header: handlers receive a plain
// HttpRequest and answer through a Responder that may be called from any thread, exactly once.
//
// The server owns three policies that must hold before any handler runs:
//  - every request gets a request id, and every response carries it in X-Request-Id;
//  - every request gets its client address (client_address.h: X-Forwarded-For is believed only
//    from trusted proxies) and is marked when it carries more than one Authorization line; both
//    come from the raw header block (header_block.h), which is why requests are handed to
//    Pistache one at a time, pipelined ones split at their ends;
//  - a request head that breaks RFC 9112's framing rules (header_block.h: two Content-Length
//    values, Transfer-Encoding beside one, folding, bare CR or LF, a missing Host, ...) is
//    refused with 400 before Pistache parses it, and every refusal closes the connection: the
//    server's side is shut once the answer is out, and the rest of the input is dropped;
//  - a body larger than max_body_bytes is refused with 413 payload_too_large as soon as its
//    Content-Length is seen (or, for chunked bodies, as soon as its chunks add up past the
//    limit), so an oversized body is never buffered whole; chunked framing is followed byte by
//    byte and refused with 400 when malformed (chunked_body.h says why Pistache must not see it);
//  - bodies being received hold at most max_buffered_body_bytes across all connections (503
//    with Retry-After beyond it), so hostile uploads cannot grow memory without bound;
//  - once Pistache gives up on a request (answering its own error), the rest of that
//    connection's input is dropped instead of being parsed as further requests;
//  - shutdown waits (bounded) for responses still in flight, and while it drains every response
//    closes its connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "gateway/http/http_types.h"
#include "gateway/server/client_address.h"

namespace dnaserve::gateway {

using Responder = std::function<void(HttpResponse)>;
// Runs on a reactor thread: it must not block. Long work belongs on another thread, which then
// calls the responder.
using RequestHandler = std::function<void(HttpRequest request, Responder respond)>;

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  int port = 8080;  // 0 picks a free port (see HttpServer::port())
  int threads = 2;
  size_t max_body_bytes = 16 * 1024 * 1024;
  // All request bodies being received at once, across connections (announced sizes: Content-
  // Length, or chunk sizes as they arrive). A request that would pass it gets 503 with
  // Retry-After: without it, N concurrent 16 MiB uploads would hold N x ~40 MiB of buffers.
  uint64_t max_buffered_body_bytes = 256ull * 1024 * 1024;
  size_t max_header_bytes = 64 * 1024;
  std::chrono::seconds header_timeout{30};
  std::chrono::seconds body_timeout{120};
  // An idle keep-alive connection is closed after this long, and so is one whose request has
  // been running this long: Pistache counts its header timeout from the moment a request is
  // handed over, so the server marks a dispatched request's connection idle (http_server.cc,
  // onRequest), and this must exceed the longest request (the gateway sets the sync timeout
  // plus a minute).
  std::chrono::seconds keepalive_timeout{360};
  std::chrono::seconds drain_timeout{30};  // how long Stop() waits for in-flight responses
  // Proxies whose X-Forwarded-For names the client (HttpRequest::client_ip); none by default.
  TrustedProxies trusted_proxies;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, RequestHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Start();
  // Graceful termination, first step: responses from now on carry "Connection: close", so
  // keep-alive clients reconnect (through the load balancer, to another replica) instead of
  // sending more requests to this one.
  void BeginDrain();
  // Waits for in-flight responses (bounded by drain_timeout), then stops listening and stops.
  void Stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnaserve::gateway
