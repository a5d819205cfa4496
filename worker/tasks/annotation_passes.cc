#include "worker/tasks/annotation_passes.h"

#include <string_view>
#include <utility>

#include "common/sequence.h"
#include "worker/tasks/run_support.h"

namespace dnaserve::worker {
namespace {

// The second input of a strand-complete model: per row, whether its strand-complete channels
// are wanted.
IdTensor WantedRows(int64_t rows, bool wanted) {
  return IdTensor{{rows}, std::vector<int64_t>(static_cast<size_t>(rows), wanted ? 1 : 0)};
}

// The third input (manifest neighbour_bp): per window of [first, last), the `neighbour` bases
// before it and the `neighbour` after its `context` bases, N beyond the sequence, tokenised.
IdTensor NeighbourIds(std::string_view sequence, const std::vector<WindowSpan>& windows,
                      int first, int last, int64_t context, int64_t neighbour,
                      const Tokenizer& tokenizer) {
  IdTensor tensor{{last - first, 2 * neighbour}, {}};
  tensor.data.reserve(static_cast<size_t>((last - first) * 2 * neighbour));
  for (int i = first; i < last; ++i) {
    const std::string around = FlankedWindow(sequence, windows[i], context, neighbour);
    const std::string sides = around.substr(0, static_cast<size_t>(neighbour)) +
                              around.substr(static_cast<size_t>(neighbour + context));
    tokenizer.EncodeIds(sides, &tensor.data);  // char tokenizer: one id per base
  }
  return tensor;
}

}  // namespace

StatusOr<AnnotationScores> RunAnnotationPasses(Model& model, const ModelManifest& manifest,
                                               const Tokenizer& tokenizer,
                                               const std::string& sequence,
                                               const AnnotationChannels& channels,
                                               const AnnotationPassOptions& options,
                                               const RunHooks& hooks) {
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t context = manifest.context_window_bp;
  const auto windows = PlanWindows(length, context, context);
  const int types = static_cast<int>(manifest.transcript_types.size());
  const int passes = options.reverse_complement ? 2 : 1;
  const int total = static_cast<int>(windows.size()) * passes;
  const bool strand_complete = !manifest.strand_complete_labels.empty();
  const std::vector<bool> forward_only =
      strand_complete
          ? StrandCompleteChannels(manifest.strand_complete_labels, manifest.output_labels)
          : std::vector<bool>{};

  AnnotationScores out;
  for (int pass = 0; pass < passes; ++pass) {
    const bool rc = pass == 1;
    const std::string rc_sequence = rc ? ReverseComplement(sequence) : std::string();
    const std::string& input = rc ? rc_sequence : sequence;
    PositionScores scores(length, channels.count);
    for (auto [first, last] : Batches(static_cast<int>(windows.size()), options.batch_size)) {
      if (ShouldStop(hooks)) return RunCancelledStatus();
      const int64_t batch = last - first;
      std::vector<IdTensor> inputs{
          TokenizeWindows(input, windows, first, last, context, tokenizer)};
      if (strand_complete) inputs.push_back(WantedRows(batch, !rc));
      if (strand_complete && manifest.neighbour_bp > 0) {
        inputs.push_back(NeighbourIds(input, windows, first, last, context,
                                      manifest.neighbour_bp, tokenizer));
      }
      auto result = ForwardChecked(model, manifest, inputs,
                                   {{batch, context, channels.count}, {batch, types}});
      if (!result.ok()) return result.status();
      ++out.forward_passes;
      for (int i = first; i < last; ++i) {
        const float* rows = (*result)[0].data.data() + (i - first) * context * channels.count;
        PlaceWindow(windows[i], rows, channels, rc, &scores);
        const float* type_row = (*result)[1].data.data() + (i - first) * types;
        Span span = rc ? Span{length - windows[i].end, length - windows[i].start}
                       : Span{windows[i].start, windows[i].end};
        out.type_scores.push_back({span, std::vector<float>(type_row, type_row + types)});
      }
      out.windows_processed += static_cast<int>(batch);
      ReportProgress(hooks, out.windows_processed, total);
    }
    if (rc) {
      AverageInto(&out.stitched, scores, forward_only);
    } else {
      out.stitched = std::move(scores);
    }
  }
  return out;
}

}  // namespace dnaserve::worker
