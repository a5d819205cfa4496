// One renderer per task: what each task adds to the {data, meta} envelope that
// predict_response.cc writes around it. Adding a task means adding a row to the table in
// task_renderers.cc (and its response schema to gateway/openapi/openapi.base.json).
// Internal to gateway/render/.
#pragma once

#include <string>
#include <vector>

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "core/render/chromatin_labels.h"
#include "core/render/json_writer.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {

// What one render works out from the worker's result once, for every writer that reads it
// (the body's size estimate, the summary and the data all walk the chromatin labels).
struct RenderShared {
  // Keeps pointers into `result`, which must outlive this object.
  explicit RenderShared(const worker::v1::PredictResult& result);

  // The chromatin features' names and categories, wherever the worker put them (empty for the
  // other tasks).
  ChromatinLabels chromatin_labels;
  // Chromatin categories in the order the windows' features are grouped: the model's own
  // category list first, then any category a feature names that the list lacks.
  std::vector<std::string> chromatin_categories;
};

// Each writer writes keys (and their values) into an object the caller has opened.
using TaskWriter = void (*)(JsonWriter& w, const ValidatedPredict& input,
                            const worker::v1::PredictResult& result, const RenderShared& shared);

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
