#include "proto/status_codec.h"

#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve {
namespace {

namespace pb = dnaserve::worker::v1;

grpc::StatusCode GrpcCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return grpc::StatusCode::OK;
    case ErrorCode::kBadRequest: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kValidationFailed: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kUnsupportedFormat: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kUnauthorized: return grpc::StatusCode::UNAUTHENTICATED;
    case ErrorCode::kForbidden: return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kModelNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kJobExpired: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kConflict: return grpc::StatusCode::ABORTED;
    case ErrorCode::kPayloadTooLarge: return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorCode::kSyncTooLarge: return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorCode::kTaskNotSupportedByModel: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kTooManyRequests: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kInternal: return grpc::StatusCode::INTERNAL;
    case ErrorCode::kModelLoading: return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kServiceUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kCancelled: return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::INTERNAL;
}

}  // namespace

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  pb::WorkerError error;
  error.set_code(std::string(ErrorCodeName(status.code())));
  if (const auto* cap = std::get_if<RecordCapDetails>(&status.details())) {
    auto* out = error.mutable_record_cap();
    out->set_record_count(cap->record_count);
    out->set_maximum_records(cap->maximum_records);
    out->set_threshold(cap->threshold);
  }
  if (status.retry_after_seconds()) error.set_retry_after_seconds(*status.retry_after_seconds());
  return grpc::Status(GrpcCodeFor(status.code()), status.message(), error.SerializeAsString());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  pb::WorkerError error;
  if (!status.error_details().empty() && error.ParseFromString(status.error_details()) &&
      !error.code().empty()) {
    ErrorDetails details;
    if (error.has_record_cap()) {
      RecordCapDetails cap;
      cap.record_count = error.record_cap().record_count();
      cap.maximum_records = error.record_cap().maximum_records();
      cap.threshold = error.record_cap().threshold();
      details = cap;
    }
    Status out(ErrorCodeFromName(error.code()), status.error_message(), std::move(details));
    if (error.retry_after_seconds() > 0) out.set_retry_after_seconds(error.retry_after_seconds());
    return out;
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable("the inference worker is unavailable; retry shortly");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Unavailable("the inference worker did not answer in time");
    case grpc::StatusCode::CANCELLED:
      return Unavailable("the inference call was cancelled");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status(ErrorCode::kServiceUnavailable, "the inference worker is overloaded")
          .set_retry_after_seconds(1);
    default:
      return Internal("inference worker error");
  }
}

}  // namespace dnaserve
