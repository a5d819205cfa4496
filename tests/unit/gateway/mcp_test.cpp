// The MCP endpoint's pieces without sockets: JSON-RPC framing and its error codes, the tool
// catalogue (input schemas from the OpenAPI document), results sized for an agent, and the
// endpoint behind the real request pipeline (in-memory stores, a scripted backend).
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <future>
#include <thread>

#include "gateway/handlers/job_runner.h"
#include "gateway/http/routes.h"
#include "tests/support/in_memory_job_store.h"
#include "gateway/mcp/json_rpc.h"
#include "gateway/mcp/mcp_endpoint.h"
#include "gateway/mcp/tool_catalogue.h"
#include "gateway/mcp/tool_results.h"
#include "tests/support/in_memory_quota_store.h"
#include "tests/support/key_entries.h"
#include "tests/support/pipeline_calls.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;
using namespace dnaserve::gateway::mcp;

namespace {

namespace pb = dnaserve::worker::v1;

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  INFO(text);
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

int ErrorCodeOf(const std::string& json) { return Parse(json)["error"]["code"].GetInt(); }

}  // namespace

// ------------------------------------------------------------------ JSON-RPC framing

TEST_CASE("mcp json-rpc: a body that is not JSON is a parse error (-32700)", "[gateway][mcp]") {
  for (const char* body : {"", "{", "{\"jsonrpc\":\"2.0\",", "not json", "[1,2"}) {
    RpcBody b = ParseRpcBody(body);
    INFO(body);
    REQUIRE(b.error);
    CHECK(b.error->code == RpcErrorCode::kParseError);
  }
  // Nesting beyond the shape limit is refused before the parser builds anything.
  RpcBody deep = ParseRpcBody(std::string(100, '[') + std::string(100, ']'));
  REQUIRE(deep.error);
  CHECK(deep.error->code == RpcErrorCode::kParseError);
}

TEST_CASE("mcp json-rpc: a key repeated at any depth is a parse error (-32700) naming it",
          "[gateway][mcp]") {
  struct Case {
    const char* body;
    const char* says;
  };
  for (
      const Case& c : {
          Case{R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})",
               "'id' in the top-level object"},
          Case{
              R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"predict_promoter",)"
              R"("arguments":{"sequence":"ACGT","sequence":"TTTT"}}})",
              "'sequence' in params.arguments"},
          Case{
              R"([{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"2.0","method":"ping","method":"x"}])",
              "'method' in [1]"},
      }) {
    INFO(c.body);
    RpcBody b = ParseRpcBody(c.body);
    REQUIRE(b.error);
    CHECK(b.error->code == RpcErrorCode::kParseError);
    CHECK_THAT(b.error->message, Catch::Contains(c.says));
  }
  CHECK_FALSE(ParseRpcBody(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"id":1}})").error);
}

TEST_CASE("mcp json-rpc: JSON that is not a message is an invalid request (-32600)",
          "[gateway][mcp]") {
  for (const char* body : {"42", "\"x\"", "null", "[]"}) {
    RpcBody b = ParseRpcBody(body);
    INFO(body);
    REQUIRE(b.error);
    CHECK(b.error->code == RpcErrorCode::kInvalidRequest);
  }
  struct Case {
    const char* body;
    RpcErrorCode code;
    const char* id_json;
  };
  for (const Case& c : {
           Case{R"({"id":1,"method":"ping"})", RpcErrorCode::kInvalidRequest, "1"},
           Case{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", RpcErrorCode::kInvalidRequest, "1"},
           Case{R"({"jsonrpc":"2.0","id":null,"method":"ping"})", RpcErrorCode::kInvalidRequest,
                "null"},
           Case{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", RpcErrorCode::kInvalidRequest,
                "null"},
           Case{R"({"jsonrpc":"2.0","id":"a","method":7})", RpcErrorCode::kInvalidRequest, "\"a\""},
           Case{R"({"jsonrpc":"2.0","id":2})", RpcErrorCode::kInvalidRequest, "2"},
           Case{R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":5})",
                RpcErrorCode::kInvalidRequest, "3"},
           Case{R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]})",
                RpcErrorCode::kInvalidParams, "4"},
       }) {
    RpcBody b = ParseRpcBody(c.body);
    INFO(c.body);
    REQUIRE_FALSE(b.error);
    REQUIRE(b.messages.size() == 1);
    CHECK(b.messages[0].kind == RpcMessage::Kind::kInvalid);
    CHECK(b.messages[0].error->code == c.code);
    CHECK(b.messages[0].id_json == c.id_json);
  }
}

