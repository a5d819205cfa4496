#include "gateway/server/header_block.h"

#include <cstring>

namespace dnaserve::gateway {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// `name` is lower case.
bool NameIs(std::string_view line_name, std::string_view name) {
  if (line_name.size() != name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (Lower(line_name[i]) != name[i]) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

void AppendListItem(std::optional<std::string>& list, std::string_view item) {
  if (list) {
    list->push_back(',');
    list->append(item);
  } else {
    list.emplace(item);
  }
}

std::optional<uint64_t> LeadingNumber(std::string_view value) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return UINT64_MAX;  // absurdly large: saturate
    n = n * 10 + static_cast<uint64_t>(value[i] - '0');
  }
  if (i == 0) return std::nullopt;
  return n;
}

}  // namespace

HeaderBlockFacts ScanHeaderBlock(std::string_view block) {
  HeaderBlockFacts facts;
  bool seen_content_length = false;
  size_t pos = block.find('\n');  // skip the request line
  while (pos != std::string_view::npos && pos + 1 < block.size()) {
    const size_t start = pos + 1;
    const size_t end = block.find('\n', start);
    std::string_view line =
        block.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    pos = end;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    // Cheap first-letter dispatch: most lines are none of these.
    switch (Lower(name.empty() ? '\0' : name[0])) {
      case 'a':
        if (NameIs(name, "authorization")) ++facts.authorization_lines;
        break;
      case 'c':
        if (!seen_content_length && NameIs(name, "content-length")) {
          seen_content_length = true;
          facts.content_length = LeadingNumber(value);
        }
        break;
      case 't':
        if (NameIs(name, "transfer-encoding")) {
          std::string lower(value);
          for (char& c : lower) c = Lower(c);
          AppendListItem(facts.transfer_encoding, lower);
        }
        break;
      case 'x':
        if (NameIs(name, "x-forwarded-for")) AppendListItem(facts.forwarded_for, value);
        break;
      default:
        break;
    }
  }
  return facts;
}

}  // namespace dnaserve::gateway
