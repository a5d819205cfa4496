// Splice: per-token (neither, acceptor, donor) scores over non-overlapping context windows (or, for
// flanked per-base models, non-overlapping scored windows with real flanking sequence); sites are
// token spans scoring at or above the threshold, under the response-size cap.
#include <algorithm>

#include "common/task.h"
#include "worker/tasks/reply_parts.h"
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

// Flanked models (manifest flank_bp > 0, char tokenizer): a window's input is its scored bases
// with flank_bp of the real neighbouring sequence on each side (N only beyond the sequence ends),
// and the model returns one row per scored base. `spans` gets the scored bases' tokens, relative
// to the window start, for placing sites and track rows.
StatusOr<IdTensor> FlankedInput(std::string_view sequence, const std::vector<WindowSpan>& windows,
                                int first, int last, const ModelManifest& manifest,
                                const Tokenizer& tokenizer,
                                std::vector<std::vector<Token>>* spans) {
  const int64_t output = manifest.output_window_bp;
  IdTensor tensor;
  tensor.shape = {last - first, manifest.context_window_bp};
  tensor.data.reserve(static_cast<size_t>((last - first) * manifest.context_window_bp));
  spans->assign(static_cast<size_t>(last - first), {});
  for (int i = first; i < last; ++i) {
    tokenizer.EncodeIds(FlankedWindow(sequence, windows[i], output, manifest.flank_bp),
                        &tensor.data);
    (*spans)[i - first] = tokenizer.Encode(PaddedWindow(sequence, windows[i], output));
    if ((*spans)[i - first].size() != static_cast<size_t>(output)) {
      return Internal("model '" + manifest.id + "': a flanked model needs one token per base");
    }
  }
  if (tensor.data.size() != static_cast<size_t>((last - first) * manifest.context_window_bp)) {
    return Internal("model '" + manifest.id + "': a flanked model needs one token per base");
  }
  return tensor;
}

// Packed inputs (SpliceOptions.packed_window_bp, variant scoring): the sequence is a run of
// independent model inputs of `block` bases each; block i scores its central bases
// [i * block + flank, (i + 1) * block - flank), its flanks being its own context. Every row has
// the same shape whatever the request holds, so a block's scores depend only on its own bases
// (with the worker's fixed-shape passes, not on its companions either).
std::vector<WindowSpan> PlanPackedWindows(int64_t length, int64_t block, int64_t flank) {
  std::vector<WindowSpan> windows;
  for (int64_t start = 0; start + block <= length; start += block) {
    windows.push_back({static_cast<int>(windows.size()), start + flank, start + block - flank, 0});
  }
  return windows;
}

Status CheckPacked(int64_t block, int64_t length, const ModelManifest& manifest) {
  if (block == 0) return Status::Ok();
  if (manifest.flank_bp <= 0 || block < 0) {
    return ValidationFailed({"body", "options", "packed_window_bp"},
                            "options.packed_window_bp needs a flanked per-base model ('" +
                                manifest.id + "' has no flank_bp) and a positive width",
                            "value_error");
  }
  if (block <= 2 * manifest.flank_bp || block > manifest.context_window_bp) {
    return ValidationFailed({"body", "options", "packed_window_bp"},
                            "options.packed_window_bp must be above twice the model's flank (" +
                                std::to_string(2 * manifest.flank_bp) +
                                ") and at most its context (" +
                                std::to_string(manifest.context_window_bp) + "), not " +
                                std::to_string(block),
                            "value_error");
  }
  if (length % block != 0) {
    return ValidationFailed({"body", "sequence"},
                            "a packed sequence is whole blocks of options.packed_window_bp (" +
                                std::to_string(block) + "): " + std::to_string(length) +
                                " bases is not",
                            "value_error");
  }
  return Status::Ok();
}

StatusOr<IdTensor> PackedInput(std::string_view sequence, const std::vector<WindowSpan>& windows,
                               int first, int last, int64_t block, const ModelManifest& manifest,
                               const Tokenizer& tokenizer,
                               std::vector<std::vector<Token>>* spans) {
  IdTensor tensor;
  tensor.shape = {last - first, block};
  tensor.data.reserve(static_cast<size_t>((last - first) * block));
  spans->assign(static_cast<size_t>(last - first), {});
  const int64_t scored = block - 2 * manifest.flank_bp;
  for (int i = first; i < last; ++i) {
    const int64_t input_start = windows[i].start - manifest.flank_bp;
    tokenizer.EncodeIds(sequence.substr(static_cast<size_t>(input_start), block), &tensor.data);
    (*spans)[i - first] = tokenizer.Encode(sequence.substr(windows[i].start, scored));
    if ((*spans)[i - first].size() != static_cast<size_t>(scored)) {
      return Internal("model '" + manifest.id + "': a flanked model needs one token per base");
    }
  }
  if (tensor.data.size() != static_cast<size_t>((last - first) * block)) {
    return Internal("model '" + manifest.id + "': a flanked model needs one token per base");
  }
  return tensor;
}

}  // namespace

