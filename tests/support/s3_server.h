// A real S3-compatible server for tests: tests/support/s3-server/serve.js (@20minutes/s3rver,
// pinned by its package-lock.json and installed by scripts/install-deps) on a free loopback port,
// in a fresh data directory, stopped when the object goes away. It verifies SigV4 signatures
// against one key pair and refuses unsigned requests. Path-style only: for virtual-hosted
// requests s3rver puts the bucket into the SigV4 canonical URI, so it refuses the correct
// signatures libcurl makes (SignatureDoesNotMatch).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_env.h"

namespace dnaserve::testing {

class S3Server {
 public:
  static constexpr const char* kAccessKey = "AKIDDNASERVETEST";
  static constexpr const char* kSecretKey = "dnaserve/test+Secret";
  static constexpr const char* kRegion = "us-east-1";

  // A key pair the server accepts besides kAccessKey/kSecretKey (a client's own credentials).
  struct KeyPair {
    std::string access_key;
    std::string secret_key;
  };

  // Starts with the given buckets. Empty optional (and `why` says what is missing) when node or
  // the npm package is not installed, or the server did not come up.
  static std::optional<S3Server> Start(const std::vector<std::string>& buckets, std::string* why,
                                       const std::vector<KeyPair>& more_key_pairs = {});
  S3Server(S3Server&&) = default;
  S3Server& operator=(S3Server&&) = default;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Stop() { process_.Stop(); }

  // Signed requests made independently of the client under test (libcurl's SigV4 directly).
  // Each returns the HTTP status (0 on a transport failure).
  long CreateBucket(const std::string& bucket) const;
  long PutObject(const std::string& bucket, const std::string& key, const std::string& body) const;
  // The object's bytes as the server stored them on disk (nullopt when absent).
  std::optional<std::string> StoredObject(const std::string& bucket, const std::string& key) const;
  // Keys of the objects stored in `bucket` whose key starts with `prefix`, sorted.
  std::vector<std::string> StoredKeys(const std::string& bucket, const std::string& prefix) const;

  // The server's log (<data dir>.log): one line per request answered,
  //   "request <METHOD> <path as sent> <HTTP status> key=<signing access key id or ->".
  std::string log_path() const { return data_dir_ + ".log"; }
  // Its request lines so far, in order.
  std::vector<std::string> RequestLog() const;

 private:
  S3Server() = default;
  long Signed(const std::string& method, const std::string& path, const std::string& body) const;

  int port_ = 0;
  std::string data_dir_;
  ChildProcess process_;
};

}  // namespace dnaserve::testing
