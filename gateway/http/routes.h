// The route table and the request pipeline in front of it:
//   request id (server) -> per-IP edge limit -> route match -> auth -> quota -> handler
// (the quota of a job-creating route is taken by its handler: MeterCall below)
// plus one structured log line per request. Auth and rate limiting never live in handlers.
#pragma once

#include <string>
#include <vector>

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

enum class Access {
  kPublic,       // no key looked at
  kKeyOptional,  // anonymous allowed; a presented key must be valid
  kKeyRequired,
};

enum class Metering {
  kNone,
  kPeek,   // RateLimit-* headers from the bucket, nothing taken
  kAdmit,  // a token and a concurrency lease (predict, workflows)
};

struct Route {
  std::string method;
  std::string pattern;  // literal segments and {name} parameters
  Access access;
  Metering metering;
  RouteHandler handler;
};

std::vector<Route> BuildRoutes(const GatewayServices& services);

// What a Metering::kAdmit route takes: a token from the caller's bucket and a concurrency
// lease, under a new job id (sets call->job_id and call->lease; needs call->principal). The
// pipeline leaves it to the route's handler (RouteCall::deferred_metering; MakeJobRoute takes it
// after the admission, whatever its outcome, so a refusal is still 429 whatever the body). The MCP endpoint meters each job-creating tool call through it, so a tool
// call costs exactly what the REST call it wraps costs. A 429 is counted in the metrics.
core::QuotaDecision MeterCall(const GatewayServices& services, RouteCall* call);
// MeterCall for a job that runs on this gateway: when the quota admits, `record` (whose job_id
// and owner MeterCall's id and the principal fill in) is created in the same step, so a sync
// prediction makes one Redis round trip before its worker call. A record that could not be
// created fails the decision with the store's status; no lease is held then.
core::QuotaDecision MeterAndCreate(const GatewayServices& services, RouteCall* call,
                                   core::JobRecord record);

// The HttpServer's RequestHandler for `routes`.
class RequestPipeline {
 public:
  RequestPipeline(GatewayServices services, std::vector<Route> routes);
  void Handle(HttpRequest request, Responder respond) const;

 private:
  GatewayServices services_;
  std::vector<Route> routes_;
  std::vector<std::vector<std::string>> route_segments_;  // routes_[i].pattern split at '/'
};

}  // namespace dnaserve::gateway
