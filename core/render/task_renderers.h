// One renderer per task: what each task adds to the {data, meta} envelope that
// predict_response.cc writes around it. Adding a task means adding a row to the table in
// task_renderers.cc (and its response schema to gateway/openapi/openapi.base.json).
// Internal to gateway/render/.
#pragma once

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "core/render/json_writer.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {

// Each writer writes keys (and their values) into an object the caller has opened.
using TaskWriter = void (*)(JsonWriter& w, const ValidatedPredict& input,
                            const worker::v1::PredictResult& result);

struct TaskRenderer {
  TaskWriter input;    // data.input after sequence_name (expression: its scored window)
  TaskWriter summary;  // data.summary (its keys are not part of the contract)
  TaskWriter data;     // the task's own data keys (regions, sites, windows, transcripts, ...)
  TaskWriter formats;  // data.formats: the text tracks the worker rendered (gff3, bed, ...)
  TaskWriter counts;   // meta.task_specific_counts after its task key
  TaskWriter meta;     // the task's own meta keys after task_specific_counts
};

const TaskRenderer& RendererFor(Task task);

}  // namespace dnaserve::core
