#include "runner/workflows/track_text.h"

#include <cstdlib>

namespace dnaserve::runner::track_text {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t from = 0;
  while (from < text.size()) {
    size_t nl = text.find('\n', from);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return lines;
}

std::vector<std::string> SplitTabs(std::string_view line) {
  std::vector<std::string> fields;
  size_t from = 0;
  while (true) {
    const size_t tab = line.find('\t', from);
    fields.emplace_back(line.substr(from, tab == std::string_view::npos ? tab : tab - from));
    if (tab == std::string_view::npos) break;
    from = tab + 1;
  }
  return fields;
}

std::string JoinTabs(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += '\t';
    out += fields[i];
  }
  return out;
}

int64_t ToInt(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

std::vector<int64_t> IntList(const std::string& s) {
  std::vector<int64_t> out;
  size_t from = 0;
  while (from < s.size()) {
    size_t comma = s.find(',', from);
    if (comma == std::string::npos) comma = s.size();
    if (comma > from) out.push_back(ToInt(s.substr(from, comma - from)));
    from = comma + 1;
  }
  return out;
}

std::string IntListText(const std::vector<int64_t>& values, bool trailing_comma) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  if (trailing_comma && !values.empty()) out += ',';
  return out;
}

bool IsBedHeader(std::string_view line) {
  return line.empty() || line[0] == '#' || line.rfind("track", 0) == 0 ||
         line.rfind("browser", 0) == 0;
}

}  // namespace dnaserve::runner::track_text
