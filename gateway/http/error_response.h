// Status -> HTTP: the one place where an ErrorCode becomes an HTTP status code and the
// contract's error envelope {error: {code, message, request_id, details?}}.
#pragma once

#include <string>

#include "common/status.h"
#include "gateway/http/http_types.h"

namespace dnaserve::gateway {

int HttpStatusFor(ErrorCode code);

// What a 500 internal_error says; the status's own message is logged with the request id.
inline constexpr const char* kInternalErrorMessage =
    "internal server error; quote the request_id when you report it";

// The envelope body alone (for storing a failed job's response).
std::string ErrorEnvelopeJson(const Status& status, const std::string& request_id);

// Full response: status code, envelope, Retry-After when the status carries one.
HttpResponse ErrorResponse(const Status& status, const std::string& request_id);

}  // namespace dnaserve::gateway
