// API keys. The keys file holds only SHA-256 digests of keys, never keys in clear:
//   {"keys": [{"key_sha256": "<hex>", "client_id": "acme", "enabled": true,
//              "rate_per_minute": 60, "max_concurrency": 2,
//              "s3_read": ["s3://acme-data/"], "s3_write": ["s3://acme-data/results/"]}]}
// s3_read / s3_write (optional, default none) are the object-storage prefixes the client may
// read and write (common/s3_grants.h); a client without grants can use no object.
// Lookup hashes the presented key and compares digests in constant time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/s3_grants.h"
#include "common/status.h"
#include "core/quota/principal.h"

namespace dnaserve::gateway {

using core::Principal;

// Every key starts with this vendor prefix.
inline constexpr std::string_view kKeyPrefix = "dns_";

struct AuthResult {
  Status status;  // ok, 401 unauthorized or 403 forbidden
  // For 401: the RFC 6750 error attribute, "invalid_request" (missing/malformed header) or
  // "invalid_token" (unknown key). Empty otherwise.
  std::string bearer_error;
  Principal principal;  // valid when status.ok()
};

struct KeyEntry {
  std::string key_sha256;  // 64 lower-case hex chars
  Principal principal;
  bool enabled = true;
};

class KeyStore {
 public:
  // Parses the keys file; a malformed file is an error naming the problem.
  static StatusOr<KeyStore> LoadFile(const std::string& path);
  static StatusOr<KeyStore> FromJson(std::string_view json);
  explicit KeyStore(std::vector<KeyEntry> entries);

  // `authorization` is the raw Authorization header value, or nullopt when absent.
  AuthResult Authenticate(const std::optional<std::string>& authorization) const;

  size_t size() const { return entries_.size(); }

 private:
  std::vector<KeyEntry> entries_;
};

// The 401 for a request carrying more than one Authorization header: which one would count is
// ambiguous (a proxy and the gateway might each pick another), so neither does (RFC 6750 3.1:
// invalid_request).
AuthResult RepeatedAuthorization();

// Hex SHA-256 of `text` (OpenSSL).
std::string Sha256Hex(std::string_view text);
// A new random key "dns_" + 43 base62 chars from the OpenSSL CSPRNG.
std::string GenerateApiKey();

}  // namespace dnaserve::gateway
