// Splice: per-token (neither, acceptor, donor) scores over non-overlapping context windows; sites
// are token spans scoring at or above the threshold, under the response-size cap.
#include <algorithm>

#include "common/task.h"
#include "worker/tasks/run_support.h"
#include "worker/windowing/splice_sites.h"
#include "worker/writers/bed.h"
#include "worker/writers/bedgraph.h"
#include "worker/writers/gff3.h"

namespace dnaserve::worker {
namespace {

SpliceCallOptions OptionsFrom(const v1::PredictRequest& request) {
  SpliceCallOptions options;
  if (!request.has_splice()) return options;  // contract defaults: 0.5, both types, 20,000
  const auto& splice = request.splice();
  options.threshold = splice.threshold();
  if (splice.site_types_size() > 0) {
    options.donor = options.acceptor = false;
    for (int type : splice.site_types()) {
      if (type == v1::SPLICE_SITE_TYPE_DONOR) options.donor = true;
      if (type == v1::SPLICE_SITE_TYPE_ACCEPTOR) options.acceptor = true;
    }
  }
  options.max_sites = splice.max_sites() > 0 ? splice.max_sites() : kSpliceMaxSites;
  return options;
}

}  // namespace

StatusOr<v1::PredictResult> RunSplice(Model& model, const ModelManifest& manifest,
                                      const v1::PredictRequest& request, const RunHooks& hooks) {
  const SpliceCallOptions options = OptionsFrom(request);
  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t context = manifest.context_window_bp;
  const auto windows = PlanWindows(length, context, context);
  const Tokenizer tokenizer(manifest.tokenizer);
  const int64_t tokens = tokenizer.TokenCount(context);
  const int columns = static_cast<int>(manifest.output_labels.size());
  const int donor_column = LabelIndex(manifest, "donor");
  const int acceptor_column = LabelIndex(manifest, "acceptor");
  const int total = static_cast<int>(windows.size());
  const std::string seqid = TrackSeqid(request);

  SpliceSiteCollector collector(options, tokenizer, length);
  v1::PredictResult result;
  auto* splice = result.mutable_splice();
  BedGraphTrack donor_track{"donor", manifest.id + " donor score per token", seqid, {}};
  BedGraphTrack acceptor_track{"acceptor", manifest.id + " acceptor score per token", seqid, {}};
  for (auto [first, last] : Batches(total, kSpliceBatchWindows)) {
    if (ShouldStop(hooks)) return RunCancelledStatus();
    auto out = ForwardChecked(model, manifest,
                              {TokenizeWindows(sequence, windows, first, last, context, tokenizer)},
                              {{last - first, tokens, columns}});
    if (!out.ok()) return out.status();
    const float* scores = (*out)[0].data.data();
    for (int i = first; i < last; ++i) {
      const float* window_scores = scores + (i - first) * tokens * columns;
      auto added = collector.AddWindow(windows[i], window_scores, tokens, columns, donor_column,
                                       acceptor_column);
      if (!added.ok()) return added.status();
      auto* w = splice->add_windows();
      w->set_index(windows[i].index);
      w->set_start(windows[i].start);
      w->set_end(windows[i].end);
      w->set_padded_bp(windows[i].padded_bp);
      w->set_tokens(static_cast<int32_t>(tokens));
      w->set_sites(*added);
      // Tracks: each token speaks for its stride-wide slice, so rows never overlap.
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t start = windows[i].start + tokenizer.TokenStart(t);
        if (start >= length) break;
        const int64_t end = std::min(start + tokenizer.stride(), length);
        const float* row = window_scores + t * columns;
        donor_track.values.push_back({start, end, row[donor_column]});
        acceptor_track.values.push_back({start, end, row[acceptor_column]});
      }
    }
    ReportProgress(hooks, last, total);
  }

  std::vector<BedRecord> bed;
  std::vector<Gff3Feature> gff;
  int n = 0;
  for (const SpliceCall& call : collector.sites()) {
    const bool donor = call.type == SiteType::kDonor;
    auto* s = splice->add_sites();
    s->set_type(donor ? v1::SPLICE_SITE_TYPE_DONOR : v1::SPLICE_SITE_TYPE_ACCEPTOR);
    s->set_start(call.start);
    s->set_end(call.end);
    s->set_token_index(call.token_index);
    s->set_score(call.score);
    s->set_donor_score(call.donor_score);
    s->set_acceptor_score(call.acceptor_score);
    s->set_window_index(call.window_index);
    const char* name = donor ? "donor" : "acceptor";
    bed.push_back({seqid, call.start, call.end, name, BedScore(call.score), '+'});
    Gff3Feature f;
    f.seqid = seqid;
    f.source = manifest.id;
    f.type = donor ? "five_prime_cis_splice_site" : "three_prime_cis_splice_site";
    f.start = call.start;
    f.end = call.end;
    f.score = call.score;
    f.strand = '+';
    f.attributes = {{"ID", "site_" + std::to_string(++n)},
                    {"Name", name},
                    {"window_index", std::to_string(call.window_index)},
                    {"token_index", std::to_string(call.token_index)}};
    gff.push_back(std::move(f));
  }
  result.set_windows_processed(total);
  (*result.mutable_formats())["bed"] = WriteBed(bed);
  (*result.mutable_formats())["gff3"] = WriteGff3({{seqid, 0, length}}, gff);
  (*result.mutable_tracks())["donor"] = WriteBedGraph(donor_track);
  (*result.mutable_tracks())["acceptor"] = WriteBedGraph(acceptor_track);
  return result;
}

}  // namespace dnaserve::worker
