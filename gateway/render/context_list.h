// The body of GET /v1/tasks/expression/contexts (and of the MCP tool list_contexts): each
// expression model's training contexts with their ontology terms, from the roster the workers
// reported (ModelInfo.contexts, read from the packages' manifests).
#pragma once

#include <string>
#include <vector>

#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::gateway {

// {task: "expression", default_model, models: [{name, is_default, free_text_threshold,
// contexts: [{id, name, curie, label, group}]}]}; empty strings are written as null (a package
// without an ontology table).
std::string RenderContextList(const std::vector<worker::v1::ModelInfo>& models);

}  // namespace dnaserve::gateway
