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

std::string WriteBedGraph(const BedGraphTrack& track) {
  std::string out = "track type=bedGraph name=" + Quoted(track.name) +
                    " description=" + Quoted(track.description) + '\n';
  const std::string chrom = TabField(track.chrom);
  // Rows are appended in place: per-base tracks have hundreds of thousands of them.
  out.reserve(out.size() + track.values.size() * (chrom.size() + 32));
  for (const auto& v : track.values) {
    if (v.end <= v.start) continue;
    out += chrom;
    out += '\t';
    AppendInt(v.start, &out);
    out += '\t';
    AppendInt(v.end, &out);
    out += '\t';
    AppendValue(v.value, &out);
    out += '\n';
  }
  return out;
}

std::string WriteBedGraphs(const std::vector<BedGraphTrack>& tracks) {
  std::string out;
  for (const auto& t : tracks) out += WriteBedGraph(t);
  return out;
}

}  // namespace dnaserve::worker
