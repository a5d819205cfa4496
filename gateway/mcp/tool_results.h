// REST answers turned into MCP tool results (CallToolResult JSON), sized for an agent's context:
// the status, ids, counts, the task's summary object and at most kTopItems of the task's main
// list (each item reduced to its scalar fields), plus where the full result is (the job over
// REST, as a resource_link) and how to get a text track. Never the whole body: a chromatin or
// splice result can be tens of MB.
//
// Errors keep the REST error object verbatim (code, message, request_id, details) in an
// isError result, so an agent switches on the same error.code a REST client does.
#pragma once

#include <string>
#include <vector>

#include "gateway/http/http_types.h"

namespace dnaserve::gateway::mcp {

struct ResultStyle {
  // MCP 2025-06-18 and later: structuredContent and a resource_link; older revisions get the
  // same JSON as text only.
  bool structured = true;
  std::string base_url;  // "http://host:port", for absolute job links
};

// A job's REST answer: the predict/workflow POST (200 result, 202 accepted, or an error) or a
// poll of the job (200, 202 running, or the job's failure).
std::string JobToolResult(const HttpResponse& response, const ResultStyle& style);
// GET /v1/tasks/jobs.
std::string ListJobsToolResult(const HttpResponse& response, const ResultStyle& style);
// list_contexts: the GET /v1/tasks/expression/contexts body as structured content.
std::string ListContextsToolResult(const HttpResponse& response, const ResultStyle& style);
// GET /v1/tasks/{task}/models, once per task asked for.
std::string ListModelsToolResult(const std::vector<HttpResponse>& responses,
                                 const ResultStyle& style);
// Any REST error envelope (a quota refusal, a validation failure) as an isError result.
std::string ErrorToolResult(const HttpResponse& response, const ResultStyle& style);

}  // namespace dnaserve::gateway::mcp
