// A runner's answer to an admission it made for a waiting gateway (the variant workflow's
// checks against the object store), as it travels through Redis (admission:<job_id>, see
// job_queue.h): accepted with the job to poll (this one, or the standing job of the same
// case), or refused with the error's code and envelope.
//
// Format: "<code> <job_id>\n<body>", where <code> is "accepted" or the contract's error code
// name. The release before wrote an HTTP status in its place ("202", "404", ...): still read,
// so a gateway and a runner one release apart understand each other.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace dnaserve::core {

struct AdmissionVerdict {
  bool accepted = false;
  std::string job_id;
  ErrorCode code = ErrorCode::kOk;  // refused: why
  std::optional<int> legacy_http_status;  // a verdict of the release before
  std::string body;                       // refused: the error envelope
};

std::string AcceptedVerdict(const std::string& job_id);
std::string RefusedVerdict(const std::string& job_id, const Status& status,
                           const std::string& request_id);
// An unreadable verdict is a refusal with an internal_error envelope.
AdmissionVerdict ParseAdmissionVerdict(const std::string& verdict);

}  // namespace dnaserve::core
