// The agent-protocol interface: a Model Context Protocol (MCP) server over Streamable HTTP at
// POST /mcp, stateless (no Mcp-Session-Id; every POST stands alone).
//
// Keys, quotas and jobs are the REST interface's: the route sits behind the same pipeline
// (Bearer auth, 401/403), and each job-creating tool call is metered with MeterCall (a token and
// a concurrency lease, exactly a REST predict's cost) and then handed to the very RouteHandler
// the REST operation uses, with a synthetic request and a responder that captures the answer.
// So a tool call is a job in the same store, admitted and started by the same code
// (gateway/handlers/job_start.h), and anything that changes there changes here.
//
// What costs quota: tools/call of predict_* and find_genes_and_predict_expression (one token
// each, also inside a batch). initialize, tools/list, ping, get_job, list_jobs and list_models
// cost nothing, like the REST reads they wrap. A quota refusal is a tool result with
// isError: true and REST's error object (code too_many_requests), plus retry_after_seconds.
#pragma once

#include <array>
#include <string_view>

#include "gateway/handlers/services.h"

namespace dnaserve::gateway::mcp {

// MCP revisions served, newest first. The first is answered to an initialize asking for one
// not listed. A request without MCP-Protocol-Version is taken as 2025-03-26 (the spec's rule).
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {"2025-11-25", "2025-06-18",
                                                                      "2025-03-26", "2024-11-05"};

// POST /mcp.
RouteHandler MakeMcpHandler(const GatewayServices& services);
// GET and DELETE /mcp: 405 (no server-initiated stream, no sessions to end), as the transport
// allows.
RouteHandler MakeMcpMethodNotAllowedHandler();

}  // namespace dnaserve::gateway::mcp
