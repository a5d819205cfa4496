#include "worker/writers/text_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace dnaserve::worker {

std::string FormatValue(double value) {
  std::string out;
  AppendValue(value, &out);
  return out;
}

void AppendValue(double value, std::string* out) {
  char buf[32];
  // chars_format::general with a precision is printf's %g (C locale), digit for digit.
  const auto end = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general, 6).ptr;
  out->append(buf, end);
}

void AppendInt(int64_t value, std::string* out) {
  char buf[24];
  out->append(buf, std::to_chars(buf, buf + sizeof(buf), value).ptr);
}

std::string TabField(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') c = '_';
  }
  return out;
}

int BedScore(double probability) {
  if (!(probability > 0)) return 0;  // also NaN
  return static_cast<int>(std::lround(std::min(probability, 1.0) * 1000.0));
}

}  // namespace dnaserve::worker
