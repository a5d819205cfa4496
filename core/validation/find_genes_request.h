// Admission of the find-genes-and-predict-expression request: JSON body -> the typed inputs of
// its two stages, applying the contract's rules (closed body and options, 1,000-500,000 bp after
// whitespace stripping, description required and non-empty, shift_coordinates' region label).
// The field table is FindGenesRequestSchema() in request_schema.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "core/validation/genome_interval.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

// The workflow's name in data.task, meta.task and job records, its sequence floor (the ceiling
// is the tasks' kMaxSequenceBp) and the length above which it must run asynchronously (413
// sync_too_large).
inline constexpr std::string_view kFindGenesWorkflow = "find_genes_and_predict_expression";
inline constexpr int64_t kFindGenesMinSequenceBp = 1000;
inline constexpr int64_t kFindGenesSyncLimitBp = 50000;

struct ValidatedFindGenes {
  std::string sequence;  // normalised bases (upper-case ACGTN, whitespace removed)
  std::string sequence_name = "sequence";
  int64_t sequence_length = 0;
  std::string description;
  std::optional<std::string> annotation_model;  // nullopt when omitted/null: the default
  std::optional<std::string> expression_model;
  // The annotation stage's options: batch_size, reverse_complement (always on: the workflow
  // offers no switch), and shift_coordinates as offset + GFF3 seqid.
  worker::v1::AnnotationOptions annotation;
  // Interval input: `sequence` stays empty until a runner reads it; sequence_name is the
  // contig as given and sequence_length the interval's length.
  std::optional<GenomeInterval> interval;
};

// Malformed JSON -> 400 bad_request; every contract violation -> 422 validation_failed with
// details.errors (all errors found, message summarising the first).
StatusOr<ValidatedFindGenes> ValidateFindGenesBody(std::string_view body);

}  // namespace dnaserve::core
