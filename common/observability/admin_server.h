// A small HTTP listener for operations: GET-only routes such as /metrics (Prometheus), /ready and
// /live (Kubernetes probes). The gateway runs one beside its public port and each worker runs
// one beside its gRPC port, so scrapes and probes never compete with client traffic, never pass
// the public edge limit, and can be reached only from inside the cluster (deploy/README.md).
//
// Pistache stays behind this header, as it does behind gateway/server/http_server.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace dnaserve::observability {

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on the listener's thread: must be quick and must not block on the network for long.
using AdminHandler = std::function<AdminResponse()>;

class AdminServer {
 public:
  // `listen` is "address:port" (port 0 picks a free one); `routes` maps exact paths to handlers.
  AdminServer(std::string listen, std::map<std::string, AdminHandler> routes);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  Status Start();
  void Stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "address:port" at the last colon; bad_request when malformed or the port is not 0-65535.
StatusOr<std::pair<std::string, int>> ParseListenAddress(const std::string& listen);

}  // namespace dnaserve::observability
