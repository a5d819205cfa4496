#include "runner/s3/s3_errors.h"

#include <array>

#include "common/s3_grants.h"

namespace dnaserve::s3 {
namespace {

// Codes by which the store refuses the service itself rather than the caller's object: only
// the operator can fix these.
constexpr std::array<std::string_view, 7> kCredentialCodes = {"SignatureDoesNotMatch",
                                                              "InvalidAccessKeyId",
                                                              "InvalidToken",
                                                              "ExpiredToken",
                                                              "RequestTimeTooSkewed",
                                                              "InvalidSecurity",
                                                              "AuthorizationHeaderMalformed"};

bool IsCredentialCode(std::string_view code) {
  for (auto c : kCredentialCodes) {
    if (c == code) return true;
  }
  return false;
}

std::string With(std::string_view code) {
  return code.empty() ? std::string() : " (" + std::string(code) + ")";
}

Status RetryLater(std::string message) {
  Status status = Unavailable(std::move(message));
  status.set_retry_after_seconds(5);
  return status;
}

}  // namespace

Status S3HttpError(S3Operation op, const S3ObjectUri& object, long http_status,
                   std::string_view s3_code) {
  const std::string uri = object.ToString();
  if (IsCredentialCode(s3_code)) {
    return Internal("the object store refused the service's own credentials" + With(s3_code) +
                    "; the operator must check the S3 configuration");
  }
  if (http_status == 301 || http_status == 307 || s3_code == "PermanentRedirect" ||
      s3_code == "IllegalLocationConstraintException") {
    return BadRequest("bucket '" + object.bucket +
                      "' is not served by the service's object-store endpoint and region" +
                      With(s3_code) + "; use a bucket in the region the service is configured for");
  }
  if (http_status == 412 || s3_code == "PreconditionFailed") {
    return BadRequest(uri +
                      " was replaced since the job was accepted (its ETag changed); resubmit to "
                      "process the new object");
  }
  if (http_status == 404 || http_status == 403 || s3_code == "NoSuchBucket" ||
      s3_code == "NoSuchKey" || s3_code == "AccessDenied") {
    // Missing, in a missing bucket or refused: one answer, the same a client gets for an object
    // outside its grants (common/s3_grants.h), so no answer tells existence apart. The precise
    // reason is for the operator's log (S3Client logs it).
    if (op == S3Operation::kPut) return S3PrefixUnwritable(S3ParentPrefix(uri));
    return S3ObjectUnreadable(uri);
  }
  if (http_status == 429 || http_status >= 500 || s3_code == "SlowDown" ||
      s3_code == "RequestTimeout" || s3_code == "OperationAborted" || s3_code == "BadDigest" ||
      s3_code == "IncompleteBody") {
    return RetryLater("the object store could not complete the request (HTTP " +
                      std::to_string(http_status) + With(s3_code) + "); try again later");
  }
  if (s3_code == "EntityTooLarge") {
    return BadRequest("the annotated copy of " + uri +
                      " is larger than the object store accepts in one upload");
  }
  return Internal("the object store rejected the service's request (HTTP " +
                  std::to_string(http_status) + With(s3_code) + ")");
}

Status S3TransportError(S3Operation op, const S3ObjectUri& object, S3TransportFailure failure,
                        std::string_view detail) {
  const std::string uri = object.ToString();
  switch (failure) {
    case S3TransportFailure::kUnreachable:
      return RetryLater("the object store could not be reached; try again later");
    case S3TransportFailure::kTimedOut:
      return RetryLater("the object store did not answer in time while transferring " + uri +
                        "; try again later");
    case S3TransportFailure::kBroken:
      return RetryLater("the connection to the object store broke while transferring " + uri +
                        "; try again later");
    case S3TransportFailure::kCancelled:
      return Unavailable("the transfer of " + uri + " was cancelled");
    case S3TransportFailure::kTooLarge:
      return BadRequest(uri + " is larger than the limit of " + std::string(detail));
    case S3TransportFailure::kLocalIo:
      return Internal(
          std::string(op == S3Operation::kGet ? "could not store " : "could not read ") +
          "the local copy of " + uri + ": " + std::string(detail));
    case S3TransportFailure::kTls:
      return Internal(
          "the TLS connection to the object store failed; the operator must check "
          "the endpoint's certificate");
    case S3TransportFailure::kOther:
      break;
  }
  return RetryLater("the transfer of " + uri + " failed (" + std::string(detail) +
                    "); try again later");
}

std::string S3ErrorCode(std::string_view xml_body) {
  constexpr std::string_view kOpen = "<Code>";
  constexpr std::string_view kClose = "</Code>";
  size_t start = xml_body.find(kOpen);
  if (start == std::string_view::npos) return "";
  start += kOpen.size();
  size_t end = xml_body.find(kClose, start);
  if (end == std::string_view::npos || end - start > 64) return "";
  return std::string(xml_body.substr(start, end - start));
}

}  // namespace dnaserve::s3
