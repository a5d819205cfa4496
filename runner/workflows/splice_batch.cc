#include "runner/workflows/splice_batch.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>

#include "common/sequence.h"
#include "common/task.h"

namespace dnaserve::runner {
namespace {

namespace wv1 = worker::v1;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t Mod(int64_t a, int64_t b) { return a - b * FloorDiv(a, b); }

// One model row: its input in genome order and the strand it is read on.
struct Block {
  std::string input;
  bool minus = false;
  int64_t width = 0;
  int64_t scored = 0;
  SpliceTrack track;  // filled by the worker's reply, in genome order
};

// The REF block several variants can share: same genome, contig, start and width.
using RefKey = std::tuple<const variant::ReferenceGenome*, std::string, int64_t, int64_t>;

struct VariantBlocks {
  size_t ref_plus = 0, ref_minus = 0, alt_plus = 0, alt_minus = 0;  // indexes into the blocks
};

wv1::PredictRequest PackedRequest(const std::string& model, int64_t width) {
  wv1::PredictRequest request;
  request.set_model(model);
  request.set_sequence_name("variants");
  request.set_result_format(wv1::RESULT_FORMAT_SCORES);
  wv1::SpliceOptions* options = request.mutable_splice();
  options->set_threshold(0.0);  // every base: one donor entry each, carrying both scores
  options->add_site_types(wv1::SPLICE_SITE_TYPE_DONOR);
  options->set_packed_window_bp(width);
  return request;
}

// One worker call over blocks [first, last) of one width; each block's track gets its scores.
Status ScoreCall(std::vector<Block>* blocks, const std::vector<size_t>& members, size_t first,
                 size_t last, const std::string& model, int64_t flank,
                 core::InferenceBackend& backend, const core::JobContext& context,
                 SpliceCallTotals* totals) {
  const int64_t width = (*blocks)[members[first]].width;
  const int64_t scored = (*blocks)[members[first]].scored;
  wv1::PredictRequest request = PackedRequest(model, width);
  std::string* sequence = request.mutable_sequence();
  sequence->reserve(static_cast<size_t>(width) * (last - first));
  for (size_t i = first; i < last; ++i) {
    Block& b = (*blocks)[members[i]];
    *sequence += b.minus ? ReverseComplement(b.input) : b.input;
    b.track.acceptor.assign(static_cast<size_t>(scored), -1.0f);
    b.track.donor.assign(static_cast<size_t>(scored), -1.0f);
  }
  request.mutable_splice()->set_max_sites(scored * static_cast<int64_t>(last - first) + 1);
  auto predicted = backend.Predict(Task::kSplice, request, context.call, nullptr);
  ++totals->model_calls;
  if (!predicted.ok()) return predicted.status();
  if (predicted->cold_start()) {
    totals->cold_start = true;
    totals->model_load_time_ms += predicted->model_load_time_ms();
  }
  totals->inference_time_ms += predicted->inference_time_ms();
  const auto count = static_cast<int64_t>(last - first);
  for (const wv1::SpliceSite& site : predicted->splice().sites()) {
    const int64_t block = site.start() / width;
    const int64_t j = site.start() - block * width - flank;
    if (site.end() != site.start() + 1 || site.start() < 0 || block >= count || j < 0 ||
        j >= scored) {
      return Internal("the splice model '" + model + "' did not score packed blocks base by base");
    }
    Block& b = (*blocks)[members[first + static_cast<size_t>(block)]];
    const auto at = static_cast<size_t>(b.minus ? scored - 1 - j : j);
    b.track.acceptor[at] = static_cast<float>(site.acceptor_score());
    b.track.donor[at] = static_cast<float>(site.donor_score());
  }
  for (size_t i = first; i < last; ++i) {
    const Block& b = (*blocks)[members[i]];
    for (int64_t k = 0; k < scored; ++k) {
      if (b.track.acceptor[static_cast<size_t>(k)] < 0 || b.track.donor[static_cast<size_t>(k)] < 0) {
        return Internal("the splice worker left base " + std::to_string(k) + " of a block unscored");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

SpliceBlock SpliceBlockFor(const core::RequestedVariant& v, int64_t distance, int64_t flank) {
  const auto ref_len = static_cast<int64_t>(v.ref.size());
  const auto alt_len = static_cast<int64_t>(v.alt.size());
  const int64_t shift = alt_len - ref_len;
  // The - strand's ALT block ends where the REF block does, so an insertion needs `shift` more
  // bases before the variant; kept a multiple of the phase step.
  const int64_t room = kSplicePhaseBp * FloorDiv(std::max<int64_t>(0, shift) + kSplicePhaseBp - 1,
                                                 kSplicePhaseBp);
  const int64_t first_scored = v.position - 1 - distance;  // 0-based
  // Today's + input started at first_scored - 2 * flank; a block's at start - flank.
  const int64_t phase = Mod(first_scored - flank, kSplicePhaseBp);
  const int64_t latest = first_scored - room;
  const int64_t start = phase + kSpliceCellBp * FloorDiv(latest - phase, kSpliceCellBp);
  // Bases before the variant's scored ones: at most room + kSpliceCellBp - 1 on any variant.
  const int64_t gap = room + kSpliceCellBp - 1;
  const int64_t alt_last = std::max(distance + shift, alt_len - 1);
  const int64_t after = std::max(distance, alt_last - std::min<int64_t>(0, shift));
  int64_t scored = 1 + distance + gap + after;
  // Today's - input started 2 * flank past the REF's last scored base: the same phase.
  const int64_t end_phase = Mod(2 * distance + ref_len + 2 * flank, kSplicePhaseBp);
  scored += Mod(end_phase - scored, kSplicePhaseBp);
  return {start, scored, flank};
}

std::string AltBlockInput(const core::RequestedVariant& v, const SpliceBlock& block,
                          const std::string& extended, bool minus) {
  const auto ref_len = static_cast<int64_t>(v.ref.size());
  const int64_t shift = static_cast<int64_t>(v.alt.size()) - ref_len;
  const int64_t x = std::abs(shift);
  const int64_t at = (v.position - 1) - (block.start - block.flank - x);
  std::string alt = extended.substr(0, static_cast<size_t>(at)) + v.alt +
                    extended.substr(static_cast<size_t>(at + ref_len));
  return alt.substr(static_cast<size_t>(minus ? x + shift : x), static_cast<size_t>(block.width()));
}

int64_t AltFirstOffset(const core::RequestedVariant& v, const SpliceBlock& block, bool minus) {
  const int64_t shift = static_cast<int64_t>(v.alt.size()) - static_cast<int64_t>(v.ref.size());
  return block.start - (v.position - 1) + (minus ? shift : 0);
}

Status ScoreSpliceBatch(const std::vector<SpliceJobVariant>& variants, const std::string& model,
                        int64_t distance, int64_t flank, core::InferenceBackend& backend,
                        const core::JobContext& context, SpliceCallTotals* totals) {
  std::vector<Block> blocks;
  std::vector<VariantBlocks> placed(variants.size());
  std::map<RefKey, std::pair<size_t, size_t>> shared_ref;  // key -> its plus and minus blocks
  std::vector<SpliceBlock> geometry(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    const core::RequestedVariant& v = *variants[i].variant;
    const variant::ReferenceGenome& genome = *variants[i].genome;
    const SpliceBlock g = SpliceBlockFor(v, distance, flank);
    geometry[i] = g;
    const int64_t x = std::abs(static_cast<int64_t>(v.alt.size()) -
                               static_cast<int64_t>(v.ref.size()));
    auto extended = genome.Fetch(v.contig, g.start - flank - x, g.start + g.scored + flank + x);
    if (!extended.ok()) return extended.status();
    const RefKey key{&genome, v.contig, g.start, g.scored};
    auto found = shared_ref.find(key);
    if (found == shared_ref.end()) {
      std::string ref = extended->substr(static_cast<size_t>(x), static_cast<size_t>(g.width()));
      blocks.push_back({ref, false, g.width(), g.scored, {}});
      blocks.push_back({std::move(ref), true, g.width(), g.scored, {}});
      found = shared_ref.emplace(key, std::make_pair(blocks.size() - 2, blocks.size() - 1)).first;
    }
    placed[i].ref_plus = found->second.first;
    placed[i].ref_minus = found->second.second;
    for (bool minus : {false, true}) {
      blocks.push_back({AltBlockInput(v, g, *extended, minus), minus, g.width(), g.scored, {}});
      (minus ? placed[i].alt_minus : placed[i].alt_plus) = blocks.size() - 1;
    }
  }
  // Calls of one block width each, in the order the blocks were made.
  std::map<int64_t, std::vector<size_t>> by_width;
  for (size_t b = 0; b < blocks.size(); ++b) by_width[blocks[b].width].push_back(b);
  for (const auto& [width, members] : by_width) {
    const auto per_call = static_cast<size_t>(std::clamp<int64_t>(
        kSpliceScoredBasesPerCall / blocks[members[0]].scored, 1, kSpliceBlocksPerCall));
    for (size_t first = 0; first < members.size(); first += per_call) {
      if (context.Cancelled()) return Cancelled("the request was cancelled");
      const size_t last = std::min(members.size(), first + per_call);
      DNASERVE_RETURN_IF_ERROR(
          ScoreCall(&blocks, members, first, last, model, flank, backend, context, totals));
    }
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    const core::RequestedVariant& v = *variants[i].variant;
    for (bool minus : {false, true}) {
      SpliceTrack ref = blocks[minus ? placed[i].ref_minus : placed[i].ref_plus].track;
      ref.first_offset = geometry[i].start - (v.position - 1);
      SpliceTrack& alt = blocks[minus ? placed[i].alt_minus : placed[i].alt_plus].track;
      alt.first_offset = AltFirstOffset(v, geometry[i], minus);
      auto delta = ComputeSpliceDelta(ref, alt, static_cast<int64_t>(v.ref.size()),
                                      static_cast<int64_t>(v.alt.size()), distance);
      if (!delta.ok()) return delta.status();
      *(minus ? variants[i].minus : variants[i].plus) = *delta;
    }
  }
  return Status::Ok();
}

}  // namespace dnaserve::runner
