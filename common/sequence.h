// DNA sequence helpers shared by the gateway (admission) and the worker (windowing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dnaserve {

// The four bases in the order every per-base table of the project uses (tokenizers, decoder
// tables): A=0, C=1, G=2, T=3. A base's complement is at 3 - its index.
inline constexpr char kAcgt[] = "ACGT";

// Index of a base in kAcgt, either case; -1 for N and anything else. The one base-code table:
// normalisation, reverse complement, the tokenizers and the decoder tables all read it.
inline int BaseIndex(char c) {
  switch (c) {
    case 'A': case 'a': return 0;
    case 'C': case 'c': return 1;
    case 'G': case 'g': return 2;
    case 'T': case 't': return 3;
    default: return -1;
  }
}

// The canonical base of an input character: A/C/G/T for a, c, g, t in either case, N otherwise.
inline char CanonicalBase(char c) {
  const int index = BaseIndex(c);
  return index < 0 ? 'N' : kAcgt[index];
}

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
