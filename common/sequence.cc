#include "common/sequence.h"

namespace dnaserve {
namespace {

bool IsAsciiWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Upper-case base for A/C/G/T/N in either case, 0 for anything else.
char UpperBase(char c) {
  const int index = BaseIndex(c);
  if (index >= 0) return kAcgt[index];
  return c == 'N' || c == 'n' ? 'N' : 0;
}

}  // namespace

NormalizedSequence NormalizeSequence(std::string_view raw) {
  NormalizedSequence out;
  out.bases.reserve(raw.size());
  for (char c : raw) {
    if (IsAsciiWhitespace(c)) continue;
    char base = UpperBase(c);
    if (base == 0 && !out.first_invalid) {
      out.first_invalid = static_cast<int64_t>(out.bases.size());
      out.invalid_char = c;
    }
    out.bases.push_back(base == 0 ? c : base);
  }
  return out;
}

std::string ReverseComplement(std::string_view bases) {
  std::string out(bases.rbegin(), bases.rend());
  for (char& c : out) {
    const int index = BaseIndex(c);
    c = index < 0 ? 'N' : kAcgt[3 - index];
  }
  return out;
}

}  // namespace dnaserve
