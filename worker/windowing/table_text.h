// Small helpers for the decoder's sequence-sensor table files (coding_model.h, splice_signal.h):
// the base codes they index by and the words and numbers of a text line.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace dnaserve::worker::table_text {

// 0-3 for ACGT (either case), -1 for anything else.
inline int BaseCode(char c) {
  switch (c) {
    case 'A':
    case 'a':
      return 0;
    case 'C':
    case 'c':
      return 1;
    case 'G':
    case 'g':
      return 2;
    case 'T':
    case 't':
      return 3;
    default:
      return -1;
  }
}

// The words of a line separated by spaces or tabs (a trailing '\r' ignored).
inline std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The whole word as a finite number.
inline bool ParseDouble(std::string_view word, double* out) {
  std::string text(word);
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(*out);
}

}  // namespace dnaserve::worker::table_text
