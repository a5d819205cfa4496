// The contract's error envelope, {error: {code, message, request_id, details?}}: what a failed
// request or job answers with, whatever carries it. Which HTTP status goes with it is the
// gateway's business (gateway/http/error_response.h), not the core's.
#pragma once

#include <string>

#include "common/status.h"

namespace dnaserve::core {

// What a 500 internal_error says; the status's own message is logged with the request id.
inline constexpr const char* kInternalErrorMessage =
    "internal server error; quote the request_id when you report it";

std::string ErrorEnvelopeJson(const Status& status, const std::string& request_id);

}  // namespace dnaserve::core
