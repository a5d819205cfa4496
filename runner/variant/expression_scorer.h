// What the annotation engine needs from an expression model. Phase 2 implements it on the
// gateway's InferenceBackend (the expression task, one 9,198 bp window per request, tss_index
// 4599); tests implement it with deterministic functions of the sequence.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runner/vcf/vcf_types.h"

namespace dnaserve::variant {

struct ScoreRequest {
  std::string_view sequence;     // 9,198 bp, gene-sense strand, TSS at offset 4599, A/C/G/T/N
  std::string_view description;  // the tissue description, passed to the model as written
};

class ExpressionScorer {
 public:
  virtual ~ExpressionScorer() = default;
  // One prediction on the log(TPM+1) scale per request, in order. `cancelled` (may be null) is
  // raised when the job is abandoned; return an error soon after.
  virtual StatusOr<std::vector<double>> Score(const std::vector<ScoreRequest>& batch,
                                              const std::atomic<bool>* cancelled) = 0;
  // The id of the model that scores (for ##GEXModel and meta.model); asked only when the job
  // has something to score.
  virtual StatusOr<std::string> ModelId() = 0;
  // Model calls this scorer will make for one job before it refuses (0: no limit). The job's
  // first pass compares it with the calls the file will need, so a job past it fails before
  // the first call rather than after the allowance is spent.
  virtual int64_t CallAllowance() const { return 0; }
  // The training context the model matches `description` to, for the output header; nullopt
  // when the model reports none (the default: scorers without description matching).
  virtual StatusOr<std::optional<TissueMatch>> MatchTissue(std::string_view description,
                                                           const std::atomic<bool>* cancelled) {
    (void)description;
    (void)cancelled;
    return std::optional<TissueMatch>{};
  }
};

}  // namespace dnaserve::variant