StatusOr<v1::PredictResult> RunSplice(Model& model, const ModelManifest& manifest,
                                      const Tokenizer& tokenizer,
                                      const v1::PredictRequest& request, const RunHooks& hooks) {
  const SpliceCallOptions options = OptionsFrom(request);
  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  const int64_t context = manifest.context_window_bp;
  const bool flanked = manifest.flank_bp > 0;
  const int64_t packed = request.has_splice() ? request.splice().packed_window_bp() : 0;
  DNASERVE_RETURN_IF_ERROR(CheckPacked(packed, length, manifest));
  const auto windows =
      packed > 0 ? PlanPackedWindows(length, packed, manifest.flank_bp)
      : flanked  ? PlanFlankedWindows(length, manifest.output_window_bp, manifest.flank_bp)
                 : PlanWindows(length, context, context);
  const int columns = static_cast<int>(manifest.output_labels.size());
  const int donor_column = LabelIndex(manifest, "donor");
  const int acceptor_column = LabelIndex(manifest, "acceptor");
  const int total = static_cast<int>(windows.size());
  const std::string seqid = TrackSeqid(request);

  const ReplyParts parts = ReplyParts::For(request);
  const bool render_tracks = parts.Tracks();
  SpliceSiteCollector collector(options, length);
  v1::PredictResult result;
  auto* splice = result.mutable_splice();
  // Rendered window by window: per-base models give a row per base.
  BedGraphWriter donor_track("donor", manifest.id + " donor score per token", seqid);
  BedGraphWriter acceptor_track("acceptor", manifest.id + " acceptor score per token", seqid);
  // Packed blocks are short and many: several rows per forward (the model's fixed-shape passes
  // still cut them into passes of its rows-per-pass).
  const int rows_per_forward = packed > 0 ? kSplicePackedBatchRows : kSpliceBatchWindows;
  for (auto [first, last] : Batches(total, rows_per_forward)) {
    if (ShouldStop(hooks)) return RunCancelledStatus();
    // Token spans of each window: BPE tokens vary in length and count, so sites and tracks are
    // placed from the spans, never from a fixed token width.
    std::vector<std::vector<Token>> window_tokens;
    IdTensor input;
    if (packed > 0) {
      auto packed_input = PackedInput(sequence, windows, first, last, packed, manifest, tokenizer,
                                      &window_tokens);
      if (!packed_input.ok()) return packed_input.status();
      input = std::move(packed_input).value();
    } else if (flanked) {
      auto flanked_input =
          FlankedInput(sequence, windows, first, last, manifest, tokenizer, &window_tokens);
      if (!flanked_input.ok()) return flanked_input.status();
      input = std::move(flanked_input).value();
    } else {
      input = TokenizeWindows(sequence, windows, first, last, context, tokenizer, &window_tokens);
    }
    // Output rows per window: the scored bases of a flanked model; otherwise the batch's longest
    // window (shorter ones are padded).
    const int64_t tokens = packed > 0 ? packed - 2 * manifest.flank_bp
                           : flanked  ? manifest.output_window_bp
                                      : input.shape[1];
    auto out =
        ForwardChecked(model, manifest, {std::move(input)}, {{last - first, tokens, columns}});
    if (!out.ok()) return out.status();
    const float* scores = (*out)[0].data.data();
    if (first == 0 && !window_tokens.empty()) {
      // About one track row per token of every window: grow the tracks once, not by doubling.
      const size_t rows = window_tokens[0].size() * static_cast<size_t>(total);
      donor_track.Reserve(rows);
      acceptor_track.Reserve(rows);
    }
    for (int i = first; i < last; ++i) {
      const std::vector<Token>& spans = window_tokens[i - first];
      const float* window_scores = scores + (i - first) * tokens * columns;
      auto added = collector.AddWindow(windows[i], spans, window_scores, columns, donor_column,
                                       acceptor_column);
      if (!added.ok()) return added.status();
      auto* w = splice->add_windows();
      w->set_index(windows[i].index);
      w->set_start(windows[i].start);
      w->set_end(windows[i].end);
      w->set_padded_bp(windows[i].padded_bp);
      w->set_tokens(static_cast<int32_t>(spans.size()));
      w->set_sites(*added);
      if (!render_tracks) continue;  // per-base scores only: no bedGraph text to build
      for (const TokenSlice& slice : TrackSlices(windows[i], spans, length)) {
        const float* row = window_scores + slice.token_index * columns;
        donor_track.Add(slice.start, slice.end, row[donor_column]);
        acceptor_track.Add(slice.start, slice.end, row[acceptor_column]);
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
  if (parts.Format("bed")) (*result.mutable_formats())["bed"] = WriteBed(bed);
  if (parts.Format("gff3")) {
    (*result.mutable_formats())["gff3"] = WriteGff3({{seqid, 0, length}}, gff);
  }
  if (parts.Tracks()) {
    (*result.mutable_tracks())["donor"] = donor_track.Take();
    (*result.mutable_tracks())["acceptor"] = acceptor_track.Take();
  }
  return result;
}

}  // namespace dnaserve::worker
