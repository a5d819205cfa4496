// Which training context an expression request names, and what the model is run on.
//
// A description names its context in one of three ways:
// - an id ("E066", any case): that context, or none when the package lacks it;
// - a CURIE ("UBERON:0002107", "CL:0000895", "EFO:0003042"; the prefix in any case): the
//   contexts the package's curated table gives that term (the first is the one predicted), or
//   none;
// - free text: when the package has a free-text rule (manifest description_contexts.free_text),
//   each context scores the best character-trigram cosine between the description and one of
//   its texts (name, training wordings, ontology label, synonyms), both sides lower-cased, cut
//   into [a-z0-9] words and stripped of the rule's generic words ("cells", "tissue", ...);
//   matched from the rule's threshold up. Packages without the rule keep the model's own
//   whole-wording rule (description_match.h).
// scripts/training/expression_ontology.py is the reference of the free-text rule (the
// threshold was chosen there, on held-out descriptions; MODEL_CARD.md has the figures).
//
// The model is then run on the matched context's name, which its own rule matches to that
// context alone, or, unmatched, on a description it matches to nothing (it then predicts the
// mean over contexts): the prediction is always for the context the response names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "worker/manifest/manifest.h"
#include "worker/tasks/description_match.h"

namespace dnaserve::worker {

struct ResolvedContext {
  bool matched = false;
  std::string matched_by;                   // "id", "curie" or "text"
  std::vector<ContextSimilarity> contexts;  // best first (the predicted one when matched)
  std::vector<std::string> curies;          // curies[i] of contexts[i] ("" when unknown)
  std::string model_text;                   // the description the model is run on
};

// What the model reads when no context matched: no letter or digit, so no trigram, so every
// context scores 0 under the model's own rule and it predicts the mean over contexts.
inline constexpr std::string_view kUnmatchedModelText = " ";

// `description` as the caller sent it (callers truncate it to the text tokenizer's limit).
ResolvedContext ResolveContext(const DescriptionContexts& contexts, std::string_view description,
                               std::size_t top = 3);

// The free-text normal form: lower-cased [a-z0-9] words (every other byte separates words)
// without the generic ones, joined by single spaces.
std::string ContentText(std::string_view text, const std::vector<std::string>& generic_words);

// Each context's free-text score for `description` (package order); all 0 when the package has
// no free-text rule.
std::vector<double> FreeTextScores(const DescriptionContexts& contexts,
                                   std::string_view description);

}  // namespace dnaserve::worker