TEST_CASE("mcp json-rpc: requests, notifications, responses and batches", "[gateway][mcp]") {
  RpcBody b = ParseRpcBody(
      R"([{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"get_job"}},
          {"jsonrpc":"2.0","method":"notifications/initialized"},
          {"jsonrpc":"2.0","id":9,"result":{}},
          7])");
  REQUIRE_FALSE(b.error);
  REQUIRE(b.batch);
  REQUIRE(b.messages.size() == 4);
  CHECK(b.messages[0].kind == RpcMessage::Kind::kRequest);
  CHECK(b.messages[0].id_json == "\"x\"");
  CHECK(b.messages[0].method == "tools/call");
  REQUIRE(b.messages[0].params != nullptr);
  CHECK(std::string((*b.messages[0].params)["name"].GetString()) == "get_job");
  CHECK(b.messages[1].kind == RpcMessage::Kind::kNotification);
  CHECK(b.messages[2].kind == RpcMessage::Kind::kResponse);
  CHECK(b.messages[3].kind == RpcMessage::Kind::kInvalid);
}

TEST_CASE("mcp json-rpc: responses and errors are well-formed JSON-RPC", "[gateway][mcp]") {
  auto ok = Parse(RpcResultJson("\"a\"", "{\"x\":1}"));
  CHECK(std::string(ok["jsonrpc"].GetString()) == "2.0");
  CHECK(std::string(ok["id"].GetString()) == "a");
  CHECK(ok["result"]["x"].GetInt() == 1);
  auto err = Parse(
      RpcErrorJson("7", RpcError{RpcErrorCode::kMethodNotFound, "no \"such\""}, "{\"k\":true}"));
  CHECK(err["id"].GetInt() == 7);
  CHECK(err["error"]["code"].GetInt() == -32601);
  CHECK(std::string(err["error"]["message"].GetString()) == "no \"such\"");
  CHECK(err["error"]["data"]["k"].GetBool());
  CHECK_FALSE(err.HasMember("result"));
}

// ------------------------------------------------------------------ catalogue and results

TEST_CASE("mcp tools: one per task plus the workflow and the reads, never the variant workflow",
          "[gateway][mcp]") {
  std::vector<std::string> names;
  for (const auto& t : Tools()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"predict_promoter", "predict_splice", "predict_enhancer",
                                          "predict_chromatin", "predict_annotation",
                                          "predict_expression", "find_genes_and_predict_expression",
                                          "score_variants", "ism", "get_job", "list_jobs",
                                          "list_models", "list_contexts"});
  CHECK(FindTool("genomic_variant_interpretation") == nullptr);
}

