#include "common/status.h"

#include <array>

namespace dnaserve {
namespace {

struct CodeName {
  ErrorCode code;
  std::string_view name;
};

constexpr std::array<CodeName, 18> kCodeNames = {{
    {ErrorCode::kOk, "ok"},
    {ErrorCode::kBadRequest, "bad_request"},
    {ErrorCode::kUnauthorized, "unauthorized"},
    {ErrorCode::kForbidden, "forbidden"},
    {ErrorCode::kNotFound, "not_found"},
    {ErrorCode::kModelNotFound, "model_not_found"},
    {ErrorCode::kConflict, "conflict"},
    {ErrorCode::kJobExpired, "job_expired"},
    {ErrorCode::kPayloadTooLarge, "payload_too_large"},
    {ErrorCode::kSyncTooLarge, "sync_too_large"},
    {ErrorCode::kUnsupportedFormat, "unsupported_format"},
    {ErrorCode::kValidationFailed, "validation_failed"},
    {ErrorCode::kTaskNotSupportedByModel, "task_not_supported_by_model"},
    {ErrorCode::kTooManyRequests, "too_many_requests"},
    {ErrorCode::kInternal, "internal_error"},
    {ErrorCode::kModelLoading, "model_loading"},
    {ErrorCode::kServiceUnavailable, "service_unavailable"},
    {ErrorCode::kCancelled, "cancelled"},
}};

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& entry : kCodeNames) {
    if (entry.code == code) return entry.name;
  }
  return "internal_error";
}

bool IsServerSide(ErrorCode code) {
  return code == ErrorCode::kInternal || code == ErrorCode::kModelLoading ||
         code == ErrorCode::kServiceUnavailable || code == ErrorCode::kCancelled;
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (const auto& entry : kCodeNames) {
    if (entry.name == name) return entry.code;
  }
  return ErrorCode::kInternal;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(code_)) + ": " + message_;
}

Status BadRequest(std::string message) { return Status(ErrorCode::kBadRequest, std::move(message)); }
Status NotFound(std::string message) { return Status(ErrorCode::kNotFound, std::move(message)); }
Status Internal(std::string message) { return Status(ErrorCode::kInternal, std::move(message)); }
Status Unavailable(std::string message) {
  return Status(ErrorCode::kServiceUnavailable, std::move(message));
}
Status Cancelled(std::string message) { return Status(ErrorCode::kCancelled, std::move(message)); }

Status ValidationFailed(std::vector<std::string> loc, std::string msg, std::string type) {
  std::string summary = msg;
  ValidationDetails details;
  details.errors.push_back(FieldError{std::move(loc), std::move(msg), std::move(type)});
  return Status(ErrorCode::kValidationFailed, std::move(summary), std::move(details));
}

}  // namespace dnaserve
