#include "common/text.h"

namespace dnaserve {

std::string GroupedThousands(int64_t n) {
  // Built from the unsigned magnitude: -INT64_MIN does not fit an int64_t.
  const uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace dnaserve
