// bedGraph writer: one `track type=bedGraph` line, then chrom/start/end/value rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnaserve::worker {

struct BedGraphValue {
  int64_t start = 0;  // 0-based, half-open; rows of one track must not overlap
  int64_t end = 0;
  double value = 0;
};

struct BedGraphTrack {
  std::string name;         // e.g. "donor", "dev", "DNase"
  std::string description;  // free text for the track line
  std::string chrom;
  std::vector<BedGraphValue> values;
};

// Empty spans (start == end) are skipped. Double quotes in name/description become single ones.
std::string WriteBedGraph(const BedGraphTrack& track);

// The same text written row by row as values arrive (a per-base track of a long sequence is
// rendered window by window instead of being collected first), with the same rules.
class BedGraphWriter {
 public:
  BedGraphWriter(const std::string& name, const std::string& description, std::string_view chrom);
  void Reserve(size_t rows);
  void Add(int64_t start, int64_t end, double value);
  std::string Take() { return std::move(out_); }

 private:
  std::string chrom_;
  std::string out_;
};

// Several tracks in one file, each introduced by its own track line.
std::string WriteBedGraphs(const std::vector<BedGraphTrack>& tracks);

}  // namespace dnaserve::worker
