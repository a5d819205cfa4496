// The MCP tools: one per prediction task, the find-genes workflow, variant scoring, and the job
// and model reads.
// The variant workflow is not a tool (the contract says so: it takes an object in the caller's
// storage, not a sequence, and is under development).
//
// Each tool's inputSchema is the request schema the OpenAPI document publishes for the REST
// operation the tool wraps (its $refs inlined, x- extensions dropped), and that document is
// generated from the validation tables (core/validation/request_schema.h): one source, so a
// tool can neither accept nor advertise anything its REST operation would not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/task.h"
#include "core/dispatch/model_catalogue.h"

namespace dnaserve::gateway::mcp {

enum class ToolKind {
  kPredict,
  kFindGenes,
  kGetJob,
  kListJobs,
  kListModels,
  kListContexts,
  kScoreVariants,  // POST /v1/variants/score
};

struct ToolDef {
  std::string name;  // "predict_promoter", "find_genes_and_predict_expression", "get_job", ...
  ToolKind kind;
  std::optional<Task> task;  // kPredict only
};

const std::vector<ToolDef>& Tools();
const ToolDef* FindTool(std::string_view name);

// A job-creating tool call runs as an async job (the tool returns the job id at once) when its
// sequence is longer than this: the contract's advisory async threshold for the operation (spec,
// Limits), which for find-genes is also the enforced sync cap. nullopt: always synchronous.
std::optional<int64_t> AsyncThresholdBp(const ToolDef& tool);

// How many top items a job tool result carries (README: "Results sized for an agent").
inline constexpr size_t kTopItems = 20;

// The tools/list result: {"tools":[...]}. `structured` adds title and outputSchema (MCP
// 2025-06-18 and later).
std::string ToolsListJson(const core::ModelCatalogue& catalogue, bool structured);

// The inputSchema of one tool as JSON text (also used by the unit tests).
std::string InputSchemaJson(const core::ModelCatalogue& catalogue, const ToolDef& tool);

}  // namespace dnaserve::gateway::mcp
