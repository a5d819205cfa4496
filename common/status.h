// The one error vocabulary of dnaserve.
//
// Every module returns Status / StatusOr<T> across its boundary instead of throwing. An ErrorCode is
// the public `error.code` of the REST contract; it is mapped to an HTTP status exactly once
// (gateway/http/error_response.cc) and to a gRPC status exactly once (proto/status_codec.cc).
// Details are typed here and turned into JSON only at the gateway's edge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dnaserve {

enum class ErrorCode {
  kOk = 0,
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kModelNotFound,
  kConflict,
  kJobExpired,
  kPayloadTooLarge,
  kSyncTooLarge,
  kUnsupportedFormat,
  kValidationFailed,
  kTaskNotSupportedByModel,
  kTooManyRequests,
  kInternal,
  kModelLoading,
  kServiceUnavailable,
  // The caller went away or withdrew the work, so nobody waits for the answer. Internal only:
  // the HTTP edge writes it as service_unavailable (503), gRPC carries it as CANCELLED.
  kCancelled,
};

// The wire name of a code, e.g. "validation_failed".
std::string_view ErrorCodeName(ErrorCode code);
// Inverse of ErrorCodeName; unknown names map to kInternal.
ErrorCode ErrorCodeFromName(std::string_view name);
// True when the service failed rather than the request (internal, model_loading,
// service_unavailable, cancelled): a retry may succeed.
bool IsServerSide(ErrorCode code);

// One entry of details.errors: loc is a path such as ["body", "options", "threshold"].
struct FieldError {
  std::vector<std::string> loc;
  std::string msg;
  std::string type;  // e.g. "extra_forbidden", "missing", "string_too_long"
};

struct ValidationDetails {
  std::vector<FieldError> errors;
};
struct ModelNotFoundDetails {
  std::vector<std::string> available_models;
};
struct TaskNotSupportedDetails {
  std::string task;
  std::vector<std::string> supported_tasks;
};
struct SyncTooLargeDetails {
  int64_t sequence_length = 0;
  int64_t threshold = 0;
};
// Splice response-size cap; `task` and `sequence_length` are filled in by the gateway.
struct RecordCapDetails {
  std::string task;
  int64_t record_count = 0;
  int64_t maximum_records = 0;
  int64_t sequence_length = 0;
  double threshold = 0;
};

using ErrorDetails = std::variant<std::monostate, ValidationDetails, ModelNotFoundDetails,
                                  TaskNotSupportedDetails, SyncTooLargeDetails, RecordCapDetails>;

class Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message, ErrorDetails details = {})
      : code_(code), message_(std::move(message)), details_(std::move(details)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const ErrorDetails& details() const { return details_; }
  ErrorDetails& mutable_details() { return details_; }

  // Seconds a client should wait before retrying (429 / 503); nullopt when not applicable.
  std::optional<int64_t> retry_after_seconds() const { return retry_after_; }
  Status& set_retry_after_seconds(int64_t seconds) {
    retry_after_ = seconds;
    return *this;
  }

  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  ErrorDetails details_;
  std::optional<int64_t> retry_after_;
};

// Factories for the common cases.
Status BadRequest(std::string message);
Status NotFound(std::string message);
Status Internal(std::string message);
Status Unavailable(std::string message);
Status Cancelled(std::string message);
// A single validation error; `message` of the Status summarises it.
Status ValidationFailed(std::vector<std::string> loc, std::string msg, std::string type);

template <typename T>
class StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

#define DNASERVE_RETURN_IF_ERROR(expr)        \
  do {                                        \
    ::dnaserve::Status _status = (expr);      \
    if (!_status.ok()) return _status;        \
  } while (0)

}  // namespace dnaserve
