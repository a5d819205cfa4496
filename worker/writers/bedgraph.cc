#include "worker/writers/bedgraph.h"

#include <algorithm>

#include "worker/writers/text_util.h"

namespace dnaserve::worker {
namespace {

std::string Quoted(std::string text) {
  std::replace(text.begin(), text.end(), '"', '\'');
  std::replace(text.begin(), text.end(), '\n', ' ');
  return '"' + text + '"';
}

}  // namespace

BedGraphWriter::BedGraphWriter(const std::string& name, const std::string& description,
                               std::string_view chrom)
    : chrom_(TabField(chrom)),
      out_("track type=bedGraph name=" + Quoted(name) + " description=" + Quoted(description) +
           '\n') {}

void BedGraphWriter::Reserve(size_t rows) { out_.reserve(out_.size() + rows * (chrom_.size() + 32)); }

void BedGraphWriter::Add(int64_t start, int64_t end, double value) {
  if (end <= start) return;
  // Formatted in a stack buffer and appended once: tracks can have hundreds of thousands of rows.
  char row[2 * kMaxIntChars + kMaxValueChars + 4];
  char* p = row;
  *p++ = '\t';
  p = PutInt(start, p);
  *p++ = '\t';
  p = PutInt(end, p);
  *p++ = '\t';
  p = PutValue(value, p);
  *p++ = '\n';
  out_ += chrom_;
  out_.append(row, static_cast<size_t>(p - row));
}

std::string WriteBedGraph(const BedGraphTrack& track) {
  BedGraphWriter writer(track.name, track.description, track.chrom);
  writer.Reserve(track.values.size());
  for (const auto& v : track.values) writer.Add(v.start, v.end, v.value);
  return writer.Take();
}

std::string WriteBedGraphs(const std::vector<BedGraphTrack>& tracks) {
  std::string out;
  for (const auto& t : tracks) out += WriteBedGraph(t);
  return out;
}

}  // namespace dnaserve::worker
