// Per-client object-store credentials (DNASERVE_S3_CLIENT_CREDENTIALS_FILE): an operator may give
// a client its own access key, so the store itself (its bucket policies) keeps that client's
// objects apart, not only the service's grants. The file maps client ids to credentials:
//   {"acme": {"access_key_id": "AKIA...", "secret_access_key": "...", "session_token": "..."}}
// (session_token optional). Clients not in the file use the service's own credentials.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dnaserve::s3 {

struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: long-term credentials
};

// bad_request naming the entry and the rule broken; no message carries a secret.
StatusOr<std::map<std::string, S3Credentials>> ParseS3ClientCredentials(std::string_view json);
// Reads and parses the file. It holds secrets: `*too_open` is set when group or others may read
// it (chmod 600 it; the runner warns at start-up).
StatusOr<std::map<std::string, S3Credentials>> LoadS3ClientCredentials(const std::string& path,
                                                                      bool* too_open);

}  // namespace dnaserve::s3
