// The variant workflow's local run: input VCF file -> annotated bgzip VCF file, with progress
// and cancellation. Downloading the input and uploading the result are the caller's (see
// runner/variant/README.md for how a job wires this between two S3 transfers).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"
#include "runner/variant/annotation_engine.h"
#include "runner/variant/expression_scorer.h"

namespace dnaserve::variant {

struct AnnotationProgress {
  enum class Phase { kChecking, kScoring };
  Phase phase = Phase::kChecking;
  // kChecking: bytes of the input read (the record count is not known yet).
  int64_t bytes_read = 0;
  int64_t bytes_total = 0;
  // kScoring: records written of the total.
  int64_t records_done = 0;
  int64_t records_total = 0;
  // Share of the whole run done, 0-100: checking is cheap (first 5%), scoring the rest,
  // weighted by the start-site/allele pairs left to score.
  double percent = 0;
};

struct AnnotateRequest {
  std::string input_path;
  std::string output_path;  // written only when the run succeeds
  const TssCatalogue* catalogue = nullptr;
  const ReferenceGenome* reference = nullptr;
  ExpressionScorer* scorer = nullptr;
  EngineOptions options;
  VcfLimits vcf_limits;  // the job's bounds on the input (records, ALTs, line, size)
  std::function<void(const AnnotationProgress&)> on_progress;  // may be empty
  const std::atomic<bool>* cancelled = nullptr;                // may be null
};

struct AnnotateResult {
  AnnotationCounts counts;
  // The scoring model's id when anything was scored (then ##GEXModel is in the output and
  // meta.model may be reported); nullopt otherwise.
  std::optional<std::string> model;
};

// Fails with bad_request for bad input (with the record it concerns), service_unavailable when
// cancelled, or the scorer's own status. No output file is left behind on failure.
StatusOr<AnnotateResult> AnnotateVcf(const AnnotateRequest& request);

}  // namespace dnaserve::variant
