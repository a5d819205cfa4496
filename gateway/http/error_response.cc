#include "gateway/http/error_response.h"

#include "common/log.h"
#include "core/render/error_envelope.h"

namespace dnaserve::gateway {
int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return 200;
    case ErrorCode::kBadRequest: return 400;
    case ErrorCode::kUnauthorized: return 401;
    case ErrorCode::kForbidden: return 403;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kModelNotFound: return 404;
    case ErrorCode::kConflict: return 409;
    case ErrorCode::kJobExpired: return 410;
    case ErrorCode::kPayloadTooLarge: return 413;
    case ErrorCode::kSyncTooLarge: return 413;
    case ErrorCode::kUnsupportedFormat: return 415;
    case ErrorCode::kValidationFailed: return 422;
    case ErrorCode::kTaskNotSupportedByModel: return 422;
    case ErrorCode::kTooManyRequests: return 429;
    case ErrorCode::kInternal: return 500;
    case ErrorCode::kModelLoading: return 503;
    case ErrorCode::kServiceUnavailable: return 503;
    case ErrorCode::kCancelled: return 503;
  }
  return 500;
}

int HttpStatusFor(const core::JobRecord& record) {
  if (record.legacy_http_status) return *record.legacy_http_status;
  return HttpStatusFor(record.code);
}

HttpResponse ErrorResponse(const Status& status, const std::string& request_id) {
  if (status.code() == ErrorCode::kInternal) {
    log::Error("internal_error", {{"request_id", request_id}, {"message", status.message()}});
  }
  HttpResponse response;
  response.status = HttpStatusFor(status.code());
  response.content_type = "application/json";
  response.body = core::ErrorEnvelopeJson(status, request_id);
  if (status.retry_after_seconds()) {
    response.SetHeader("Retry-After", std::to_string(*status.retry_after_seconds()));
  }
  return response;
}

}  // namespace dnaserve::gateway
