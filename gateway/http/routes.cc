#include "gateway/http/routes.h"

#include <chrono>

#include "common/ids.h"
#include "common/log.h"
#include "gateway/handlers/find_genes_handler.h"
#include "gateway/handlers/genomes_handler.h"
#include "gateway/handlers/info_handlers.h"
#include "gateway/handlers/ism_handler.h"
#include "gateway/handlers/job_runner.h"
#include "gateway/handlers/job_handlers.h"
#include "gateway/handlers/job_file_handler.h"
#include "gateway/handlers/predict_handler.h"
#include "gateway/handlers/variant_handler.h"
#include "gateway/handlers/variant_score_handler.h"
#include "gateway/http/error_response.h"
#include "gateway/mcp/mcp_endpoint.h"
#include "gateway/observability/gateway_metrics.h"

namespace dnaserve::gateway {

std::vector<Route> BuildRoutes(const GatewayServices& s) {
  using A = Access;
  using M = Metering;
  // Job routes come before /v1/tasks/{task}/...: "jobs" is a literal, not a task.
  return {
      {"GET", "/health", A::kPublic, M::kNone, MakeHealthHandler()},
      {"GET", "/v1/openapi.json", A::kPublic, M::kNone, MakeOpenApiHandler(s)},
      {"GET", "/docs", A::kPublic, M::kNone, MakeDocsPageHandler(s, DocsPage::kSwaggerUi)},
      {"GET", "/redoc", A::kPublic, M::kNone, MakeDocsPageHandler(s, DocsPage::kRedoc)},
      {"GET", "/docs/assets/{file}", A::kPublic, M::kNone, MakeDocsAssetHandler(s)},
      {"GET", "/redoc/assets/{file}", A::kPublic, M::kNone, MakeDocsAssetHandler(s)},
      {"GET", "/viewer", A::kPublic, M::kNone, MakeDocsPageHandler(s, DocsPage::kViewer)},
      {"GET", "/viewer/assets/{file}", A::kPublic, M::kNone, MakeDocsAssetHandler(s)},
      {"GET", "/v1/tasks/jobs", A::kKeyRequired, M::kPeek, MakeListJobsHandler(s)},
      {"GET", "/v1/tasks/jobs/{job_id}", A::kKeyRequired, M::kPeek, MakeGetJobHandler(s)},
      {"GET", "/v1/tasks/jobs/{job_id}/files/{name}", A::kKeyRequired, M::kPeek,
       MakeGetJobFileHandler(s)},
      {"GET", "/v1/tasks/{task}/models", A::kKeyOptional, M::kPeek, MakeModelsHandler(s)},
      {"GET", "/v1/tasks/expression/contexts", A::kKeyOptional, M::kPeek, MakeContextsHandler(s)},
      {"GET", "/v1/models/{model}/card", A::kKeyOptional, M::kPeek, MakeModelCardHandler(s)},
      {"GET", "/v1/models/{model}/card/{file}", A::kKeyOptional, M::kPeek,
       MakeModelCardHandler(s)},
      {"POST", "/v1/tasks/{task}/predict", A::kKeyRequired, M::kAdmit, MakePredictHandler(s)},
      {"POST", "/v1/workflows/find-genes-and-predict-expression", A::kKeyRequired, M::kAdmit,
       MakeFindGenesHandler(s)},
      {"POST", "/v1/workflows/genomic-variant-interpretation", A::kKeyRequired, M::kAdmit,
       MakeVariantHandler(s)},
      {"POST", "/v1/variants/score", A::kKeyRequired, M::kAdmit, MakeVariantScoreHandler(s)},
      {"POST", "/v1/ism", A::kKeyRequired, M::kAdmit, MakeIsmHandler(s)},
      {"GET", "/v1/genomes", A::kKeyOptional, M::kPeek, MakeGenomesHandler(s)},
      // The agent-protocol interface: each job-creating tool call is metered inside (MeterCall).
      {"POST", "/mcp", A::kKeyRequired, M::kPeek, mcp::MakeMcpHandler(s)},
      {"GET", "/mcp", A::kPublic, M::kNone, mcp::MakeMcpMethodNotAllowedHandler()},
      {"DELETE", "/mcp", A::kPublic, M::kNone, mcp::MakeMcpMethodNotAllowedHandler()},
  };
}

namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool Match(const std::vector<std::string>& want, const std::vector<std::string>& got,
           std::map<std::string, std::string>* params) {
  if (want.size() != got.size()) return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& w = want[i];
    if (w.size() > 2 && w.front() == '{' && w.back() == '}') {
      if (got[i].empty()) return false;
      found[w.substr(1, w.size() - 2)] = got[i];
    } else if (w != got[i]) {
      return false;
    }
  }
  *params = std::move(found);
  return true;
}


