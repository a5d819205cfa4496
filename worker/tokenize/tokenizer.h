// Sequence -> token ids, with the fixed id mappings documented in worker/README.md.
//   char: PAD=0 A=1 C=2 G=3 T=4 N=5.
//   kmer: PAD=0, UNK=1 (a k-mer containing N), then 2 + the base-4 value of the k-mer (A<C<G<T).
// The worker pads windows with N, so PAD never comes out of Encode; models may still rely on it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kKmerUnkId = 1;

class Tokenizer {
 public:
  explicit Tokenizer(const TokenizerSpec& spec)
      : kmer_(spec.type == TokenizerType::kKmer), k_(spec.k), stride_(spec.stride) {}

  int k() const { return k_; }
  int stride() const { return stride_; }
  int64_t vocab_size() const;

  // Tokens produced from `bases` bases: one per stride while a whole k-mer fits.
  int64_t TokenCount(int64_t bases) const;
  // Offset of token t's first base, and one past its last base, within the tokenised string.
  int64_t TokenStart(int64_t t) const { return t * stride_; }
  int64_t TokenEnd(int64_t t) const { return t * stride_ + k_; }

  // Appends the ids of `bases` (upper-case ACGTN; anything else counts as N) to `out`.
  void Encode(std::string_view bases, std::vector<int64_t>* out) const;

 private:
  bool kmer_;
  int k_;
  int stride_;
};

// Description text of the expression model: UTF-8 bytes, id = byte + 1, at most `max_tokens`.
std::vector<int64_t> EncodeTextBytes(std::string_view text, int max_tokens);

}  // namespace dnaserve::worker
