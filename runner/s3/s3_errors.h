// What an object-store answer means for the caller: the one place S3 HTTP statuses, S3 error
// codes and transport failures become a Status. Messages say what to do about it and never carry
// credentials, signatures or the endpoint's address.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "runner/s3/s3_uri.h"

namespace dnaserve::s3 {

enum class S3Operation { kHead, kGet, kPut };

// A finished HTTP exchange that was not a success. `s3_code` is the <Code> of the XML error
// body, empty when there was none (HEAD answers have no body).
Status S3HttpError(S3Operation op, const S3ObjectUri& object, long http_status,
                   std::string_view s3_code);

// Transport-level failures, by kind (the caller classifies libcurl's codes).
enum class S3TransportFailure {
  kUnreachable,  // resolve or connect failed
  kTimedOut,     // a connect, stall or whole-transfer timeout passed
  kBroken,       // the connection broke mid-transfer
  kCancelled,    // the caller's cancel flag was raised
  kTooLarge,     // the object passed the caller's size limit
  kLocalIo,      // the local file could not be read or written
  kTls,          // TLS handshake or certificate failure
  kOther,
};
Status S3TransportError(S3Operation op, const S3ObjectUri& object, S3TransportFailure failure,
                        std::string_view detail);

// The <Code> element of an S3 XML error body ("" when absent).
std::string S3ErrorCode(std::string_view xml_body);

}  // namespace dnaserve::s3
