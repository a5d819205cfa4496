// DNA sequence helpers shared by the gateway (admission) and the worker (windowing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dnaserve {

// Result of normalising a submitted sequence: ASCII whitespace removed, letters upper-cased.
struct NormalizedSequence {
  std::string bases;                     // only A, C, G, T, N when valid
  std::optional<int64_t> first_invalid;  // offset (in the stripped string) of the first bad char
  char invalid_char = 0;
};

// Strips ASCII whitespace (space, \t, \n, \v, \f, \r) and upper-cases a/c/g/t/n. Any other
// character (including a FASTA '>' header) is reported in first_invalid; the length of the
// stripped string is what the Limits section measures.
NormalizedSequence NormalizeSequence(std::string_view raw);

// Reverse complement, upper case: a/c/g/t in either case are complemented (a worker caller may
// send lower case, which the tokenizers read as bases), anything else becomes N.
std::string ReverseComplement(std::string_view bases);

}  // namespace dnaserve
