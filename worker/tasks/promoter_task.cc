// Promoter: probability per context window (manifest stride), regions = runs of windows at or
// above the threshold.
#include "worker/tasks/reply_parts.h"
#include "worker/tasks/run_support.h"
#include "worker/windowing/promoter_regions.h"
#include "worker/writers/bed.h"
#include "worker/writers/bedgraph.h"

namespace dnaserve::worker {

StatusOr<v1::PredictResult> RunPromoter(Model& model, const ModelManifest& manifest,
                                        const Tokenizer& tokenizer,
                                        const v1::PredictRequest& request, const RunHooks& hooks) {
  const double threshold = request.has_promoter() ? request.promoter().threshold() : 0.5;
  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const auto windows = PlanWindows(length, manifest.context_window_bp, manifest.stride_bp);
  const int total = static_cast<int>(windows.size());

  std::vector<double> scores;
  scores.reserve(windows.size());
  for (auto [first, last] : Batches(total, kPromoterBatchWindows)) {
    if (ShouldStop(hooks)) return RunCancelledStatus();
    auto out = ForwardChecked(
        model, manifest,
        {TokenizeWindows(sequence, windows, first, last, manifest.context_window_bp, tokenizer)},
        {{last - first}});
    if (!out.ok()) return out.status();
    for (float p : (*out)[0].data) scores.push_back(p);
    ReportProgress(hooks, last, total);
  }

  v1::PredictResult result;
  result.set_windows_processed(total);
  auto* promoter = result.mutable_promoter();
  const std::string seqid = TrackSeqid(request);
  std::vector<BedRecord> bed;
  for (const auto& region : MergePromoterRegions(windows, scores, threshold)) {
    auto* r = promoter->add_regions();
    r->set_start(region.start);
    r->set_end(region.end);
    r->set_score(region.score);
    bed.push_back({seqid, region.start, region.end, "promoter", BedScore(region.score), '.'});
  }
  BedGraphTrack track{"promoter", manifest.id + " promoter probability per window", seqid, {}};
  const auto owned = OwnedSpans(windows, manifest.context_window_bp, manifest.stride_bp, length);
  for (size_t i = 0; i < windows.size(); ++i) {
    auto* w = promoter->add_windows();
    w->set_index(windows[i].index);
    w->set_start(windows[i].start);
    w->set_end(windows[i].end);
    w->set_padded_bp(windows[i].padded_bp);
    w->set_score(scores[i]);
    w->set_is_promoter(scores[i] >= threshold);
    track.values.push_back({owned[i].start, owned[i].end, scores[i]});
  }
  const ReplyParts parts = ReplyParts::For(request);
  if (parts.Format("bed")) (*result.mutable_formats())["bed"] = WriteBed(bed);
  if (parts.Format("bedgraph")) {
    std::string& bedgraph = (*result.mutable_formats())["bedgraph"];
    bedgraph = WriteBedGraph(track);
    if (parts.PromoterTrackCopy()) (*result.mutable_tracks())["promoter"] = bedgraph;
  }
  return result;
}

}  // namespace dnaserve::worker