TEST_CASE("mcp tools: inputSchema is the REST request schema, self-contained", "[gateway][mcp]") {
  auto text_has_region = [](const std::string& text) {
    return text.find("\"region\"") != std::string::npos &&
           text.find("\"strand\"") != std::string::npos;
  };
  core::ModelCatalogue catalogue;
  auto schema = Parse(InputSchemaJson(catalogue, *FindTool("predict_splice")));
  CHECK(std::string(schema["type"].GetString()) == "object");
  CHECK_FALSE(schema["additionalProperties"].GetBool());
  // Exactly one of sequence and interval (a stretch of the reference genome).
  REQUIRE(schema.HasMember("oneOf"));
  REQUIRE(schema["oneOf"].Size() == 2);
  CHECK(std::string(schema["oneOf"][0]["required"][0].GetString()) == "sequence");
  CHECK(std::string(schema["oneOf"][1]["required"][0].GetString()) == "interval");
  CHECK(schema["properties"]["interval"].HasMember("anyOf"));
  CHECK(text_has_region(InputSchemaJson(catalogue, *FindTool("predict_splice"))));
  CHECK(schema["properties"]["sequence"]["minLength"].GetInt() == MinSequenceBp(Task::kSplice));
  // The nested options object is inlined (options is nullable: anyOf [object, null]).
  const auto text = InputSchemaJson(catalogue, *FindTool("predict_splice"));
  CHECK(text.find("$ref") == std::string::npos);
  CHECK(text.find("\"x-") == std::string::npos);
  CHECK(text.find("site_types") != std::string::npos);
  auto fg = Parse(InputSchemaJson(catalogue, *FindTool("find_genes_and_predict_expression")));
  CHECK(fg["properties"]["sequence"]["minLength"].GetInt() == 1000);
  // score_variants takes the REST request as it is: variants and each scorer's options.
  auto score = Parse(InputSchemaJson(catalogue, *FindTool("score_variants")));
  // (more than 100 run as a batch job, polled with get_job)
  CHECK(score["properties"]["variants"]["maxItems"].GetInt() == 20000);
  CHECK(score["properties"]["scorers"]["properties"].HasMember("expression"));
  CHECK(score["properties"]["scorers"]["properties"]["chromatin"]["properties"]["top"]["default"]
            .GetInt() == 10);
  // ism takes POST /v1/ism's request: a context, the window, one scorer and its options.
  auto ism = Parse(InputSchemaJson(catalogue, *FindTool("ism")));
  CHECK(std::string(ism["required"][0].GetString()) == "window");
  CHECK(ism["properties"]["window"]["required"].Size() == 2);
  CHECK(ism["properties"]["scorers"]["properties"].HasMember("promoter"));
  // expression too, with its one context (ism_expression.h).
  REQUIRE(ism["properties"]["scorers"]["properties"].HasMember("expression"));
  CHECK(ism["properties"]["scorers"]["properties"]["expression"]["properties"]["contexts"]
           ["maxItems"]
               .GetInt() == 1);
  CHECK(text_has_region(InputSchemaJson(catalogue, *FindTool("ism"))));
  auto jobs = Parse(InputSchemaJson(catalogue, *FindTool("list_jobs")));
  CHECK(jobs["properties"]["limit"]["maximum"].GetInt() == 500);
  auto models = Parse(InputSchemaJson(catalogue, *FindTool("list_models")));
  CHECK(models["properties"]["task"]["enum"].Size() == 6);
}

TEST_CASE("mcp tools/list: outputSchema and title only for revisions that have them",
          "[gateway][mcp]") {
  core::ModelCatalogue catalogue;
  auto modern = Parse(ToolsListJson(catalogue, true));
  auto old = Parse(ToolsListJson(catalogue, false));
  REQUIRE(modern["tools"].Size() == Tools().size());
  for (const auto& t : modern["tools"].GetArray()) {
    CHECK(t.HasMember("outputSchema"));
    CHECK(t["outputSchema"].IsObject());  // the schema text parses (not null)
    CHECK(t.HasMember("inputSchema"));
    CHECK(std::string(t["description"].GetString()).size() > 40);
  }
  for (const auto& t : old["tools"].GetArray()) CHECK_FALSE(t.HasMember("outputSchema"));
}

TEST_CASE("mcp results: a long list is cut to the top items, ranked, with the totals",
          "[gateway][mcp]") {
  std::string regions;
  for (int i = 0; i < 30; ++i) {
    if (i) regions += ',';
    regions += "{\"start\":" + std::to_string(i * 10) + ",\"end\":" + std::to_string(i * 10 + 5) +
               ",\"score\":" + std::to_string(i / 100.0) + "}";
  }
  HttpResponse r;
  r.body = R"({"data":{"task":"promoter","summary":{"regions_found":30},"regions":[)" + regions +
           R"(],"window_details":[],"formats":null},"meta":{"job_id":"j1","request_id":"r1",)"
           R"("task":"promoter","model":"m","task_specific_counts":{"regions_found":30}}})";
  auto result = Parse(JobToolResult(r, ResultStyle{true, "http://h:1"}));
  CHECK_FALSE(result["isError"].GetBool());
  const auto& sc = result["structuredContent"];
  CHECK(std::string(sc["status"].GetString()) == "completed");
  CHECK(sc["top_items"]["total"].GetInt() == 30);
  CHECK(sc["top_items"]["returned"].GetInt() == static_cast<int>(kTopItems));
  CHECK(sc["top_items"]["items"][0]["score"].GetDouble() == Approx(0.29));
  CHECK(std::string(sc["full_result"]["job_url"].GetString()) == "http://h:1/v1/tasks/jobs/j1");
  CHECK(std::string(result["content"][1]["type"].GetString()) == "resource_link");
  // Revisions before 2025-06-18: text only.
  auto old = Parse(JobToolResult(r, ResultStyle{false, "http://h:1"}));
  CHECK_FALSE(old.HasMember("structuredContent"));
  CHECK(old["content"].Size() == 1);
}

