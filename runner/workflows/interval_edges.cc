#include "runner/workflows/interval_edges.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/log.h"
#include "runner/workflows/track_text.h"

namespace dnaserve::runner {
namespace {

using track_text::IntList;
using track_text::IntListText;
using track_text::IsBedHeader;
using track_text::JoinTabs;
using track_text::MapPointAttributes;
using track_text::Lines;
using track_text::SplitTabs;
using track_text::ToInt;

namespace pb = worker::v1;

// The interval in the widened sequence's coordinates, [lo, hi).
struct Cut {
  int64_t lo = 0;
  int64_t hi = 0;

  bool Overlaps(int64_t start, int64_t end) const { return start < hi && end > lo; }
  int64_t Clip(int64_t p) const { return std::clamp(p, lo, hi) - lo; }
  int64_t Shift(int64_t p) const { return p - lo; }
};

// Keeps the items overlapping the cut, their [start, end) clipped to it.
template <typename Items>
void ClipSpans(Items* items, const Cut& cut) {
  Items kept;
  for (auto& item : *items) {
    if (!cut.Overlaps(item.start(), item.end())) continue;
    auto* copy = kept.Add();
    *copy = std::move(item);
    const int64_t start = copy->start();
    copy->set_start(cut.Clip(start));
    copy->set_end(cut.Clip(copy->end()));
  }
  items->Swap(&kept);
}

void CutSplice(pb::SpliceResult* splice, const Cut& cut) {
  ClipSpans(splice->mutable_sites(), cut);
  std::map<int32_t, int32_t> per_window;
  for (const auto& site : splice->sites()) ++per_window[site.window_index()];
  ClipSpans(splice->mutable_windows(), cut);
  // A window's count speaks of the sites the answer lists.
  for (auto& window : *splice->mutable_windows()) window.set_sites(per_window[window.index()]);
}

// A transcript overlapping the interval is kept with its span and its exons, introns and CDS
// clipped to it (parts outside dropped); its TSS and polyA points are where the model put them,
// so one outside [start, end) shows the transcript goes on past the edge.
void CutAnnotation(pb::AnnotationResult* annotation, const Cut& cut) {
  ClipSpans(annotation->mutable_transcripts(), cut);
  for (auto& t : *annotation->mutable_transcripts()) {
    t.set_tss_position(cut.Shift(t.tss_position()));
    t.set_polya_position(cut.Shift(t.polya_position()));
    // ClipSpans clipped the transcript's own span; its parts are still in widened coordinates.
    ClipSpans(t.mutable_exons(), cut);
    ClipSpans(t.mutable_introns(), cut);
    ClipSpans(t.mutable_cds(), cut);
  }
}

// ------------------------------------------------------------------------- text

// thickStart / thickEnd (columns 7, 8) clipped into the row's [row_start, row_end) (interval
// coordinates); a thick part outside it becomes empty at the row's start.
void ClipThick(std::vector<std::string>& f, const Cut& cut, int64_t row_start, int64_t row_end) {
  const int64_t thick_start = ToInt(f[6]);
  const int64_t thick_end = ToInt(f[7]);
  const int64_t a = std::clamp(cut.Clip(thick_start), row_start, row_end);
  const int64_t b = std::clamp(cut.Clip(thick_end), row_start, row_end);
  if (thick_start == thick_end || a >= b) {
    f[6] = f[7] = std::to_string(row_start);
  } else {
    f[6] = std::to_string(a);
    f[7] = std::to_string(b);
  }
}

// The text's lines joined again, its final newline (or its absence) kept.
std::string Joined(const std::vector<std::string>& lines, std::string_view original) {
  std::string out;
  for (const std::string& line : lines) {
    out += line;
    out += '\n';
  }
  if (!original.empty() && original.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

// The row kept (and rewritten), or false for a row the cut drops. A BED12 row's blocks are
// clipped (those outside dropped) and the row then spans its first to its last block, as BED
// requires; thickStart/thickEnd are clipped into it (an empty thick part stays empty).
bool CutBedRow(std::vector<std::string>& f, const Cut& cut) {
  int64_t start = ToInt(f[1]);
  int64_t end = ToInt(f[2]);
  if (!cut.Overlaps(start, end)) return false;
  if (f.size() >= 12) {
    const std::vector<int64_t> sizes = IntList(f[10]);
    const std::vector<int64_t> starts = IntList(f[11]);
    if (sizes.size() == starts.size() && !sizes.empty()) {
      std::vector<std::pair<int64_t, int64_t>> blocks;  // clipped, in interval coordinates
      for (size_t i = 0; i < sizes.size(); ++i) {
        const int64_t a = start + starts[i];
        const int64_t b = a + sizes[i];
        if (cut.Overlaps(a, b)) blocks.emplace_back(cut.Clip(a), cut.Clip(b));
      }
      if (blocks.empty()) return false;  // only an intron inside: no part of the feature
      const int64_t row_start = blocks.front().first;
      const int64_t row_end = blocks.back().second;
      std::vector<int64_t> new_sizes, new_starts;
      for (const auto& [a, b] : blocks) {
        new_sizes.push_back(b - a);
        new_starts.push_back(a - row_start);
      }
      f[9] = std::to_string(blocks.size());
      f[10] = IntListText(new_sizes, !f[10].empty() && f[10].back() == ',');
      f[11] = IntListText(new_starts, !f[11].empty() && f[11].back() == ',');
      f[1] = std::to_string(row_start);
      f[2] = std::to_string(row_end);
      ClipThick(f, cut, row_start, row_end);
      return true;
    }
  }
  f[1] = std::to_string(cut.Clip(start));
  f[2] = std::to_string(cut.Clip(end));
  if (f.size() >= 8) ClipThick(f, cut, cut.Clip(start), cut.Clip(end));
  return true;
}

std::string ShiftGffAttributes(const std::string& attributes, const Cut& cut) {
  return MapPointAttributes(attributes, [&cut](int64_t p) { return cut.Shift(p); });
}

// The values of one attribute ("ID", "Parent"), split at commas.
std::vector<std::string> Attribute(const std::string& attributes, std::string_view key) {
  std::vector<std::string> values;
  size_t from = 0;
  while (from < attributes.size()) {
    size_t semi = attributes.find(';', from);
    if (semi == std::string::npos) semi = attributes.size();
    const std::string_view item(attributes.data() + from, semi - from);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      std::string_view rest = item.substr(key.size() + 1);
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        values.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
      }
    }
    from = semi + 1;
  }
  return values;
}

int64_t ContextOf(const pb::ModelInfo& info) {
  // A flanked per-base model scores each base from flank_bp of real bases on either side; its
  // context window (the output block plus both flanks) would read up to 13 kb more per side
  // for splice-human and change no score.
  if (info.flank_bp() > 0) return info.flank_bp();
  return std::max<int64_t>(0, info.context_window_bp());
}

}  // namespace

int64_t ModelContextBp(Task task, const std::string& model, const core::ModelCatalogue* catalogue,
                       core::InferenceBackend* backend) {
  if (catalogue != nullptr) {
    auto info = catalogue->Resolve(task, model);
    if (info.ok()) return ContextOf(*info);
  }
  if (backend != nullptr) {
    auto models = backend->ListModels(task);
    if (models.ok()) {
      for (const auto& info : *models) {
        if (info.id() == model) return ContextOf(info);
      }
    }
  }
  // Not an error: the interval is analysed without flanks, as before flanks were read.
  log::Warn("interval_context_unknown", {{"task", TaskName(task)}, {"model", model}});
  return 0;
}

std::string CutBedText(std::string_view text, int64_t before, int64_t length) {
  const Cut cut{before, before + length};
  std::vector<std::string> out;
  for (std::string_view line : Lines(text)) {
    if (IsBedHeader(line)) {
      out.emplace_back(line);
      continue;
    }
    std::vector<std::string> f = SplitTabs(line);
    if (f.size() < 3) {
      out.emplace_back(line);
      continue;
    }
    if (CutBedRow(f, cut)) out.push_back(JoinTabs(f));
  }
  return Joined(out, text);
}

std::string CutGff3Text(std::string_view text, int64_t before, int64_t length) {
  const Cut cut{before, before + length};
  std::set<std::string> dropped;
  std::vector<std::string> out;
  for (std::string_view line : Lines(text)) {
    if (line.rfind("##sequence-region", 0) == 0) {
      // The region the records now speak of (the coordinate mapping renames it again).
      std::vector<std::string> words;
      size_t from = 0;
      while (from < line.size()) {
        size_t space = line.find(' ', from);
        if (space == std::string_view::npos) space = line.size();
        if (space > from) words.emplace_back(line.substr(from, space - from));
        from = space + 1;
      }
      if (words.size() == 4) {
        out.push_back(words[0] + " " + words[1] + " 1 " + std::to_string(length));
      } else {
        out.emplace_back(line);
      }
      continue;
    }
    std::vector<std::string> f =
        line.empty() || line[0] == '#' ? std::vector<std::string>{} : SplitTabs(line);
    if (f.size() != 9) {
      out.emplace_back(line);
      continue;
    }
    // 1-based inclusive [s, e] is the 0-based half-open [s - 1, e).
    const int64_t start = ToInt(f[3]) - 1;
    const int64_t end = ToInt(f[4]);
    bool keep = cut.Overlaps(start, end);
    for (const std::string& parent : Attribute(f[8], "Parent")) {
      if (dropped.count(parent) > 0) keep = false;
    }
    if (!keep) {
      for (std::string& id : Attribute(f[8], "ID")) dropped.insert(std::move(id));
      continue;
    }
    f[3] = std::to_string(cut.Clip(start) + 1);
    f[4] = std::to_string(cut.Clip(end));
    f[8] = ShiftGffAttributes(f[8], cut);
    out.push_back(JoinTabs(f));
  }
  return Joined(out, text);
}

pb::PredictResult CutToInterval(Task task, pb::PredictResult result, int64_t before,
                                int64_t length) {
  const Cut cut{before, before + length};
  switch (task) {
    case Task::kPromoter:
      ClipSpans(result.mutable_promoter()->mutable_windows(), cut);
      ClipSpans(result.mutable_promoter()->mutable_regions(), cut);
      break;
    case Task::kSplice:
      CutSplice(result.mutable_splice(), cut);
      break;
    case Task::kEnhancer:
      ClipSpans(result.mutable_enhancer()->mutable_windows(), cut);
      break;
    case Task::kChromatin:
      ClipSpans(result.mutable_chromatin()->mutable_windows(), cut);
      break;
    case Task::kAnnotation:
      CutAnnotation(result.mutable_annotation(), cut);
      break;
    case Task::kExpression:
      return result;
  }
  for (auto& [name, text] : *result.mutable_tracks()) text = CutBedText(text, before, length);
  for (auto& [name, text] : *result.mutable_formats()) {
    if (name == "gff3") {
      text = CutGff3Text(text, before, length);
    } else if (name == "bed" || name == "bedgraph") {
      text = CutBedText(text, before, length);
    }
  }
  return result;
}

FlankedIntervalBackend::FlankedIntervalBackend(core::InferenceBackend* inner, std::string widened,
                                               int64_t before, int64_t length)
    : inner_(inner), widened_(std::move(widened)), before_(before), length_(length) {}

StatusOr<pb::PredictResult> FlankedIntervalBackend::Predict(
    Task task, const pb::PredictRequest& request, const core::CallContext& context,
    const core::ProgressCallback& on_progress) {
  pb::PredictRequest widened = request;
  widened.set_sequence(widened_);
  auto result = inner_->Predict(task, widened, context, on_progress);
  if (!result.ok()) return result.status();
  return CutToInterval(task, std::move(result).value(), before_, length_);
}

StatusOr<std::vector<pb::ModelInfo>> FlankedIntervalBackend::ListModels(Task task) {
  return inner_->ListModels(task);
}

}  // namespace dnaserve::runner
