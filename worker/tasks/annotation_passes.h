// The annotation runner's model passes: the sequence's windows (and, by default, its reverse
// complement's) through the model, stitched into per-base scores in plus-strand coordinates.
// Internal to worker/tasks/ (annotation_task.cc decodes what this returns); its own header so
// the strand-complete path can be compared with the full one on the scores themselves.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "worker/manifest/manifest.h"
#include "worker/models/model.h"
#include "worker/tasks/task_runner.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker {

struct AnnotationPassOptions {
  bool reverse_complement = true;  // also run the reverse complement and average it in
  int batch_size = 8;              // windows per forward call
};

struct AnnotationScores {
  PositionScores stitched;                   // per base, plus-strand coordinates
  std::vector<WindowTypeScores> type_scores;  // per window of both passes
  int windows_processed = 0;                  // windows run through the model (both passes)
  int forward_passes = 0;                     // model calls
};

// Non-overlapping windows of context_window_bp, batch_size per call; the reverse pass's rows
// are mapped back to plus coordinates with each strand's channels exchanged (PlaceWindow) and
// averaged in with EdgeWeight (AverageInto).
//
// A package with `strand_complete_labels` takes a second input per call, [B] int64: 1 on the
// forward pass, 0 on the reverse pass, where the model skips those channels (they are complete
// after the forward pass); they are then taken from the forward pass alone, every other channel
// is averaged as before. With `neighbour_bp` also a third, [B, 2 * neighbour_bp]: each window's
// real neighbouring bases (on the pass's own sequence), so what the model computes for both
// strands needs no second pass near the window's edges either. Packages without the fields get
// one input, as always.
StatusOr<AnnotationScores> RunAnnotationPasses(Model& model, const ModelManifest& manifest,
                                               const Tokenizer& tokenizer,
                                               const std::string& sequence,
                                               const AnnotationChannels& channels,
                                               const AnnotationPassOptions& options,
                                               const RunHooks& hooks);

}  // namespace dnaserve::worker
