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

char* PutValue(double value, char* out) {
  // chars_format::general with a precision is printf's %g (C locale), digit for digit.
  return std::to_chars(out, out + kMaxValueChars, value, std::chars_format::general, 6).ptr;
}

char* PutInt(int64_t value, char* out) { return std::to_chars(out, out + kMaxIntChars, value).ptr; }

void AppendValue(double value, std::string* out) {
  char buf[kMaxValueChars];
  out->append(buf, static_cast<size_t>(PutValue(value, buf) - buf));
}

void AppendInt(int64_t value, std::string* out) {
  char buf[kMaxIntChars];
  out->append(buf, static_cast<size_t>(PutInt(value, buf) - buf));
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
