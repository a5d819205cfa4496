// Small readers and writers of the text tracks (BED, bedGraph, GFF3) the runner rewrites after a
// worker renders them: moving an answer to genome coordinates (interval_coordinates.*) and cutting
// a widened answer back to its interval (interval_edges.*). Pure functions over strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dnaserve::runner::track_text {

// The lines of `text` without their '\n' (a final newline adds no empty line).
std::vector<std::string_view> Lines(std::string_view text);

std::vector<std::string> SplitTabs(std::string_view line);
std::string JoinTabs(const std::vector<std::string>& fields);

// A decimal field; 0 where it is not one (the worker wrote the rows, so that means a bug there).
int64_t ToInt(const std::string& s);

// BED12's comma-separated block sizes or starts ("10,20," or "10,20").
std::vector<int64_t> IntList(const std::string& s);
std::string IntListText(const std::vector<int64_t>& values, bool trailing_comma);

// A line that is not a BED row: empty, a comment, or a `track` / `browser` line.
bool IsBedHeader(std::string_view line);

// A GFF3 attribute column ("key=value;...") with its points (`tss_position`, `polya_position`:
// 0-based points of the analysed sequence) passed through `map_point`; every other item as is.
template <typename MapPoint>
std::string MapPointAttributes(const std::string& attributes, MapPoint map_point) {
  std::string out;
  size_t from = 0;
  while (from <= attributes.size()) {
    size_t semi = attributes.find(';', from);
    if (semi == std::string::npos) semi = attributes.size();
    std::string item = attributes.substr(from, semi - from);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) {
      const std::string key = item.substr(0, eq);
      if (key == "tss_position" || key == "polya_position") {
        item = key + "=" + std::to_string(map_point(ToInt(item.substr(eq + 1))));
      }
    }
    out += item;
    if (semi < attributes.size()) out += ';';
    from = semi + 1;
  }
  return out;
}

}  // namespace dnaserve::runner::track_text
