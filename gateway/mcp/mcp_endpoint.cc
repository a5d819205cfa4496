#include "gateway/mcp/mcp_endpoint.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include "common/version.h"
#include "core/validation/genome_interval.h"
#include "gateway/handlers/find_genes_handler.h"
#include "gateway/handlers/info_handlers.h"
#include "gateway/handlers/ism_handler.h"
#include "gateway/handlers/job_handlers.h"
#include "gateway/handlers/predict_handler.h"
#include "gateway/handlers/variant_score_handler.h"
#include "gateway/http/error_response.h"
#include "gateway/http/routes.h"
#include "gateway/mcp/json_rpc.h"
#include "gateway/mcp/progress_watch.h"
#include "gateway/mcp/tool_catalogue.h"
#include "gateway/mcp/tool_results.h"

namespace dnaserve::gateway::mcp {
namespace {

using rapidjson::Value;

constexpr std::string_view kDefaultVersion = "2025-03-26";  // no MCP-Protocol-Version header
constexpr std::string_view kFirstStructuredVersion = "2025-06-18";
constexpr std::string_view kFirstUnbatchedVersion = "2025-06-18";  // JSON-RPC batches removed

constexpr const char* kInstructions =
    "dnaserve runs transformer models on DNA sequences. Use predict_<task> for one task, "
    "find_genes_and_predict_expression to annotate a region and score each gene's expression, "
    "get_job to follow a job, list_models to see the models. Sequences are A/C/G/T/N only "
    "(no FASTA header). Results are summaries; the full result is the job over REST.";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool Served(std::string_view version) {
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) !=
         kProtocolVersions.end();
}

HttpResponse RpcHttpError(int http_status, const std::string& id_json, RpcErrorCode code,
                          const std::string& message) {
  HttpResponse r;
  r.status = http_status;
  r.body = RpcErrorJson(id_json, RpcError{code, message});
  return r;
}

// The spec's DNS-rebinding defence: a request that carries an Origin (a browser's) is served
// only when that origin is the endpoint's own. Desktop and CLI hosts send none.
bool OriginAllowed(const HttpRequest& request) {
  auto origin = request.Header("origin");
  if (!origin) return true;
  auto host = request.Header("host");
  if (!host) return false;
  const std::string o = Lower(*origin);
  const std::string h = Lower(*host);
  return o == "http://" + h || o == "https://" + h;
}

// Accept must allow a JSON answer (clients send "application/json, text/event-stream").
bool AcceptsJson(const HttpRequest& request) {
  auto accept = request.Header("accept");
  if (!accept) return true;
  const std::string a = Lower(*accept);
  return a.find("application/json") != std::string::npos || a.find("*/*") != std::string::npos ||
         a.find("application/*") != std::string::npos;
}

bool AcceptsEventStream(const HttpRequest& request) {
  auto accept = request.Header("accept");
  return accept && Lower(*accept).find("text/event-stream") != std::string::npos;
}

bool JsonContentType(const HttpRequest& request) {
  auto type = request.Header("content-type");
  if (!type) return false;
  const std::string t = Lower(*type);
  return t.rfind("application/json", 0) == 0;
}

std::string BaseUrl(const HttpRequest& request) {
  auto host = request.Header("host");
  if (!host) return "";
  auto proto = request.Header("x-forwarded-proto");
  return (proto && Lower(*proto) == "https" ? "https://" : "http://") + *host;
}

std::string StringArg(const Value* args, const char* name) {
  if (!args) return "";
  auto it = args->FindMember(name);
  return it != args->MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

// The length an `interval` argument names (core/validation/genome_interval.h), 0 when it names
// none or is malformed (admission then says why).
int64_t IntervalLength(const Value* args) {
  if (args == nullptr || !args->IsObject() || !args->HasMember("interval")) return 0;
  const Value& interval = (*args)["interval"];
  if (!interval.IsObject()) return 0;
  if (interval.HasMember("region") && interval["region"].IsString()) {
    std::string why;
    auto parsed = core::ParseRegionString(interval["region"].GetString(), &why);
    return parsed ? parsed->length() : 0;
  }
  if (interval.HasMember("start") && interval.HasMember("end") && interval["start"].IsInt64() &&
      interval["end"].IsInt64()) {
    return std::max<int64_t>(0, interval["end"].GetInt64() - interval["start"].GetInt64() + 1);
  }
  return 0;
}

int64_t StrippedLength(const std::string& sequence) {
  int64_t n = 0;
  for (unsigned char c : sequence) {
    if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')) ++n;
  }
  return n;
}

std::string SseEvent(const std::string& json) { return "event: message\ndata: " + json + "\n\n"; }

// One POST: its answers, filled as tool calls finish (maybe on runner threads), sent once all
// are in.
class Exchange {
 public:
  Exchange(size_t requests, bool batch, bool event_stream, Responder respond)
      : answers_(requests),
        pending_(requests),
        batch_(batch),
        event_stream_(event_stream),
        respond_(std::move(respond)) {}

  // A single tools/call whose client takes text/event-stream: the response starts now and
  // progress notifications are written as the job reports them (null for a batch or a JSON
  // client, whose answer stays whole).
  std::shared_ptr<ResponseStream> OpenStream() {
    std::unique_lock<std::mutex> lock(mu_);
    if (batch_ || !event_stream_) return nullptr;
    if (stream_) return stream_;
    stream_ = std::make_shared<ResponseStream>();
    HttpResponse response;
    response.content_type = "text/event-stream";
    response.SetHeader("Cache-Control", "no-cache");
    response.stream = stream_;
    lock.unlock();
    respond_(std::move(response));
    return stream_;
  }

  void Answer(size_t slot, std::string json, std::vector<std::string> notifications = {},
              std::optional<int> retry_after = std::nullopt) {
    std::unique_lock<std::mutex> lock(mu_);
    answers_[slot] = std::move(json);
    for (auto& n : notifications) notifications_.push_back(std::move(n));
    if (retry_after) retry_after_ = retry_after;
    if (--pending_ > 0) return;
    lock.unlock();
    Send();
  }

 private:
  void Send() {
    std::string payload;
    if (batch_) {
      payload = "[";
      for (size_t i = 0; i < answers_.size(); ++i) {
        if (i > 0) payload += ',';
        payload += answers_[i];
      }
      payload += "]";
    } else {
      payload = answers_.front();
    }
    if (stream_) {
      for (const auto& n : notifications_) stream_->Write(SseEvent(n));
      stream_->Write(SseEvent(payload));
      stream_->Close();
      return;
    }
    HttpResponse response;
    if (event_stream_ && !notifications_.empty()) {
      response.content_type = "text/event-stream";
      std::string events;
      for (const auto& n : notifications_) events += "event: message\ndata: " + n + "\n\n";
      events += "event: message\ndata: " + payload + "\n\n";
      response.body = std::move(events);
      response.SetHeader("Cache-Control", "no-cache");
    } else {
      response.body = std::move(payload);
    }
    if (retry_after_) response.SetHeader("Retry-After", std::to_string(*retry_after_));
    respond_(std::move(response));
  }

  std::mutex mu_;
  std::vector<std::string> answers_;
  std::vector<std::string> notifications_;
  std::optional<int> retry_after_;
  std::shared_ptr<ResponseStream> stream_;
  size_t pending_;
  bool batch_;
  bool event_stream_;
  Responder respond_;
};

class McpEndpoint : public std::enable_shared_from_this<McpEndpoint> {
 public:
  explicit McpEndpoint(const GatewayServices& s)
      : services_(s),
        predict_(MakePredictHandler(s)),
        find_genes_(MakeFindGenesHandler(s)),
        score_variants_(MakeVariantScoreHandler(s)),
        ism_(MakeIsmHandler(s)),
        get_job_(MakeGetJobHandler(s)),
        list_jobs_(MakeListJobsHandler(s)),
        models_(MakeModelsHandler(s)),
        contexts_(MakeContextsHandler(s)),
        progress_(s.jobs) {}

  void Handle(RouteCall call, Responder respond);

 private:
  struct Context {
    const RouteCall* call;
    ResultStyle style;
    bool event_stream;
    // Starts the streamed response (null when this POST's answer cannot be streamed).
    std::function<std::shared_ptr<ResponseStream>()> open_stream;
  };
  using Done = std::function<void(std::string json, std::vector<std::string> notifications,
                                  std::optional<int> retry_after)>;

  std::string Initialize(const Value* params, RpcError* error) const;
  void CallTool(const Context& context, const RpcMessage& message, Done done);
  void CallJobTool(const Context& context, const ToolDef& tool, const Value* args,
                   const std::string& token_json, Done done);
  RouteCall Synthetic(const RouteCall& call, std::string method, std::string path) const;
  // The REST operation a job tool wraps: its handler, and its path in *path.
  const RouteHandler& JobRoute(const ToolDef& tool, std::string* path) const;

  GatewayServices services_;
  RouteHandler predict_;
  RouteHandler find_genes_;
  RouteHandler score_variants_;
  RouteHandler ism_;
  RouteHandler get_job_;
  RouteHandler list_jobs_;
  RouteHandler models_;
  RouteHandler contexts_;
  ProgressWatch progress_;
};

RouteCall McpEndpoint::Synthetic(const RouteCall& call, std::string method,
                                 std::string path) const {
  RouteCall out;
  out.request.method = std::move(method);
  out.request.path = std::move(path);
  out.request.peer_ip = call.request.peer_ip;
  out.request.client_ip = call.request.client_ip;
  out.request.request_id = call.request.request_id;
  out.request.connection_closed = call.request.connection_closed;
  out.principal = call.principal;
  return out;
}

std::string McpEndpoint::Initialize(const Value* params, RpcError* error) const {
  const Value* requested = nullptr;
  if (params) {
    auto it = params->FindMember("protocolVersion");
    if (it != params->MemberEnd()) requested = &it->value;
  }
  if (!requested || !requested->IsString()) {
    *error = RpcError{RpcErrorCode::kInvalidParams, "initialize needs params.protocolVersion"};
    return "";
  }
  // The client's revision when served, else our newest (the client then decides).
  const std::string version =
      Served(requested->GetString()) ? requested->GetString() : std::string(kProtocolVersions[0]);
  rapidjson::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  out.AddMember("protocolVersion", Value(version.c_str(), a), a);
  Value capabilities(rapidjson::kObjectType);
  Value tools(rapidjson::kObjectType);
  tools.AddMember("listChanged", false, a);
  capabilities.AddMember("tools", tools, a);
  out.AddMember("capabilities", capabilities, a);
  Value info(rapidjson::kObjectType);
  info.AddMember("name", "dnaserve", a);
  info.AddMember("title", "dnaserve sequence analysis", a);
  const std::string service_version(ServiceVersion());
  info.AddMember("version", Value(service_version.c_str(), a), a);
  out.AddMember("serverInfo", info, a);
  out.AddMember("instructions", Value(kInstructions, a), a);
  return ToJson(out);
}

void McpEndpoint::CallJobTool(const Context& context, const ToolDef& tool, const Value* args,
                              const std::string& token_json, Done done) {
  const RouteCall& call = *context.call;
  const ResultStyle style = context.style;
  const bool predict = tool.kind == ToolKind::kPredict;
  std::string path;
  const RouteHandler& handler = JobRoute(tool, &path);
  RouteCall rc = Synthetic(call, "POST", path);
  if (predict) rc.params["task"] = std::string(TaskName(*tool.task));
  rc.request.body = args ? ToJson(*args) : "{}";
  rc.request.headers["content-type"] = "application/json";
  const auto threshold = AsyncThresholdBp(tool);
  const int64_t length =
      std::max(StrippedLength(StringArg(args, "sequence")), IntervalLength(args));
  const bool async = threshold && length > *threshold;
  if (async) rc.request.headers["prefer"] = "respond-async";

  // The same token and concurrency lease a REST call of this operation takes.
  core::QuotaDecision decision = MeterCall(services_, &rc);
  if (!decision.status.ok()) {
    HttpResponse refusal = ErrorResponse(decision.status, call.request.request_id);
    done(ErrorToolResult(refusal, style), {}, decision.status.retry_after_seconds());
    return;
  }
  int watch = 0;
  if (!token_json.empty() && !async && context.event_stream) {
    std::shared_ptr<ResponseStream> stream =
        context.open_stream ? context.open_stream() : nullptr;
    std::function<void(const std::string&)> sink;
    if (stream) sink = [stream](const std::string& note) { stream->Write(SseEvent(note)); };
    watch = progress_.Watch(rc.job_id, rc.principal->client_id, token_json, std::move(sink));
  }
  // The job may end after the routes are gone (shutdown): the capture keeps the endpoint.
  Responder capture = [self = shared_from_this(), done, style, watch](HttpResponse response) {
    std::vector<std::string> notes;
    if (watch != 0) notes = self->progress_.Take(watch);
    done(JobToolResult(response, style), std::move(notes), std::nullopt);
  };
  handler(std::move(rc), std::move(capture));
}

const RouteHandler& McpEndpoint::JobRoute(const ToolDef& tool, std::string* path) const {
  switch (tool.kind) {
    case ToolKind::kPredict:
      *path = "/v1/tasks/" + std::string(TaskName(*tool.task)) + "/predict";
      return predict_;
    case ToolKind::kScoreVariants:
      *path = "/v1/variants/score";
      return score_variants_;
    case ToolKind::kIsm:
      *path = "/v1/ism";
      return ism_;
    default:  // kFindGenes: CallTool hands no other tool here
      *path = "/v1/workflows/find-genes-and-predict-expression";
      return find_genes_;
  }
}

void McpEndpoint::CallTool(const Context& context, const RpcMessage& message, Done done) {
  const Value* params = message.params;
  auto invalid = [&](const std::string& why) {
    done(RpcErrorJson(message.id_json, RpcError{RpcErrorCode::kInvalidParams, why}), {},
         std::nullopt);
  };
  if (!params) return invalid("tools/call needs params {name, arguments}");
  auto name = params->FindMember("name");
  if (name == params->MemberEnd() || !name->value.IsString()) {
    return invalid("tools/call needs params.name (a string)");
  }
  const ToolDef* tool = FindTool(name->value.GetString());
  if (!tool) return invalid(std::string("unknown tool: ") + name->value.GetString());
  const Value* args = nullptr;
  auto arguments = params->FindMember("arguments");
  if (arguments != params->MemberEnd() && !arguments->value.IsNull()) {
    if (!arguments->value.IsObject()) return invalid("params.arguments must be an object");
    args = &arguments->value;
  }
  std::string token_json;
  auto meta = params->FindMember("_meta");
  if (meta != params->MemberEnd() && meta->value.IsObject()) {
    auto token = meta->value.FindMember("progressToken");
    if (token != meta->value.MemberEnd() && (token->value.IsString() || token->value.IsNumber())) {
      token_json = ToJson(token->value);
    }
  }
  const std::string id = message.id_json;
  Done answer = [id, done](std::string result, std::vector<std::string> notes,
                           std::optional<int> retry_after) {
    done(RpcResultJson(id, result), std::move(notes), retry_after);
  };
  const RouteCall& call = *context.call;
  const ResultStyle style = context.style;
  auto fail = [&](const Status& status) {
    answer(ErrorToolResult(ErrorResponse(status, call.request.request_id), style), {},
           std::nullopt);
  };

  switch (tool->kind) {
    case ToolKind::kPredict:
    case ToolKind::kFindGenes:
    case ToolKind::kScoreVariants:
    case ToolKind::kIsm:
      CallJobTool(context, *tool, args, token_json, answer);
      return;
    case ToolKind::kGetJob: {
      const std::string job_id = StringArg(args, "job_id");
      if (job_id.empty()) {
        return fail(
            ValidationFailed({"arguments", "job_id"}, "job_id (a string) is required", "missing"));
      }
      RouteCall rc = Synthetic(call, "GET", "/v1/tasks/jobs/" + job_id);
      rc.params["job_id"] = job_id;
      get_job_(std::move(rc), [answer, style](HttpResponse r) {
        answer(JobToolResult(r, style), {}, std::nullopt);
      });
      return;
    }
    case ToolKind::kListJobs: {
      RouteCall rc = Synthetic(call, "GET", "/v1/tasks/jobs");
      if (args) {
        auto limit = args->FindMember("limit");
        if (limit != args->MemberEnd()) {
          // REST reads the query string; a JSON integer becomes its digits, anything else is
          // passed as written and refused by REST's own check.
          rc.request.query["limit"] =
              limit->value.IsString() ? limit->value.GetString() : ToJson(limit->value);
        }
      }
      list_jobs_(std::move(rc), [answer, style](HttpResponse r) {
        answer(ListJobsToolResult(r, style), {}, std::nullopt);
      });
      return;
    }
    case ToolKind::kListModels: {
      std::vector<std::string> tasks;
      if (args && args->HasMember("task")) {
        if (!(*args)["task"].IsString()) {
          return fail(
              ValidationFailed({"arguments", "task"}, "task must be a string", "string_type"));
        }
        tasks.push_back((*args)["task"].GetString());
      } else {
        for (Task t : kAllTasks) tasks.emplace_back(TaskName(t));
      }
      // Each REST read answers on this thread; collected in order.
      auto responses = std::make_shared<std::vector<HttpResponse>>();
      for (const auto& task : tasks) {
        RouteCall rc = Synthetic(call, "GET", "/v1/tasks/" + task + "/models");
        rc.params["task"] = task;
        models_(std::move(rc), [responses](HttpResponse r) { responses->push_back(std::move(r)); });
      }
      answer(ListModelsToolResult(*responses, style), {}, std::nullopt);
      return;
    }
    case ToolKind::kListContexts:
      // The handler answers on this thread (the roster is in memory).
      contexts_(Synthetic(call, "GET", "/v1/tasks/expression/contexts"),
                [answer, style](HttpResponse r) {
                  answer(ListContextsToolResult(r, style), {}, std::nullopt);
                });
      return;
  }
}

void McpEndpoint::Handle(RouteCall call, Responder respond) {
  const HttpRequest& request = call.request;
  if (!OriginAllowed(request)) {
    respond(RpcHttpError(403, "null", RpcErrorCode::kInvalidRequest,
                         "Origin not allowed: only the endpoint's own origin may call it"));
    return;
  }
  if (!JsonContentType(request)) {
    respond(RpcHttpError(415, "null", RpcErrorCode::kInvalidRequest,
                         "Content-Type must be application/json"));
    return;
  }
  if (!AcceptsJson(request)) {
    respond(RpcHttpError(406, "null", RpcErrorCode::kInvalidRequest,
                         "Accept must include application/json (and text/event-stream)"));
    return;
  }
  RpcBody body = ParseRpcBody(request.body);
  if (body.error) {
    respond(RpcHttpError(400, "null", body.error->code, body.error->message));
    return;
  }
  const bool initializing = body.messages.size() == 1 && body.messages[0].method == "initialize";
  auto header_version = request.Header("mcp-protocol-version");
  if (header_version && !Served(*header_version) && !initializing) {
    respond(RpcHttpError(400, "null", RpcErrorCode::kInvalidRequest,
                         "unsupported MCP-Protocol-Version '" + *header_version + "'"));
    return;
  }
  const std::string version =
      header_version && Served(*header_version) ? *header_version : std::string(kDefaultVersion);
  if (body.batch && version >= kFirstUnbatchedVersion) {
    respond(RpcHttpError(400, "null", RpcErrorCode::kInvalidRequest,
                         "JSON-RPC batches are not part of MCP " + version));
    return;
  }
  if (!body.batch && body.messages[0].kind == RpcMessage::Kind::kInvalid) {
    const RpcMessage& m = body.messages[0];
    respond(RpcHttpError(400, m.id_json, m.error->code, m.error->message));
    return;
  }

  // Requests (and invalid messages) are answered; notifications and responses are not.
  std::vector<const RpcMessage*> answered;
  for (const auto& m : body.messages) {
    if (m.kind == RpcMessage::Kind::kRequest || m.kind == RpcMessage::Kind::kInvalid) {
      answered.push_back(&m);
    }
  }
  if (answered.empty()) {
    HttpResponse accepted;
    accepted.status = 202;
    respond(std::move(accepted));
    return;
  }

  Context context;
  context.call = &call;
  context.style.structured = version >= kFirstStructuredVersion;
  context.style.base_url = BaseUrl(request);
  context.event_stream = AcceptsEventStream(request);
  auto exchange = std::make_shared<Exchange>(answered.size(), body.batch, context.event_stream,
                                             std::move(respond));
  context.open_stream = [exchange] { return exchange->OpenStream(); };
  for (size_t slot = 0; slot < answered.size(); ++slot) {
    const RpcMessage& m = *answered[slot];
    auto reply = [exchange, slot](std::string json, std::vector<std::string> notes = {},
                                  std::optional<int> retry_after = std::nullopt) {
      exchange->Answer(slot, std::move(json), std::move(notes), retry_after);
    };
    if (m.kind == RpcMessage::Kind::kInvalid) {
      reply(RpcErrorJson(m.id_json, *m.error));
    } else if (m.method == "initialize") {
      RpcError error{RpcErrorCode::kInternalError, ""};
      std::string result = Initialize(m.params, &error);
      reply(result.empty() ? RpcErrorJson(m.id_json, error) : RpcResultJson(m.id_json, result));
    } else if (m.method == "ping") {
      reply(RpcResultJson(m.id_json, "{}"));
    } else if (m.method == "tools/list") {
      reply(
          RpcResultJson(m.id_json, ToolsListJson(*services_.catalogue, context.style.structured)));
    } else if (m.method == "tools/call") {
      CallTool(context, m, reply);
    } else {
      reply(RpcErrorJson(m.id_json,
                         RpcError{RpcErrorCode::kMethodNotFound, "method not found: " + m.method}));
    }
  }
}

}  // namespace

RouteHandler MakeMcpHandler(const GatewayServices& services) {
  auto endpoint = std::make_shared<McpEndpoint>(services);
  return [endpoint](RouteCall call, Responder respond) {
    endpoint->Handle(std::move(call), std::move(respond));
  };
}

RouteHandler MakeMcpMethodNotAllowedHandler() {
  return [](RouteCall, Responder respond) {
    HttpResponse r = RpcHttpError(405, "null", RpcErrorCode::kInvalidRequest,
                                  "this MCP endpoint is stateless: POST only (no server stream, "
                                  "no session to delete)");
    r.SetHeader("Allow", "POST");
    respond(std::move(r));
  };
}

}  // namespace dnaserve::gateway::mcp
