#include "runner/workflows/interval_coordinates.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

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

using rapidjson::Value;

// One BED / bedGraph row mapped; `start` receives its new start (for sorting).
std::string MapBedRow(std::string_view line, const IntervalFrame& frame, int64_t* start,
                      int64_t* end) {
  std::vector<std::string> f = SplitTabs(line);
  if (f.size() < 3) return std::string(line);
  const int64_t old_start = ToInt(f[1]);
  auto [s, e] = frame.Span(old_start, ToInt(f[2]));
  f[0] = frame.contig;
  f[1] = std::to_string(s);
  f[2] = std::to_string(e);
  *start = s;
  *end = e;
  // BED6+: column 6 is the strand (bedGraph has four columns).
  if (f.size() >= 6 && f[5].size() == 1) f[5] = std::string(1, frame.Strand(f[5][0]));
  if (f.size() >= 8) {
    const int64_t thick_start = ToInt(f[6]);
    const int64_t thick_end = ToInt(f[7]);
    if (thick_start == thick_end) {
      // No thick part (a non-coding transcript): kept empty at the row's start.
      f[6] = f[7] = std::to_string(s);
    } else {
      auto [ts, te] = frame.Span(thick_start, thick_end);
      f[6] = std::to_string(ts);
      f[7] = std::to_string(te);
    }
  }
  if (f.size() >= 12) {
    const std::vector<int64_t> sizes = IntList(f[10]);
    const std::vector<int64_t> starts = IntList(f[11]);
    if (sizes.size() == starts.size()) {
      std::vector<std::pair<int64_t, int64_t>> blocks;
      for (size_t i = 0; i < sizes.size(); ++i) {
        const int64_t a = old_start + starts[i];
        blocks.push_back(frame.Span(a, a + sizes[i]));
      }
      std::sort(blocks.begin(), blocks.end());
      std::vector<int64_t> new_sizes, new_starts;
      for (const auto& [a, b] : blocks) {
        new_sizes.push_back(b - a);
        new_starts.push_back(a - s);
      }
      const bool trailing = !f[10].empty() && f[10].back() == ',';
      f[10] = IntListText(new_sizes, trailing);
      f[11] = IntListText(new_starts, !f[11].empty() && f[11].back() == ',');
    }
  }
  return JoinTabs(f);
}

// "key=value" attributes that hold a 0-based point of the analysed sequence.
std::string MapGffAttributes(const std::string& attributes, const IntervalFrame& frame) {
  return MapPointAttributes(attributes, [&frame](int64_t p) { return frame.Point(p); });
}

// ------------------------------------------------------------------------- JSON

using Document = rapidjson::Document;

Value* Member(Value& object, const char* key) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(key);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

// {"start": a, "end": b} of the analysed sequence -> the contig's span.
void MapSpanObject(Value& item, const IntervalFrame& frame) {
  Value* start = Member(item, "start");
  Value* end = Member(item, "end");
  if (start == nullptr || end == nullptr || !start->IsInt64() || !end->IsInt64()) return;
  auto [s, e] = frame.Span(start->GetInt64(), end->GetInt64());
  start->SetInt64(s);
  end->SetInt64(e);
}

void MapSpanArray(Value* items, const IntervalFrame& frame, bool ascending) {
  if (items == nullptr || !items->IsArray()) return;
  for (auto& item : items->GetArray()) MapSpanObject(item, frame);
  if (ascending && frame.minus) {
    auto array = items->GetArray();
    std::reverse(array.Begin(), array.End());
  }
}

void MapPoint(Value* point, const IntervalFrame& frame) {
  if (point != nullptr && point->IsInt64()) point->SetInt64(frame.Point(point->GetInt64()));
}

void MapStrand(Value* strand, const IntervalFrame& frame, Document::AllocatorType& a) {
  if (strand == nullptr || !strand->IsString() || strand->GetStringLength() != 1) return;
  const char s = frame.Strand(strand->GetString()[0]);
  strand->SetString(&s, 1, a);
}

