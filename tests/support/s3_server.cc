#include "tests/support/s3_server.h"

#include <algorithm>
#include <filesystem>

#include <curl/curl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/digest.h"

namespace dnaserve::testing {
namespace {

std::string FindNode() {
  for (const char* p : {"/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

size_t Discard(char*, size_t size, size_t count, void*) { return size * count; }

}  // namespace

std::optional<S3Server> S3Server::Start(const std::vector<std::string>& buckets, std::string* why,
                                        const std::vector<KeyPair>& more_key_pairs) {
  std::string node = FindNode();
  std::string dir = SourceDir() + "/tests/support/s3-server";
  if (node.empty()) {
    *why = "node is not installed (scripts/install-deps installs it)";
    return std::nullopt;
  }
  if (access((dir + "/node_modules/@20minutes/s3rver/package.json").c_str(), R_OK) != 0) {
    *why =
        "the S3 test server package is not installed: run scripts/install-deps (npm ci in "
        "tests/support/s3-server)";
    return std::nullopt;
  }
  S3Server server;
  server.port_ = FreePort();
  server.data_dir_ = MakeTempDir("dnaserve-s3");
  std::vector<std::string> argv = {
      node,           dir + "/serve.js", "--port",       std::to_string(server.port_),
      "--directory",  server.data_dir_,  "--access-key", kAccessKey,
      "--secret-key", kSecretKey};
  for (const auto& pair : more_key_pairs) {
    argv.insert(argv.end(), {"--access-key", pair.access_key, "--secret-key", pair.secret_key});
  }
  for (const auto& b : buckets) {
    argv.push_back("--bucket");
    argv.push_back(b);
  }
  std::string log = server.log_path();
  RemoveAtExit(log);
  if (!server.process_.Start(argv, {}, log) ||
      !WaitForPort(server.port_, std::chrono::seconds(30))) {
    *why = "the S3 test server did not start (see " + log + ")";
    return std::nullopt;
  }
  return server;
}

long S3Server::Signed(const std::string& method, const std::string& path,
                      const std::string& body) const {
  CURL* curl = curl_easy_init();
  if (!curl) return 0;
  std::string url = endpoint() + path;
  std::string userpwd = std::string(kAccessKey) + ":" + kSecretKey;
  std::string provider = std::string("aws:amz:") + kRegion + ":s3";
  curl_slist* headers = curl_slist_append(
      nullptr, ("x-amz-content-sha256: " + HexDigest(DigestAlgorithm::kSha256, body)).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());
  curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return status;
}

long S3Server::CreateBucket(const std::string& bucket) const {
  return Signed("PUT", "/" + bucket, "");
}

long S3Server::PutObject(const std::string& bucket, const std::string& key,
                         const std::string& body) const {
  // Test keys are plain ([A-Za-z0-9._/-]), so the path needs no encoding.
  return Signed("PUT", "/" + bucket + "/" + key, body);
}

std::optional<std::string> S3Server::StoredObject(const std::string& bucket,
                                                  const std::string& key) const {
  // s3rver's filesystem store keeps an object's bytes in <dir>/<bucket>/<key>._S3rver_object.
  std::ifstream in(data_dir_ + "/" + bucket + "/" + key + "._S3rver_object", std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> S3Server::StoredKeys(const std::string& bucket,
                                             const std::string& prefix) const {
  static const std::string kSuffix = "._S3rver_object";
  const std::filesystem::path root = data_dir_ + "/" + bucket;
  std::vector<std::string> keys;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().lexically_relative(root).string();
    if (name.size() <= kSuffix.size() ||
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    const std::string key = name.substr(0, name.size() - kSuffix.size());
    if (key.rfind(prefix, 0) == 0) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> S3Server::RequestLog() const {
  std::ifstream in(log_path());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("request ", 0) == 0) lines.push_back(line);
  }
  return lines;
}

}  // namespace dnaserve::testing