TEST_CASE("mcp results: a REST error is an isError result with the same error object",
          "[gateway][mcp]") {
  HttpResponse r;
  r.status = 422;
  r.body = R"({"error":{"code":"validation_failed","message":"bad","request_id":"q",)"
           R"("details":{"errors":[{"loc":["body","sequence"],"msg":"m","type":"t"}]}}})";
  auto result = Parse(JobToolResult(r, ResultStyle{true, ""}));
  CHECK(result["isError"].GetBool());
  const auto& sc = result["structuredContent"];
  CHECK(std::string(sc["status"].GetString()) == "failed");
  CHECK(sc["http_status"].GetInt() == 422);
  CHECK(std::string(sc["error"]["code"].GetString()) == "validation_failed");
  CHECK(sc["error"]["details"]["errors"].Size() == 1);
}

// ------------------------------------------------------------------ the endpoint

namespace {

class EchoBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task, const pb::PredictRequest& request, const core::CallContext&,
                                      const core::ProgressCallback& on_progress) override {
    if (gate) {
      pb::Progress p;
      p.set_windows_done(2);
      p.set_windows_total(5);
      if (on_progress) on_progress(p);  // 40 %
      gate->wait();
    }
    pb::PredictResult result;
    result.set_model(request.model());
    result.set_windows_processed(1);
    auto* w = result.mutable_enhancer()->add_windows();
    w->set_end(249);
    w->set_dev(0.5);
    w->set_hk(0.25);
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }
  std::shared_future<void>* gate = nullptr;  // set: report 40 % and wait for it
};

const char* kKey = "dns_mcp-unit-key";

struct Endpoint {
  core::ManualClock clock;
  core::InMemoryJobStore jobs{&clock};
  core::InMemoryQuotaStore quotas{&clock};
  EchoBackend backend;
  core::ModelCatalogue catalogue;
  core::Executor executor{2, 8};
  JobRunner runner{&jobs, &executor};
  DocsHandler docs{"/nonexistent"};
  std::unique_ptr<KeyStore> keys;
  std::unique_ptr<RequestPipeline> pipeline;

  explicit Endpoint(int rate_per_minute = 600, int max_concurrency = 4) {
    keys = testing::KeyStoreOf({testing::KeyEntry(kKey, "agent", true, rate_per_minute,
                                                  max_concurrency)});
    pb::ModelInfo m;
    m.set_id("enhancer-test");
    m.set_task(pb::TASK_ENHANCER);
    m.set_is_default(true);
    catalogue.SetModels(Task::kEnhancer, {m});
    GatewayServices s;
    s.keys = keys.get();
    s.quotas = &quotas;
    s.jobs = &jobs;
    s.backend = &backend;
    s.catalogue = &catalogue;
    s.docs = &docs;
    s.runner = &runner;
    pipeline = std::make_unique<RequestPipeline>(s, BuildRoutes(s));
    runner.Start();  // as main does: heartbeats and the writes after a sync reply
  }
  ~Endpoint() {
    runner.Stop();
    executor.Shutdown();
  }

  HttpResponse Post(const std::string& body, std::map<std::string, std::string> headers = {}) {
    auto future = PostAsync(body, std::move(headers));
    REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    return future.get();
  }

  std::future<HttpResponse> PostAsync(const std::string& body,
                                      std::map<std::string, std::string> headers = {}) {
    HttpRequest req;
    req.method = "POST";
    req.path = "/mcp";
    headers.emplace("authorization", std::string("Bearer ") + kKey);
    headers.emplace("content-type", "application/json");
    headers.emplace("accept", "application/json, text/event-stream");
    headers.emplace("host", "gw.test:8080");
    req.headers = std::move(headers);
    req.body = body;
    req.request_id = "req-mcp";
    return testing::StartPipelineCall(*pipeline, std::move(req));
  }
};

std::string Call(int id, const std::string& tool, const std::string& args) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":)" + args + "}}";
}

const std::string kEnhancerArgs = "{\"sequence\":\"" + std::string(300, 'A') + "\"}";

}  // namespace

