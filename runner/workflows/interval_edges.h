// Real flanks for the prediction tasks of an interval request (issue 25). The worker scores a
// position from the windows around it; scored alone, an interval's first and last windows would
// see N past its edges where the reference has bases. So the runner reads `ModelContextBp` of
// reference (the model's context window, or a flanked model's flank) on each side of the
// interval, clamped at the contig's ends (N remains only there), sends the widened sequence,
// and cuts the answer back to the interval before it is rendered. The renderers
// and the coordinate mapping (interval_coordinates.h) then see exactly the answer a worker would
// give for the interval's own length, so the output's shape is unchanged.
//
// What is kept of an answer, in the analysed sequence's coordinates [before, before + length):
// every item that overlaps the interval, its span clipped to it; nothing that lies outside.
//   windows and regions (promoter, splice, enhancer, chromatin): clipped; the score is still the
//   whole window's.
//   splice sites: one base each, so kept or not (a k-mer token across an edge is clipped).
//   transcripts: span, exons, introns and CDS clipped to the interval (parts outside dropped);
//   tss_position and polya_position stay where the model put them, so a transcript that goes
//   on past an edge shows it by a TSS or polyA point outside its [start, end).
//   BED and bedGraph rows: clipped; a BED12 row's blocks clipped, those outside dropped, the row
//   then spanning its first to its last block (thickStart/End clipped into it).
//   GFF3 records: clipped (a record whose parent was dropped is dropped too).
// Positions are shifted by -before; window and token indices and the ids of GFF3 records stay
// the widened run's (they number what the worker was sent; each still joins within the answer).
// Expression is not cut: it already scores the 9,198 bp window read around its TSS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/task.h"
#include "core/dispatch/inference_backend.h"
#include "core/dispatch/model_catalogue.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::runner {

// The bases a model may look at on either side of a position it scores: its context window
// (no window covering a position reaches farther), or for a flanked per-base model (splice,
// flank_bp) its flank, the real bases it sees on each side of every base it scores (an
// annotation package's neighbour_bp is not in the model listing and not counted). The info
// comes from the catalogue, else from the backend's listing; 0 when neither names the model
// (the interval is then analysed alone, as before).
int64_t ModelContextBp(Task task, const std::string& model, const core::ModelCatalogue* catalogue,
                       core::InferenceBackend* backend);

// The answer of the widened sequence cut to [before, before + length) and shifted to start at 0.
worker::v1::PredictResult CutToInterval(Task task, worker::v1::PredictResult result,
                                        int64_t before, int64_t length);

// BED / bedGraph text: rows overlapping the interval clipped to it and shifted; header lines
// kept.
std::string CutBedText(std::string_view text, int64_t before, int64_t length);
// GFF3 text (1-based inclusive columns 4 and 5): the records overlapping the interval clipped
// to it and shifted, without the children of dropped records; tss_position / polya_position
// attributes shifted. ##sequence-region becomes 1..length.
std::string CutGff3Text(std::string_view text, int64_t before, int64_t length);

// The backend a prediction by interval runs through: the worker request's sequence (the
// interval's bases) is replaced by `widened` (those bases with `before` bp of the reference
// before them and the rest after), and the answer is cut back to the interval.
class FlankedIntervalBackend : public core::InferenceBackend {
 public:
  FlankedIntervalBackend(core::InferenceBackend* inner, std::string widened, int64_t before,
                         int64_t length);

  StatusOr<worker::v1::PredictResult> Predict(Task task, const worker::v1::PredictRequest& request,
                                              const core::CallContext& context,
                                              const core::ProgressCallback& on_progress) override;
  StatusOr<std::vector<worker::v1::ModelInfo>> ListModels(Task task) override;

 private:
  core::InferenceBackend* inner_;
  std::string widened_;
  int64_t before_;
  int64_t length_;
};

}  // namespace dnaserve::runner
