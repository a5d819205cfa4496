#include "runner/variant/allele.h"

namespace dnaserve::variant {

bool IsSequenceAllele(std::string_view allele) {
  if (allele.empty()) return false;
  for (char c : allele) {
    switch (c) {
      case 'A':
      case 'C':
      case 'G':
      case 'T':
      case 'N':
      case 'a':
      case 'c':
      case 'g':
      case 't':
      case 'n':
        break;
      default:
        return false;
    }
  }
  return true;
}

AlleleKind ClassifyAlt(std::string_view alt) {
  if (alt == ".") return AlleleKind::kMissing;
  if (alt == "*") return AlleleKind::kSpanningDeletion;
  if (IsSequenceAllele(alt)) return AlleleKind::kSequence;
  // <ID>, and a sequence with an assembled-contig reference such as C<ctg1> (VCF 4.1).
  size_t open = alt.find('<');
  if (open != std::string_view::npos && alt.find('>', open) != std::string_view::npos) {
    return AlleleKind::kSymbolic;
  }
  // Mate-paired breakends carry [ or ]; single breakends are a sequence with a leading or
  // trailing '.'.
  if (alt.find('[') != std::string_view::npos || alt.find(']') != std::string_view::npos) {
    return AlleleKind::kBreakend;
  }
  if (alt.size() >= 2 && alt.front() == '.' && IsSequenceAllele(alt.substr(1))) {
    return AlleleKind::kBreakend;
  }
  if (alt.size() >= 2 && alt.back() == '.' && IsSequenceAllele(alt.substr(0, alt.size() - 1))) {
    return AlleleKind::kBreakend;
  }
  return AlleleKind::kInvalid;
}

}  // namespace dnaserve::variant
