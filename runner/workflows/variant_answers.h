// The answer cache (answer_cache.h) for POST /v1/variants/score: one entry per variant and
// scorer, holding that scorer's result exactly as rendered (variant_score_response.h
// RenderScorerResults), so a variant served from the cache is the same bytes as when computed.
//
// A variant is public: its scores come from the reference genome and the models only, so the
// key names no tenant and every tenant is served the same entry. The key material (hashed into
// the Redis key) is everything the rendered result depends on:
//   the format (kVariantAnswerFormat, bumped when a scorer's rendering changes) and this build's
//   version (a release that renders differently never reads another's entries);
//   the assembly, the contig (by the reference's name: chr20, 20 and NC_000020.10 share one),
//   position, REF and ALT;
//   the scorer, its model id and package digest, and its options: splice distance and flank;
//   expression window, the contexts as sent and the start-site catalogue's build and MD5;
//   chromatin top; promoter distance and step.
// A scorer whose package digest is unknown ("" from an old worker) names no exact model: such a
// request neither reads nor writes the cache.
// A variant is served from the cache only when every scorer asked for has its entry; otherwise
// it is scored as usual (and its entries stored).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runner/workflows/answer_cache.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {

inline constexpr const char* kVariantAnswerFormat = "variant_score/2";  // 2: with quantiles

// Answers to keep are stored in batches (one Redis call per kVariantAnswerBatch variants, and
// the rest by Flush or at destruction): Redis may log every write to disk (appendfsync always).
class CachedVariantAnswers : public VariantAnswers {
 public:
  explicit CachedVariantAnswers(AnswerCache* cache) : cache_(cache) {}
  ~CachedVariantAnswers() override { Flush(); }
  CachedVariantAnswers(const CachedVariantAnswers&) = delete;
  CachedVariantAnswers& operator=(const CachedVariantAnswers&) = delete;

  void Recall(VariantScoreResult* result) override;
  void Remember(const ScoredVariant& scored, const VariantScoreResult& result) override;
  void Flush();

 private:
  AnswerCache* cache_;
  std::vector<std::pair<std::string, std::string>> pending_;  // (key material, entry)
};

inline constexpr size_t kVariantAnswerBatch = 64;

// (scorer, key material) for each scorer of `result` on the checked variant `v`, in write
// order; empty when a scorer's package digest is unknown. Exposed for tests.
std::vector<std::pair<std::string, std::string>> VariantAnswerKeys(
    const core::RequestedVariant& v, const VariantScoreResult& result);

}  // namespace dnaserve::runner