void MapTranscripts(Value* transcripts, const IntervalFrame& frame, Document::AllocatorType& a) {
  if (transcripts == nullptr || !transcripts->IsArray()) return;
  for (auto& t : transcripts->GetArray()) {
    MapSpanObject(t, frame);
    MapPoint(Member(t, "tss_position"), frame);
    MapPoint(Member(t, "polya_position"), frame);
    MapStrand(Member(t, "strand"), frame, a);
    for (const char* parts : {"exons", "introns", "cds"}) {
      MapSpanArray(Member(t, parts), frame, /*ascending=*/true);
    }
  }
}

void MapTextObject(Value* texts, const IntervalFrame& frame, Document::AllocatorType& a,
                   bool all_bedgraph) {
  if (texts == nullptr || !texts->IsObject()) return;
  for (auto& m : texts->GetObject()) {
    if (!m.value.IsString()) continue;
    const std::string_view text(m.value.GetString(), m.value.GetStringLength());
    const std::string name = m.name.GetString();
    std::string mapped;
    if (!all_bedgraph && name == "gff3") {
      mapped = MapGff3Text(text, frame);
    } else if (all_bedgraph || name == "bed" || name == "bedgraph") {
      mapped = MapBedText(text, frame);
    } else {
      continue;
    }
    m.value.SetString(mapped.data(), static_cast<rapidjson::SizeType>(mapped.size()), a);
  }
}

// A [start, end) pair written as a two-element array (expression's scored_window).
void MapSpanPair(Value* pair, const IntervalFrame& frame) {
  if (pair == nullptr || !pair->IsArray() || pair->Size() != 2) return;
  Value& a = (*pair)[0];
  Value& b = (*pair)[1];
  if (!a.IsInt64() || !b.IsInt64()) return;
  auto [s, e] = frame.Span(a.GetInt64(), b.GetInt64());
  a.SetInt64(s);
  b.SetInt64(e);
}

// The `data` object of a task (also find-genes' data.annotation).
void MapTaskData(Task task, Value& data, const IntervalFrame& frame, Document::AllocatorType& a) {
  MapSpanArray(Member(data, "regions"), frame, false);
  MapSpanArray(Member(data, "window_details"), frame, false);
  MapSpanArray(Member(data, "sites"), frame, false);
  MapSpanArray(Member(data, "windows"), frame, false);
  MapTranscripts(Member(data, "transcripts"), frame, a);
  MapTextObject(Member(data, "tracks"), frame, a, /*all_bedgraph=*/true);
  MapTextObject(Member(data, "formats"), frame, a, /*all_bedgraph=*/false);
  if (task == Task::kExpression) {
    if (Value* input = Member(data, "input")) MapSpanPair(Member(*input, "scored_window"), frame);
  }
}

StatusOr<Document> Parse(std::string_view body) {
  Document doc;
  // Full precision: the scores are written back exactly as the renderer wrote them.
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Internal("the interval job's response is not a JSON object");
  }
  return doc;
}

void AddEcho(Document& doc, std::string_view echo) {
  Value* meta = Member(doc, "meta");
  if (meta == nullptr || !meta->IsObject()) return;
  Document parsed(&doc.GetAllocator());
  parsed.Parse(echo.data(), echo.size());
  Value copy(parsed, doc.GetAllocator());
  meta->AddMember("interval", copy, doc.GetAllocator());
}

std::string Serialise(const Document& doc) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

IntervalFrame IntervalFrame::Of(const core::GenomeInterval& interval) {
  IntervalFrame frame;
  frame.contig = interval.contig;
  frame.begin = interval.start - 1;
  frame.end = interval.end;
  frame.minus = interval.strand == '-';
  return frame;
}

std::pair<int64_t, int64_t> IntervalFrame::Span(int64_t a, int64_t b) const {
  if (minus) return {end - b, end - a};
  return {begin + a, begin + b};
}

