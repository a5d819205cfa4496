// Enhancer: developmental and housekeeping activity per consecutive, non-overlapping window.
#include "worker/tasks/reply_parts.h"
#include "worker/tasks/run_support.h"
#include "worker/writers/bedgraph.h"

namespace dnaserve::worker {

StatusOr<v1::PredictResult> RunEnhancer(Model& model, const ModelManifest& manifest,
                                        const Tokenizer& tokenizer,
                                        const v1::PredictRequest& request, const RunHooks& hooks) {
  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t context = manifest.context_window_bp;
  const auto windows = PlanWindows(length, context, context);
  const int columns = static_cast<int>(manifest.output_labels.size());
  const int dev_column = LabelIndex(manifest, "dev");
  const int hk_column = LabelIndex(manifest, "hk");
  const int total = static_cast<int>(windows.size());
  const std::string seqid = TrackSeqid(request);

  v1::PredictResult result;
  auto* enhancer = result.mutable_enhancer();
  BedGraphTrack dev{"dev", manifest.id + " developmental enhancer activity per window", seqid, {}};
  BedGraphTrack hk{"hk", manifest.id + " housekeeping enhancer activity per window", seqid, {}};
  for (auto [first, last] : Batches(total, kEnhancerBatchWindows)) {
    if (ShouldStop(hooks)) return RunCancelledStatus();
    auto out = ForwardChecked(model, manifest,
                              {TokenizeWindows(sequence, windows, first, last, context, tokenizer)},
                              {{last - first, columns}});
    if (!out.ok()) return out.status();
    for (int i = first; i < last; ++i) {
      const float* row = (*out)[0].data.data() + (i - first) * columns;
      auto* w = enhancer->add_windows();
      w->set_index(windows[i].index);
      w->set_start(windows[i].start);
      w->set_end(windows[i].end);
      w->set_padded_bp(windows[i].padded_bp);
      w->set_dev(row[dev_column]);
      w->set_hk(row[hk_column]);
      dev.values.push_back({windows[i].start, windows[i].end, row[dev_column]});
      hk.values.push_back({windows[i].start, windows[i].end, row[hk_column]});
    }
    ReportProgress(hooks, last, total);
  }
  result.set_windows_processed(total);
  const ReplyParts parts = ReplyParts::For(request);
  if (parts.Format("bedgraph")) {
    (*result.mutable_formats())["bedgraph"] = WriteBedGraphs({dev, hk});
  }
  if (parts.Tracks()) {
    (*result.mutable_tracks())["dev"] = WriteBedGraph(dev);
    (*result.mutable_tracks())["hk"] = WriteBedGraph(hk);
  }
  return result;
}

}  // namespace dnaserve::worker
