// Description matching (worker/tasks/description_match.h): the character-trigram rule, the
// ranking and threshold, and the manifest's `description_contexts` block.
#include "worker/tasks/description_match.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "worker/manifest/manifest.h"

namespace dnaserve::worker {
namespace {

uint32_t Code(char a, char b, char c) {
  return (uint32_t{static_cast<unsigned char>(a)} << 16) |
         (uint32_t{static_cast<unsigned char>(b)} << 8) | uint32_t{static_cast<unsigned char>(c)};
}

DescriptionContexts ThreeContexts(double threshold = 0.4) {
  DescriptionContexts contexts;
  contexts.threshold = threshold;
  contexts.contexts = {
      {"E066", "Liver", {"Liver", "Liver, liver", "RNA-seq of Liver"}},
      {"E095", "Left Ventricle", {"Left Ventricle", "heart: Left Ventricle"}},
      {"E071", "Brain Hippocampus Middle", {"Brain Hippocampus Middle", "brain tissue"}},
      {"E096", "Lung", {"Lung", "lung tissue"}},
  };
  return contexts;
}

CATCH_TEST_CASE("trigrams: lower-cased, punctuation as spaces, padded, no all-space trigram",
                "[description_match]") {
  auto counts = TrigramCounts("Ab-C");  // normalised to " ab c "
  CATCH_CHECK(counts.size() == 4);
  CATCH_CHECK(counts.at(Code(' ', 'a', 'b')) == 1);
  CATCH_CHECK(counts.at(Code('a', 'b', ' ')) == 1);
  CATCH_CHECK(counts.at(Code('b', ' ', 'c')) == 1);
  CATCH_CHECK(counts.at(Code(' ', 'c', ' ')) == 1);
  // Runs of separators make no all-space trigram; UTF-8 bytes count as separators.
  CATCH_CHECK(TrigramCounts("a   b").count(Code(' ', ' ', ' ')) == 0);
  CATCH_CHECK(TrigramCounts("").empty());
  CATCH_CHECK(TrigramCounts("\xc3\xa9").empty());  // "é": two non-alphanumeric bytes only
  CATCH_CHECK(TrigramCounts("aaaa").at(Code('a', 'a', 'a')) == 2);
}

CATCH_TEST_CASE("trigram cosine: 1 for the same text up to case and punctuation, 0 for none "
                "shared", "[description_match]") {
  CATCH_CHECK(TrigramCosine(TrigramCounts("Liver"), TrigramCounts("LIVER")) == Approx(1.0));
  CATCH_CHECK(TrigramCosine(TrigramCounts("left-ventricle"), TrigramCounts("Left Ventricle")) ==
              Approx(1.0));
  // A trailing separator adds one trigram ("r  "): 5 / sqrt(5 * 6).
  CATCH_CHECK(TrigramCosine(TrigramCounts("liver"), TrigramCounts("liver!")) ==
              Approx(5.0 / std::sqrt(30.0)));
  CATCH_CHECK(TrigramCosine(TrigramCounts("liver"), TrigramCounts("qwzx")) == 0.0);
  CATCH_CHECK(TrigramCosine(TrigramCounts(""), TrigramCounts("liver")) == 0.0);
  // " liver " (5 trigrams) inside " adult liver " (11 trigrams): 5 / sqrt(5 * 11).
  CATCH_CHECK(TrigramCosine(TrigramCounts("liver"), TrigramCounts("adult liver")) ==
              Approx(5.0 / std::sqrt(55.0)));
}

CATCH_TEST_CASE("matching ranks contexts by their best wording, best first, at most three",
                "[description_match]") {
  const auto contexts = ThreeContexts();
  auto liver = MatchDescription(contexts, "liver");
  CATCH_CHECK(liver.matched);
  CATCH_REQUIRE(liver.contexts.size() == 3);
  CATCH_CHECK(liver.contexts[0].id == "E066");
  CATCH_CHECK(liver.contexts[0].name == "Liver");
  CATCH_CHECK(liver.contexts[0].similarity == Approx(1.0));
  CATCH_CHECK(liver.contexts[1].similarity <= liver.contexts[0].similarity);
  CATCH_CHECK(liver.contexts[2].similarity <= liver.contexts[1].similarity);

  // A second wording decides: "brain tissue" is one of E071's wordings.
  auto brain = MatchDescription(contexts, "Brain tissue");
  CATCH_CHECK(brain.matched);
  CATCH_CHECK(brain.contexts[0].id == "E071");
  CATCH_CHECK(brain.contexts[0].similarity == Approx(1.0));

  auto heart = MatchDescription(contexts, "heart");
  CATCH_CHECK(heart.contexts[0].id == "E095");
  CATCH_CHECK(MatchDescription(contexts, "liver", 1).contexts.size() == 1);
}

CATCH_TEST_CASE("a description that shares nothing is reported unmatched, not refused",
                "[description_match]") {
  const auto contexts = ThreeContexts();
  auto nonsense = MatchDescription(contexts, "qwzx kcdj vbnm");
  CATCH_CHECK_FALSE(nonsense.matched);
  CATCH_REQUIRE(nonsense.contexts.size() == 3);
  CATCH_CHECK(nonsense.contexts[0].similarity == 0.0);
  // Ties keep the package order.
  CATCH_CHECK(nonsense.contexts[0].id == "E066");
  CATCH_CHECK(nonsense.contexts[1].id == "E095");

  // The threshold is inclusive and comes from the package.
  const double heart = MatchDescription(contexts, "heart").contexts[0].similarity;
  CATCH_CHECK(MatchDescription(ThreeContexts(heart), "heart").matched);
  CATCH_CHECK_FALSE(MatchDescription(ThreeContexts(heart + 1e-6), "heart").matched);
  CATCH_CHECK_FALSE(MatchDescription(contexts, "").matched);
}

const char kExpression[] = R"({
  "format_version": 1, "id": "expression-x", "task": "expression", "description": "x",
  "is_default": true, "tokenizer": {"type": "char"}, "context_window_bp": 9198,
  "trained_window_bp": 9198, "output_labels": ["expression_log_tpm"],
  "text_tokenizer": {"type": "bytes", "max_tokens": 256}, CONTEXTS
  "trained": true, "seed": 1, "weights": "model.pt", "model_card": "MODEL_CARD.md"
})";

