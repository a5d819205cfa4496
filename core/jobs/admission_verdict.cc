#include "core/jobs/admission_verdict.h"

#include <cctype>
#include <cstdlib>

#include "core/render/error_envelope.h"

namespace dnaserve::core {
namespace {

constexpr const char* kAccepted = "accepted";

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!std::isdigit(c)) return false;
  }
  return true;
}

}  // namespace

std::string AcceptedVerdict(const std::string& job_id) {
  return std::string(kAccepted) + " " + job_id + "\n";
}

std::string RefusedVerdict(const std::string& job_id, const Status& status,
                           const std::string& request_id) {
  return std::string(ErrorCodeName(status.code())) + " " + job_id + "\n" +
         ErrorEnvelopeJson(status, request_id);
}

AdmissionVerdict ParseAdmissionVerdict(const std::string& verdict) {
  AdmissionVerdict v;
  const size_t space = verdict.find(' ');
  const size_t newline = verdict.find('\n');
  if (space == std::string::npos || newline == std::string::npos || newline < space) {
    const Status unreadable = Internal("unreadable admission verdict");
    v.code = unreadable.code();
    v.body = ErrorEnvelopeJson(unreadable, "");
    return v;
  }
  const std::string head = verdict.substr(0, space);
  v.job_id = verdict.substr(space + 1, newline - space - 1);
  v.body = verdict.substr(newline + 1);
  if (AllDigits(head)) {  // the release before: an HTTP status
    const int status = std::atoi(head.c_str());
    v.accepted = status == 202;
    if (!v.accepted) {
      v.legacy_http_status = status;
      v.code = ErrorCode::kInternal;
    }
    return v;
  }
  v.accepted = head == kAccepted;
  if (!v.accepted) v.code = ErrorCodeFromName(head);
  return v;
}

}  // namespace dnaserve::core
