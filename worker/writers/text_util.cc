#include "worker/writers/text_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dnaserve::worker {

std::string FormatValue(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  return buf;
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
