// Which ALT alleles the workflow can score.
#pragma once

#include <string_view>

namespace dnaserve::variant {

enum class AlleleKind {
  kSequence,          // A/C/G/T/N letters: SNVs, MNVs, insertions, deletions, complex changes
  kSymbolic,          // <DEL>, <INS:ME>, <NON_REF>, <*> ...: skipped (GEX_SKIPPED_ALT)
  kBreakend,          // G]17:198982], .A, G. ...: skipped
  kSpanningDeletion,  // *: skipped
  kMissing,           // '.', "no ALT": nothing to score, nothing to list
  kInvalid,           // anything else: the VCF is malformed
};

AlleleKind ClassifyAlt(std::string_view alt);
// REF must be one or more of A/C/G/T/N (any case).
bool IsSequenceAllele(std::string_view allele);

}  // namespace dnaserve::variant