void AddRateLimitHeaders(HttpResponse& response, const core::RateLimitInfo& info) {
  response.SetHeader("RateLimit-Limit", std::to_string(info.limit));
  response.SetHeader("RateLimit-Remaining", std::to_string(info.remaining));
  response.SetHeader("RateLimit-Reset", std::to_string(info.reset_seconds));
  response.SetHeader("RateLimit-Policy",
                     std::to_string(info.limit) + ";w=" + std::to_string(info.window_seconds));
}

const std::string kUnmatched = "unmatched";

struct LogContext {
  std::string request_id;
  std::string method;
  std::string path;
  // The matched route's pattern (a bounded metrics label); points into the route table.
  const std::string* route = &kUnmatched;
  std::string client_id;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// `admit` takes the quota under call->job_id. A sync call's lease is released just after its
// reply: a client that asked again at once may be refused by its own answered call. Then that
// release is made here (or, when the writer made one meanwhile, it is known to have landed),
// and admission asked once more.
core::QuotaDecision Meter(const GatewayServices& services, RouteCall* call,
                          const std::function<core::QuotaDecision()>& admit) {
  const uint64_t releases_seen = services.runner ? services.runner->lease_releases_done() : 0;
  core::QuotaDecision decision = admit();
  if (decision.cause == core::RateLimitCause::kKeyConcurrency && services.runner &&
      services.runner->ReleaseAnsweredLeases(call->principal->client_id, releases_seen)) {
    decision = admit();
  }
  if (!decision.status.ok()) {
    if (decision.status.code() == ErrorCode::kTooManyRequests && services.metrics) {
      services.metrics->RateLimited(decision.cause);
    }
    return decision;
  }
  call->lease = std::make_shared<QuotaLease>(services.quotas, *call->principal, call->job_id);
  return decision;
}

}  // namespace

core::QuotaDecision MeterCall(const GatewayServices& services, RouteCall* call) {
  call->job_id = NewUuidV4();
  return Meter(services, call, [&] {
    return services.quotas->Admit(*call->principal, call->job_id, core::kLeaseTtlMs);
  });
}

core::QuotaDecision MeterAndCreate(const GatewayServices& services, RouteCall* call,
                                   core::JobRecord record) {
  call->job_id = NewUuidV4();
  record.job_id = call->job_id;
  record.owner = call->principal->client_id;
  core::SequentialAdmitAndCreate sequential(services.quotas, services.jobs);
  core::AdmitAndCreate* both =
      services.admit_and_create ? services.admit_and_create : &sequential;
  return Meter(services, call,
               [&] { return both->Run(*call->principal, core::kLeaseTtlMs, record); });
}

RequestPipeline::RequestPipeline(GatewayServices services, std::vector<Route> routes)
    : services_(std::move(services)), routes_(std::move(routes)) {
  for (const auto& route : routes_) route_segments_.push_back(Segments(route.pattern));
}

