// JSON renderings of the job resource and the model roster: the async submit/progress bodies
// and the read-only listings. RapidJSON stays behind this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "gateway/jobs/job_store.h"

namespace dnaserve::gateway {

// 202 bodies of the job resource.
std::string RenderJobSubmitted(const std::string& job_id, const std::string& task);
std::string RenderJobProgress(const JobRecord& job, int64_t now_ms);

// GET /v1/tasks/jobs -> {jobs, count}
std::string RenderJobList(const std::vector<JobRecord>& jobs);

// GET /v1/tasks/{task}/models -> {task, default_model, models}
std::string RenderModelList(Task task, const std::vector<worker::v1::ModelInfo>& models);

}  // namespace dnaserve::gateway
