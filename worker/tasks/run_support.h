// Helpers shared by the per-task runners (internal to worker/tasks/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dnaserve/worker/v1/worker.pb.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model.h"
#include "worker/tasks/task_runner.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {

// Windows per forward pass, sized so one batch stays around 10-20k bases.
inline constexpr int kPromoterBatchWindows = 8;
inline constexpr int kSpliceBatchWindows = 1;
// Rows per forward call of packed variant-scoring blocks (SpliceOptions.packed_window_bp).
inline constexpr int kSplicePackedBatchRows = 32;
inline constexpr int kEnhancerBatchWindows = 64;
inline constexpr int kChromatinBatchWindows = 16;

// Non-empty and only A, C, G, T, N (the gateway normalises; the worker still checks).
Status CheckSequence(std::string_view sequence);

// The model input of windows [first, last): each window padded with N to `context` and
// tokenised, one row per window. Rows of different lengths (BPE, Nucleotide Transformer k-mers)
// are right-padded with the tokenizer's pad id to the longest. `tokens`, when given, receives each
// window's tokens (spans relative to the window start) for runners that map token outputs to bases.
IdTensor TokenizeWindows(std::string_view sequence, const std::vector<WindowSpan>& windows,
                         int first, int last, int64_t context, const Tokenizer& tokenizer,
                         std::vector<std::vector<Token>>* tokens = nullptr);

// One forward pass; checks the output count, each output's exact shape and that every value is
// finite, so runners can index the buffers without further checks.
StatusOr<std::vector<FloatTensor>> ForwardChecked(
    Model& model, const ModelManifest& manifest, const std::vector<IdTensor>& inputs,
    const std::vector<std::vector<int64_t>>& expected_shapes);

// Index of `label` in the manifest's output_labels (validated at load, so always found).
int LabelIndex(const ModelManifest& manifest, std::string_view label);

// Stops between batches when the caller went away; reports progress after each batch.
bool ShouldStop(const RunHooks& hooks);
void ReportProgress(const RunHooks& hooks, int done, int total);

// Seqid for text tracks: the request's sequence_name, "sequence" when empty.
std::string TrackSeqid(const v1::PredictRequest& request);

StatusOr<v1::PredictResult> RunPromoter(Model& model, const ModelManifest& manifest,
                                        const Tokenizer& tokenizer,
                                        const v1::PredictRequest& request, const RunHooks& hooks);
StatusOr<v1::PredictResult> RunSplice(Model& model, const ModelManifest& manifest,
                                      const Tokenizer& tokenizer, const v1::PredictRequest& request,
                                      const RunHooks& hooks);
StatusOr<v1::PredictResult> RunEnhancer(Model& model, const ModelManifest& manifest,
                                        const Tokenizer& tokenizer,
                                        const v1::PredictRequest& request, const RunHooks& hooks);
StatusOr<v1::PredictResult> RunChromatin(Model& model, const ModelManifest& manifest,
                                         const Tokenizer& tokenizer,
                                         const v1::PredictRequest& request, const RunHooks& hooks);
StatusOr<v1::PredictResult> RunAnnotation(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request, const RunHooks& hooks);
StatusOr<v1::PredictResult> RunExpression(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request, const RunHooks& hooks);

}  // namespace dnaserve::worker
