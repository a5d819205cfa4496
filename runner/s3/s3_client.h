// A small S3 client for the variant workflow: HeadObject, GetObject into a file, PutObject from a
// file. Requests are signed by libcurl's built-in AWS Signature Version 4 (CURLOPT_AWS_SIGV4);
// nothing here computes a signature. libcurl is used only in s3_client.cc.
//
// The endpoint is fixed by the operator: a request names a bucket and a key, never a host, so no
// caller can make the service talk to another server (the bucket must be a valid S3 bucket name,
// redirects are not followed, only http/https are allowed, no proxy is taken from the
// environment, and the key's path is sent as is, never dot-segment-normalised).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runner/s3/s3_uri.h"

namespace dnaserve::s3 {

struct S3Config {
  // "https://s3.eu-west-1.amazonaws.com" or "http://127.0.0.1:9000": scheme, host and optional
  // port; no path, query or user info.
  std::string endpoint;
  std::string region = "us-east-1";
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // optional: temporary credentials (x-amz-security-token)
  // true: <endpoint>/<bucket>/<key>; false (virtual-hosted): <bucket>.<endpoint host>/<key>.
  bool path_style = true;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};  // a whole HEAD
  std::chrono::seconds transfer_timeout{3600};       // a whole GET or PUT
  // A GET or PUT moving less than 1 byte/s for this long is abandoned.
  std::chrono::seconds stall_timeout{60};
};

struct S3ObjectInfo {
  int64_t size = 0;  // whole object's size in bytes
  std::string etag;  // as the store sends it, quotes included
};

struct S3TransferControl {
  // Raised by the caller to abandon the transfer (unavailable "... cancelled").
  const std::atomic<bool>* cancelled = nullptr;
  // Bytes moved so far and the total (-1 while unknown); called often, keep it cheap.
  std::function<void(int64_t done, int64_t total)> on_progress;
};

struct S3GetOptions {
  // Non-empty: sent as If-Match, so an object replaced since its HEAD fails (bad_request) rather
  // than mixing versions.
  std::string if_match;
  // >= 0: refuse (bad_request, partial file removed) once the object passes this many bytes.
  int64_t max_bytes = -1;
  // >= 1: fetch only the first `prefix_bytes` bytes (a header sniff); an empty object gives an
  // empty file. The returned size is still the whole object's.
  int64_t prefix_bytes = -1;
  S3TransferControl control;
};

struct S3PutOptions {
  std::string content_type = "application/octet-stream";
  S3TransferControl control;
};

class S3Client {
 public:
  // Checks the configuration (endpoint form, region and credentials present); makes no request.
  static StatusOr<std::unique_ptr<S3Client>> Create(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Size and ETag; a missing or unreadable object is bad_request.
  StatusOr<S3ObjectInfo> HeadObject(const S3ObjectUri& object) const;
  // Streams the object into `path` (created or truncated). On failure the file is removed.
  StatusOr<S3ObjectInfo> GetObject(const S3ObjectUri& object, const std::string& path,
                                   const S3GetOptions& options = {}) const;
  // Uploads the whole file in one PUT with its SHA-256 (signed) and MD5 (checked by the store).
  // Returns the new object's size and ETag.
  StatusOr<S3ObjectInfo> PutObject(const S3ObjectUri& object, const std::string& path,
                                   const S3PutOptions& options = {}) const;

  // The URL a request for `object` goes to (exposed for tests).
  std::string ObjectUrl(const S3ObjectUri& object) const;

 private:
  struct Endpoint {
    std::string scheme;
    std::string host;  // IPv6 literals keep their brackets
    std::string port;  // empty: the scheme's default
  };
  S3Client(S3Config config, Endpoint endpoint);

  S3Config config_;
  Endpoint endpoint_;
  std::string sigv4_provider_;  // "aws:amz:<region>:s3"
};

}  // namespace dnaserve::s3