TEST_CASE("mcp endpoint: HTTP-level refusals", "[gateway][mcp]") {
  Endpoint e;
  const std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  CHECK(e.Post(ping).status == 200);
  CHECK(e.Post(ping, {{"origin", "http://evil.example"}}).status == 403);
  CHECK(e.Post(ping, {{"origin", "http://gw.test:8080"}}).status == 200);
  CHECK(e.Post(ping, {{"content-type", "text/plain"}}).status == 415);
  CHECK(e.Post(ping, {{"accept", "text/html"}}).status == 406);
  CHECK(e.Post(ping, {{"mcp-protocol-version", "1999-01-01"}}).status == 400);
  CHECK(e.Post("{oops").status == 400);
  CHECK(ErrorCodeOf(e.Post("{oops").body) == -32700);
  const std::string twice = R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"})";
  CHECK(e.Post(twice).status == 400);
  CHECK(ErrorCodeOf(e.Post(twice).body) == -32700);
  // Batches exist in 2025-03-26 only.
  const std::string batch = "[" + ping + "]";
  CHECK(e.Post(batch, {{"mcp-protocol-version", "2025-03-26"}}).status == 200);
  CHECK(e.Post(batch, {{"mcp-protocol-version", "2025-06-18"}}).status == 400);
  // Notifications alone: 202, no body.
  auto accepted = e.Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(accepted.status == 202);
  CHECK(accepted.body.empty());
}

TEST_CASE("mcp endpoint: initialize negotiates a served revision", "[gateway][mcp]") {
  Endpoint e;
  auto init = [&](const std::string& version) {
    auto r =
        e.Post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
               version + R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE(r.status == 200);
    return std::string(Parse(r.body)["result"]["protocolVersion"].GetString());
  };
  CHECK(init("2025-06-18") == "2025-06-18");
  CHECK(init("2024-11-05") == "2024-11-05");
  CHECK(init("2030-01-01") == std::string(kProtocolVersions[0]));
  auto r = e.Post(R"({"jsonrpc":"2.0","id":1,"method":"nope/nope"})");
  CHECK(ErrorCodeOf(r.body) == -32601);
  r = e.Post(Call(2, "no_such_tool", "{}"));
  CHECK(ErrorCodeOf(r.body) == -32602);
  r = e.Post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call",)"
             R"("params":{"name":"get_job","arguments":[]}})");
  CHECK(ErrorCodeOf(r.body) == -32602);
}

TEST_CASE("mcp endpoint: a tool call is a metered job in the store", "[gateway][mcp]") {
  Endpoint e;
  auto r =
      e.Post(Call(1, "predict_enhancer", kEnhancerArgs), {{"mcp-protocol-version", "2025-06-18"}});
  REQUIRE(r.status == 200);
  auto doc = Parse(r.body);
  const auto& result = doc["result"];
  CHECK_FALSE(result["isError"].GetBool());
  const std::string job_id = result["structuredContent"]["job_id"].GetString();
  auto record = e.jobs.Get(job_id, "agent");
  // The stored copy is written just after the answer.
  for (int i = 0; i < 1000 && record.ok() && record->state == core::JobState::kRunning; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    record = e.jobs.Get(job_id, "agent");
  }
  REQUIRE(record.ok());
  CHECK(record->task == "enhancer");
  CHECK(record->state == core::JobState::kCompleted);
  // Bad input: REST's validation error, as an isError result.
  r = e.Post(Call(2, "predict_enhancer", R"({"sequence":"ACGTX"})"),
             {{"mcp-protocol-version", "2025-06-18"}});
  auto bad = Parse(r.body);
  CHECK(bad["result"]["isError"].GetBool());
  CHECK(std::string(bad["result"]["structuredContent"]["error"]["code"].GetString()) ==
        "validation_failed");
}