std::string ExpressionWith(const std::string& contexts) {
  std::string json = kExpression;
  return json.replace(json.find("CONTEXTS"), 8, contexts);
}

CATCH_TEST_CASE("manifest: description_contexts is parsed and validated", "[description_match]") {
  auto none = ParseManifest(ExpressionWith(""));
  CATCH_REQUIRE(none.ok());
  CATCH_CHECK_FALSE(none->description_contexts.has_value());

  auto parsed = ParseManifest(ExpressionWith(
      R"("description_contexts": {"method": "char-trigram-cosine", "threshold": 0.4,
          "contexts": [{"id": "E066", "name": "Liver", "wordings": ["Liver", "liver tissue"]}]},)"));
  CATCH_REQUIRE(parsed.ok());
  CATCH_REQUIRE(parsed->description_contexts.has_value());
  CATCH_CHECK(parsed->description_contexts->threshold == Approx(0.4));
  CATCH_REQUIRE(parsed->description_contexts->contexts.size() == 1);
  CATCH_CHECK(parsed->description_contexts->contexts[0].id == "E066");
  CATCH_CHECK(parsed->description_contexts->contexts[0].wordings.size() == 2);

  auto error = [](const std::string& block) {
    auto m = ParseManifest(ExpressionWith(block));
    return m.ok() ? std::string("<parsed>") : m.status().message();
  };
  auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  CATCH_CHECK(contains(error(R"("description_contexts": [],)"), "must be an object"));
  CATCH_CHECK(contains(error(R"("description_contexts": {"method": "embedding", "threshold": 0.4,
                                 "contexts": [{"id": "a", "name": "b", "wordings": ["c"]}]},)"),
                       "description_contexts.method"));
  CATCH_CHECK(contains(error(R"("description_contexts": {"method": "char-trigram-cosine",
                                 "contexts": [{"id": "a", "name": "b", "wordings": ["c"]}]},)"),
                       "threshold"));
  CATCH_CHECK(contains(error(R"("description_contexts": {"method": "char-trigram-cosine",
                                 "threshold": 1.5,
                                 "contexts": [{"id": "a", "name": "b", "wordings": ["c"]}]},)"),
                       "threshold"));
  CATCH_CHECK(contains(error(R"("description_contexts": {"method": "char-trigram-cosine",
                                 "threshold": 0.4, "contexts": []},)"),
                       "contexts"));
  CATCH_CHECK(contains(error(R"("description_contexts": {"method": "char-trigram-cosine",
                                 "threshold": 0.4, "contexts": [{"id": "a", "name": "b"}]},)"),
                       "wordings"));
}

}  // namespace
}  // namespace dnaserve::worker
