// JSON renderings of the job resource and the model roster: the async submit/progress bodies
// and the read-only listings. RapidJSON stays behind this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "core/jobs/job_store.h"

namespace dnaserve::gateway {

// 202 bodies of the job resource.
std::string RenderJobSubmitted(const std::string& job_id, const std::string& task);
std::string RenderJobProgress(const core::JobRecord& job, int64_t now_ms);

// GET /v1/tasks/jobs -> {jobs, count}
std::string RenderJobList(const std::vector<core::JobRecord>& jobs);

// GET /v1/tasks/{task}/models -> {task, default_model, models}
std::string RenderModelList(Task task, const std::vector<worker::v1::ModelInfo>& models);

// The public name of every model's card file, whatever its package calls it.
inline constexpr char kModelCardFileName[] = "MODEL_CARD.md";
// Where a model's card is served (the `card` field of the models list): inside
// /v1/models/{id}/card/, so the card's relative links to its PNGs resolve to that route. Model
// ids are [A-Za-z0-9._-] (worker manifests), so nothing needs escaping.
inline std::string ModelCardUrl(const std::string& model_id) {
  return "/v1/models/" + model_id + "/card/" + kModelCardFileName;
}

}  // namespace dnaserve::gateway