int64_t IntervalFrame::Point(int64_t p) const { return minus ? end - 1 - p : begin + p; }

char IntervalFrame::Strand(char s) const {
  if (!minus) return s;
  if (s == '+') return '-';
  if (s == '-') return '+';
  return s;
}

std::string MapBedText(std::string_view text, const IntervalFrame& frame) {
  struct Row {
    int64_t start = 0;
    int64_t end = 0;
    std::string line;
  };
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::vector<Row> rows;
  auto flush = [&] {
    if (frame.minus) {
      std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
        return x.start != y.start ? x.start < y.start : x.end < y.end;
      });
    }
    for (const Row& r : rows) {
      out += r.line;
      out += '\n';
    }
    rows.clear();
  };
  for (std::string_view line : Lines(text)) {
    if (IsBedHeader(line)) {
      flush();
      out += line;
      out += '\n';
      continue;
    }
    Row row;
    row.line = MapBedRow(line, frame, &row.start, &row.end);
    rows.push_back(std::move(row));
  }
  flush();
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

std::string MapGff3Text(std::string_view text, const IntervalFrame& frame) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::string_view line : Lines(text)) {
    if (line.rfind("##sequence-region", 0) == 0) {
      out += "##sequence-region " + frame.contig + " " + std::to_string(frame.begin + 1) + " " +
             std::to_string(frame.end) + "\n";
      continue;
    }
    std::vector<std::string> f = line.empty() || line[0] == '#' ? std::vector<std::string>{}
                                                                 : SplitTabs(line);
    if (f.size() != 9) {
      out += line;
      out += '\n';
      continue;
    }
    // 1-based inclusive [s, e] is the 0-based half-open [s - 1, e).
    auto [s, e] = frame.Span(ToInt(f[3]) - 1, ToInt(f[4]));
    f[0] = frame.contig;
    f[3] = std::to_string(s + 1);
    f[4] = std::to_string(e);
    if (f[6].size() == 1) f[6] = std::string(1, frame.Strand(f[6][0]));
    f[8] = MapGffAttributes(f[8], frame);
    out += JoinTabs(f);
    out += '\n';
  }
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

std::string MapTrackText(OutputFormat format, std::string_view text, const IntervalFrame& frame) {
  if (format == OutputFormat::kGff3) return MapGff3Text(text, frame);
  if (format == OutputFormat::kBed || format == OutputFormat::kBedGraph) {
    return MapBedText(text, frame);
  }
  return std::string(text);
}

StatusOr<std::string> MapPredictJson(Task task, std::string_view body, const IntervalFrame& frame,
                                     std::string_view echo) {
  auto doc = Parse(body);
  if (!doc.ok()) return doc.status();
  auto& a = doc->GetAllocator();
  if (Value* data = Member(*doc, "data")) MapTaskData(task, *data, frame, a);
  if (task == Task::kExpression) {
    if (Value* meta = Member(*doc, "meta")) {
      if (Value* counts = Member(*meta, "task_specific_counts")) {
        MapSpanPair(Member(*counts, "scored_window"), frame);
      }
    }
  }
  AddEcho(*doc, echo);
  return Serialise(*doc);
}

StatusOr<std::string> MapFindGenesJson(std::string_view body, const IntervalFrame& frame,
                                       std::string_view echo) {
  auto doc = Parse(body);
  if (!doc.ok()) return doc.status();
  auto& a = doc->GetAllocator();
  if (Value* data = Member(*doc, "data")) {
    if (Value* annotation = Member(*data, "annotation")) {
      MapTaskData(Task::kAnnotation, *annotation, frame, a);
    }
    if (Value* genes = Member(*data, "expression_predictions"); genes && genes->IsArray()) {
      for (auto& gene : genes->GetArray()) {
        MapPoint(Member(gene, "tss_position"), frame);
        MapStrand(Member(gene, "strand"), frame, a);
      }
    }
  }
  AddEcho(*doc, echo);
  return Serialise(*doc);
}

}  // namespace dnaserve::runner
