// JSON renderings of predict responses: the {data, meta} envelope, filled per task by the
// renderer table of task_renderers.h. RapidJSON stays behind this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {

struct ResponseIds {
  std::string job_id;
  std::string request_id;
};

// The 200 body a synchronous JSON call returns (and a completed poll returns verbatim).
std::string RenderPredictJson(const ValidatedPredict& input, const worker::v1::PredictResult& result,
                              const ResponseIds& ids);

// The text track for `format`, taken from result.formats; internal error when absent.
StatusOr<std::string> RenderPredictText(OutputFormat format,
                                        const worker::v1::PredictResult& result);

}  // namespace dnaserve::core
