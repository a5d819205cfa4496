// Status -> HTTP: the one place where an ErrorCode becomes an HTTP status code and the
// contract's error envelope {error: {code, message, request_id, details?}}.
#pragma once

#include <string>

#include "common/status.h"
#include "core/jobs/job_store.h"
#include "gateway/http/http_types.h"

namespace dnaserve::gateway {

int HttpStatusFor(ErrorCode code);

// The HTTP status of a finished job's stored result: its code's, or (a record written before
// records stored codes) the status stored with it.
int HttpStatusFor(const core::JobRecord& record);

// Full response: status code, envelope, Retry-After when the status carries one.
HttpResponse ErrorResponse(const Status& status, const std::string& request_id);

}  // namespace dnaserve::gateway
