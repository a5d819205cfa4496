// Admission of the six predict requests: JSON body -> typed worker request, applying every rule
// of the contract's Resources, Errors and Limits sections. The field tables in
// request_schema.h are the single source for these checks and for the OpenAPI schemas.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "core/validation/genome_interval.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

struct ValidatedPredict {
  Task task = Task::kPromoter;
  // Options filled with defaults; `model` left empty (resolved against the catalogue later);
  // `sequence` normalised (for expression: exactly the 9,198 bp scored window).
  worker::v1::PredictRequest request;
  std::optional<std::string> requested_model;  // top-level `model`, nullopt when omitted/null
  std::string sequence_name = "sequence";
  int64_t sequence_length = 0;  // stripped length of the submitted sequence
  // Expression only.
  int64_t tss_index = 0;
  int64_t scored_start = 0;
  int64_t scored_end = 0;
  // Interval input: the bases are read by a runner (request.sequence is empty until then;
  // sequence_name is the contig as given, sequence_length the interval's length).
  std::optional<GenomeInterval> interval;
};

// Malformed JSON -> 400 bad_request; every contract violation -> 422 validation_failed with
// details.errors (all errors found, message summarising the first).
StatusOr<ValidatedPredict> ValidatePredictBody(Task task, std::string_view body);

// shift_coordinates (annotation task, find-genes workflow): without a value, coordinates stay
// relative to the submitted sequence (offset 0) and the GFF3 seqid is `sequence_name`. With one,
// `sequence_name` must be a region label chrom:start-end (1-based, inclusive, commas allowed):
// offset = start - 1, seqid = chrom; otherwise a value_error at [body, sequence_name] is added
// to `errors`. Nothing is checked when sequence_name itself already failed.
void ApplyShiftCoordinates(const std::string* shift, const std::string& sequence_name,
                           bool sequence_name_failed, std::vector<FieldError>* errors,
                           worker::v1::AnnotationOptions* out);

// Expression: request.sequence = the scored window [scored_start, scored_start + 9,198) of
// `bases` (admission does it for a sequence; a runner for an interval once it has the bases).
void SliceExpressionWindow(const std::string& bases, ValidatedPredict* out);

// The error for options.shift_coordinates sent with an interval (outputs already are in genome
// coordinates).
FieldError IntervalShiftError();

// Picks the output format from `?format=` (wins when present, case-insensitive) or the Accept
// header (highest q first, then the client's order; the first supported type wins). No Accept,
// an empty one, */* or application/json select json. Unsupported value, or an Accept naming
// only types the task does not offer (known text formats or unknown media types) -> 415
// unsupported_format naming the task's supported set.
StatusOr<OutputFormat> NegotiateFormat(Task task, const std::optional<std::string>& query_format,
                                       const std::optional<std::string>& accept);
// The same negotiation for any operation offering `supported` (json first); `operation` names it
// in the 415 messages. The find-genes workflow offers json alone.
StatusOr<OutputFormat> NegotiateFormat(std::string_view operation,
                                       const std::vector<OutputFormat>& supported,
                                       const std::optional<std::string>& query_format,
                                       const std::optional<std::string>& accept);

}  // namespace dnaserve::core