void RequestPipeline::Handle(HttpRequest request, Responder respond) const {
  auto log_context = std::make_shared<LogContext>();
  log_context->request_id = request.request_id;
  log_context->method = request.method;
  log_context->path = request.path;
  GatewayMetrics* metrics = services_.metrics;
  Responder logged = [log_context, respond = std::move(respond),
                      metrics](HttpResponse response) {
    auto elapsed = std::chrono::steady_clock::now() - log_context->started;
    const std::string* id = response.FindHeader("X-Request-Id");
    log::Info("request",
              {{"request_id", id ? *id : log_context->request_id},
               {"client_id", log_context->client_id},
               {"method", log_context->method},
               {"path", log_context->path},
               {"status", response.status},
               {"duration_ms",
                std::chrono::duration<double, std::milli>(elapsed).count()}});
    if (metrics) {
      metrics->RequestFinished(*log_context->route, log_context->method, response.status,
                               std::chrono::duration<double>(elapsed).count());
    }
    respond(std::move(response));
  };

  const Route* route = nullptr;
  std::map<std::string, std::string> params;
  const std::vector<std::string> path_segments = Segments(request.path);
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& candidate = routes_[i];
    if (candidate.method == request.method &&
        Match(route_segments_[i], path_segments, &params)) {
      route = &candidate;
      log_context->route = &candidate.pattern;
      break;
    }
  }

  // Edge per-IP cap, before anything else is looked at; health probes are exempt so that load
  // never fails liveness.
  if (request.path != "/health" && services_.admit_ip) {
    if (auto refusal = services_.admit_ip(request.client_ip)) {
      std::string edge_id = NewHexId32();
      HttpResponse response = ErrorResponse(refusal->status, edge_id);
      AddRateLimitHeaders(response, refusal->info);
      response.SetHeader("X-Request-Id", edge_id);
      if (metrics) metrics->RateLimited(refusal->cause);
      logged(std::move(response));
      return;
    }
  }

  if (!route) {
    logged(ErrorResponse(NotFound("no route for " + request.method + " " + request.path),
                         request.request_id));
    return;
  }

  RouteCall call;
  call.params = std::move(params);
  bool wants_auth = route->access == Access::kKeyRequired ||
                    (route->access == Access::kKeyOptional && request.Header("authorization"));
  if (wants_auth) {
    AuthResult auth = request.repeated_authorization
                          ? RepeatedAuthorization()
                          : services_.keys->Authenticate(request.Header("authorization"));
    if (!auth.status.ok()) {
      HttpResponse response = ErrorResponse(auth.status, request.request_id);
      if (!auth.bearer_error.empty()) {
        response.SetHeader("WWW-Authenticate", "Bearer error=\"" + auth.bearer_error + "\"");
      }
      logged(std::move(response));
      return;
    }
    log_context->client_id = auth.principal.client_id;
    call.principal = auth.principal;
  }

  std::optional<core::RateLimitInfo> rate_info;
  if (call.principal && route->metering == Metering::kAdmit) {
    // Taken by the handler (MakeJobRoute), in one Redis step with the job record when the job
    // runs here; a refusal is still answered 429 whatever the body.
    call.deferred_metering = std::make_shared<DeferredMetering>();
  } else if (call.principal && route->metering == Metering::kPeek) {
    rate_info = services_.quotas->Peek(*call.principal);
  }

  Responder final_respond = std::move(logged);
  if (rate_info || call.deferred_metering) {
    final_respond = [logged = std::move(final_respond), rate_info,
                     deferred = call.deferred_metering](HttpResponse response) {
      const std::optional<core::RateLimitInfo>& info = deferred ? deferred->info : rate_info;
      if (info && ((response.status >= 200 && response.status < 300) || response.status == 429)) {
        AddRateLimitHeaders(response, *info);
      }
      logged(std::move(response));
    };
  }
  call.request = std::move(request);
  route->handler(std::move(call), std::move(final_respond));
}

}  // namespace dnaserve::gateway