TEST_CASE("mcp endpoint: tool calls beyond the bucket are too_many_requests results",
          "[gateway][mcp]") {
  Endpoint e(/*rate_per_minute=*/6);  // bucket capacity 1
  const std::map<std::string, std::string> h = {{"mcp-protocol-version", "2025-03-26"}};
  // A batch of three calls: the first takes the only token, the other two are refused.
  auto r = e.Post("[" + Call(1, "predict_enhancer", kEnhancerArgs) + "," +
                      Call(2, "predict_enhancer", kEnhancerArgs) + "," +
                      Call(3, "list_jobs", "{}") + "]",
                  h);
  REQUIRE(r.status == 200);
  auto doc = Parse(r.body);
  REQUIRE(doc.IsArray());
  REQUIRE(doc.Size() == 3);
  CHECK_FALSE(doc[0]["result"]["isError"].GetBool());
  CHECK(doc[1]["result"]["isError"].GetBool());
  CHECK(Parse(doc[1]["result"]["content"][0]["text"].GetString())["error"]["code"] ==
        "too_many_requests");
  CHECK(r.FindHeader("Retry-After") != nullptr);
  // Reads cost nothing.
  CHECK_FALSE(doc[2]["result"]["isError"].GetBool());
  // initialize and tools/list do not take a token either.
  CHECK(e.Post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", h).status == 200);
}

TEST_CASE("mcp endpoint: a progressToken gets notifications from the job's current_percent",
          "[gateway][mcp]") {
  Endpoint e;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  e.backend.gate = &gate;
  auto pending = e.PostAsync(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"predict_enhancer",)"
      R"("arguments":)" +
          kEnhancerArgs + R"(,"_meta":{"progressToken":"tok-1"}}})",
      {{"mcp-protocol-version", "2025-06-18"}});
  // The answer starts at once as a stream: the notification arrives while the job still runs.
  REQUIRE(pending.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  HttpResponse r = pending.get();
  REQUIRE(r.status == 200);
  CHECK(r.content_type == "text/event-stream");
  REQUIRE(r.stream != nullptr);
  std::mutex mu;
  std::condition_variable cv;
  std::string body;
  bool closed = false;
  r.stream->Attach(
      [&](std::string data) {
        std::lock_guard<std::mutex> lock(mu);
        body += data;
        cv.notify_all();
      },
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        closed = true;
        cv.notify_all();
      });
  {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] {
      return body.find("notifications/progress") != std::string::npos;
    }));
    CHECK_FALSE(closed);  // the job is still held at 40 %
  }
  open.set_value();
  {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return closed; }));
  }
  // Events: the notification, then the response.
  std::vector<std::string> events;
  for (size_t at = body.find("data: "); at != std::string::npos; at = body.find("data: ", at + 1)) {
    events.push_back(body.substr(at + 6, body.find('\n', at) - at - 6));
  }
  REQUIRE(events.size() == 2);
  auto note = Parse(events[0]);
  CHECK(std::string(note["method"].GetString()) == "notifications/progress");
  CHECK(std::string(note["params"]["progressToken"].GetString()) == "tok-1");
  CHECK(note["params"]["progress"].GetDouble() == Approx(40.0));
  CHECK(note["params"]["total"].GetInt() == 100);
  auto answer = Parse(events[1]);
  CHECK(answer["id"].GetInt() == 1);
  CHECK_FALSE(answer["result"]["isError"].GetBool());
  // Without a token: plain JSON, no notifications.
  e.backend.gate = nullptr;
  auto plain = e.Post(Call(2, "predict_enhancer", kEnhancerArgs));
  CHECK(plain.content_type == "application/json");
}

TEST_CASE("mcp endpoint: a tool call holds a concurrency slot while its job runs",
          "[gateway][mcp]") {
  Endpoint e(/*rate_per_minute=*/600, /*max_concurrency=*/1);
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  e.backend.gate = &gate;
  // Both calls are admitted while the batch is read: the first holds the only slot (its job
  // waits on the gate), so the second is refused as a REST call would be (Retry-After: 1).
  auto pending = e.PostAsync("[" + Call(1, "predict_enhancer", kEnhancerArgs) + "," +
                                 Call(2, "predict_enhancer", kEnhancerArgs) + "]",
                             {{"mcp-protocol-version", "2025-03-26"}});
  open.set_value();
  REQUIRE(pending.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  HttpResponse r = pending.get();
  auto doc = Parse(r.body);
  REQUIRE(doc.Size() == 2);
  CHECK_FALSE(doc[0]["result"]["isError"].GetBool());
  REQUIRE(doc[1]["result"]["isError"].GetBool());
  auto refused = Parse(doc[1]["result"]["content"][0]["text"].GetString());
  CHECK(std::string(refused["error"]["code"].GetString()) == "too_many_requests");
  CHECK(refused["retry_after_seconds"].GetInt() == 1);
  // The slot is free again once the job has ended.
  e.backend.gate = nullptr;
  auto again = Parse(e.Post(Call(3, "predict_enhancer", kEnhancerArgs)).body);
  CHECK_FALSE(again["result"]["isError"].GetBool());
}
