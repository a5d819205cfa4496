// Chromatin: 919 (or the manifest's count of) feature probabilities per window, windows every
// stride_bp; features above the threshold are returned with their category.
#include <algorithm>

#include "common/task.h"
#include "worker/tasks/reply_parts.h"
#include "worker/tasks/run_support.h"
#include "worker/windowing/chromatin_features.h"
#include "worker/writers/bed.h"
#include "worker/writers/bedgraph.h"

namespace dnaserve::worker {

StatusOr<v1::PredictResult> RunChromatin(Model& model, const ModelManifest& manifest,
                                         const Tokenizer& tokenizer,
                                         const v1::PredictRequest& request, const RunHooks& hooks) {
  const double threshold = request.has_chromatin() ? request.chromatin().threshold() : 0.5;
  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t context = manifest.context_window_bp;
  const auto windows = PlanWindows(length, context, manifest.stride_bp);
  const auto owned = OwnedSpans(windows, context, manifest.stride_bp, length);
  const int features = static_cast<int>(manifest.output_labels.size());
  const int total = static_cast<int>(windows.size());
  const std::string seqid = TrackSeqid(request);

  std::vector<int> category_of(features);
  std::vector<bool> category_used(kChromatinCategories.size(), false);
  for (int f = 0; f < features; ++f) {
    category_of[f] = ChromatinCategoryIndex(manifest.output_labels[f]);
    category_used[category_of[f]] = true;
  }
  std::vector<BedGraphTrack> tracks;
  for (size_t c = 0; c < kChromatinCategories.size(); ++c) {
    tracks.push_back({std::string(kChromatinCategories[c]),
                      manifest.id + " max " + std::string(kChromatinCategories[c]) +
                          " feature probability per window",
                      seqid,
                      {}});
  }

  v1::PredictResult result;
  auto* chromatin = result.mutable_chromatin();
  std::vector<BedRecord> bed;
  int64_t records = 0;  // features above the threshold so far, over all windows (the cap)
  for (auto [first, last] : Batches(total, kChromatinBatchWindows)) {
    if (ShouldStop(hooks)) return RunCancelledStatus();
    auto out = ForwardChecked(model, manifest,
                              {TokenizeWindows(sequence, windows, first, last, context, tokenizer)},
                              {{last - first, features}});
    if (!out.ok()) return out.status();
    for (int i = first; i < last; ++i) {
      const float* probabilities = (*out)[0].data.data() + (i - first) * features;
      auto* w = chromatin->add_windows();
      w->set_index(windows[i].index);
      w->set_start(windows[i].start);
      w->set_end(windows[i].end);
      w->set_padded_bp(windows[i].padded_bp);
      const std::vector<int> above = FeaturesAbove(probabilities, features, threshold);
      records += static_cast<int64_t>(above.size());
      // Checked before anything of the window is kept: past the cap the request fails, so a
      // hostile threshold never makes the worker build (or send) the oversized response.
      Status cap = CheckChromatinRecordCap(records, kChromatinMaxFeatures, threshold, i + 1);
      if (!cap.ok()) return cap;
      for (int f : above) {
        auto* feature = w->add_features();
        feature->set_index(f);
        feature->set_name(manifest.output_labels[f]);
        feature->set_category(std::string(kChromatinCategories[category_of[f]]));
        feature->set_probability(probabilities[f]);
        bed.push_back({seqid, windows[i].start, windows[i].end, manifest.output_labels[f],
                       BedScore(probabilities[f]), '.'});
      }
      std::vector<double> best(kChromatinCategories.size(), 0.0);
      for (int f = 0; f < features; ++f) {
        best[category_of[f]] = std::max(best[category_of[f]], double{probabilities[f]});
      }
      for (size_t c = 0; c < tracks.size(); ++c) {
        if (category_used[c]) tracks[c].values.push_back({owned[i].start, owned[i].end, best[c]});
      }
    }
    ReportProgress(hooks, last, total);
  }
  chromatin->set_features_total(features);
  for (auto name : kChromatinCategories) chromatin->add_categories(std::string(name));
  result.set_windows_processed(total);
  const ReplyParts parts = ReplyParts::For(request);
  if (parts.Format("bed")) (*result.mutable_formats())["bed"] = WriteBed(bed);
  for (size_t c = 0; parts.Tracks() && c < tracks.size(); ++c) {
    if (category_used[c]) (*result.mutable_tracks())[tracks[c].name] = WriteBedGraph(tracks[c]);
  }
  return result;
}

}  // namespace dnaserve::worker
