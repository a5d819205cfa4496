#include "worker/tokenize/tokenizer.h"

#include <algorithm>

namespace dnaserve::worker {
namespace {

// Index of a base among A, C, G, T; -1 for N (and anything else).
int BaseIndex(char c) {
  switch (c) {
    case 'A':
      return 0;
    case 'C':
      return 1;
    case 'G':
      return 2;
    case 'T':
      return 3;
    default:
      return -1;
  }
}

}  // namespace

int64_t Tokenizer::vocab_size() const {
  if (!kmer_) return 6;
  return 2 + (int64_t{1} << (2 * k_));
}

int64_t Tokenizer::TokenCount(int64_t bases) const {
  if (bases < k_) return 0;
  return (bases - k_) / stride_ + 1;
}

void Tokenizer::Encode(std::string_view bases, std::vector<int64_t>* out) const {
  const int64_t n = TokenCount(static_cast<int64_t>(bases.size()));
  out->reserve(out->size() + n);
  if (!kmer_) {
    for (char c : bases) {
      int index = BaseIndex(c);
      out->push_back(index < 0 ? 5 : index + 1);
    }
    return;
  }
  for (int64_t t = 0; t < n; ++t) {
    int64_t value = 0;
    bool unknown = false;
    for (int64_t i = TokenStart(t); i < TokenEnd(t); ++i) {
      int index = BaseIndex(bases[i]);
      if (index < 0) {
        unknown = true;
        break;
      }
      value = value * 4 + index;
    }
    out->push_back(unknown ? kKmerUnkId : 2 + value);
  }
}

std::vector<int64_t> EncodeTextBytes(std::string_view text, int max_tokens) {
  std::vector<int64_t> ids;
  size_t n = std::min(text.size(), static_cast<size_t>(max_tokens > 0 ? max_tokens : 0));
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<unsigned char>(text[i]) + 1);
  return ids;
}

}  // namespace dnaserve::worker
