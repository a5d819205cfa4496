#include "common/sequence.h"

namespace dnaserve {
namespace {

bool IsAsciiWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

char UpperBase(char c) {
  switch (c) {
    case 'A': case 'a': return 'A';
    case 'C': case 'c': return 'C';
    case 'G': case 'g': return 'G';
    case 'T': case 't': return 'T';
    case 'N': case 'n': return 'N';
    default: return 0;
  }
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
    switch (UpperBase(c)) {
      case 'A': c = 'T'; break;
      case 'T': c = 'A'; break;
      case 'C': c = 'G'; break;
      case 'G': c = 'C'; break;
      default: c = 'N'; break;
    }
  }
  return out;
}

}  // namespace dnaserve
