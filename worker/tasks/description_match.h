// Which training context(s) an expression description resembles: the package's contexts
// (manifest "description_contexts": ids, names and the wordings the model was trained on) ranked
// by character-trigram cosine similarity. worker/README.md ("Description matching") documents
// the method; scripts/training/expression_context.py computes the same numbers in the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

struct ContextSimilarity {
  std::string id;    // e.g. "E066"
  std::string name;  // e.g. "Liver"
  double similarity = 0;
};

struct DescriptionMatch {
  bool matched = false;                    // best similarity >= the package's threshold
  std::vector<ContextSimilarity> contexts;  // best first, at most `top`
};

// Trigram counts of a text after normalisation: ASCII letters lower-cased, every byte that is
// not [a-z0-9] becomes a space, one space added at each end; trigrams of three spaces are
// skipped. Key = c0 * 65536 + c1 * 256 + c2.
std::map<uint32_t, int> TrigramCounts(std::string_view text);

// Cosine of two trigram count vectors; 0 when either is empty.
double TrigramCosine(const std::map<uint32_t, int>& a, const std::map<uint32_t, int>& b);

// The contexts ranked by their best wording's similarity to `description` (ties: package
// order), at most `top` of them. `description` is matched as the model sees it, i.e. callers
// pass it truncated to the text tokenizer's max_tokens bytes.
DescriptionMatch MatchDescription(const DescriptionContexts& contexts,
                                  std::string_view description, std::size_t top = 3);

}  // namespace dnaserve::worker
