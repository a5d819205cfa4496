// Runs one prediction of a model package's task: windowing, batched forward passes, stitching,
// result messages and text tracks. LibTorch-free: the model is reached through
// worker/models/model.h.
#pragma once

#include <functional>

#include "common/status.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::worker {

struct RunHooks {
  // Polled between window batches; true stops the run with RunCancelledStatus().
  std::function<bool()> cancelled;
  // Called after each batch with windows done and windows in total.
  std::function<void(int done, int total)> progress;
};

// Fills windows_processed, the task's result message, `formats` (the text formats the task
// supports, common/task.h SupportedFormats) and `tracks`, as far as request.result_format asks
// for them (worker/tasks/reply_parts.h; unset -> all of it). The caller adds model, cold_start
// and timings. Request options of another task -> task_not_supported_by_model; options left
// unset -> the contract's defaults; a sequence outside ACGTN or of the wrong length, or a
// result_format naming a text format the task lacks -> validation_failed; model failures and
// malformed model outputs -> internal_error.
StatusOr<v1::PredictResult> RunPrediction(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request, const RunHooks& hooks);
// The same with the manifest's tokenizer built first (LoadTokenizer; one that cannot be built ->
// model_loading). For tests and tools; the worker service uses the tokenizer its registry loaded.
StatusOr<v1::PredictResult> RunPrediction(Model& model, const ModelManifest& manifest,
                                          const v1::PredictRequest& request, const RunHooks& hooks);

// What RunPrediction returns when hooks.cancelled() said stop.
Status RunCancelledStatus();
bool IsRunCancelled(const Status& status);

}  // namespace dnaserve::worker
