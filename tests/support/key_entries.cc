#include "tests/support/key_entries.h"

#include "common/digest.h"

namespace dnaserve::testing {

std::string KeyEntry(const std::string& key, const std::string& client, bool enabled, int rate,
                     int concurrency, const S3KeyGrants& grants) {
  auto list = [](const char* field, const std::vector<std::string>& items) {
    if (items.empty()) return std::string();
    std::string out = std::string(", \"") + field + "\": [";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", \"" : "\"") + items[i] + "\"";
    return out + "]";
  };
  return "{\"key_sha256\": \"" + HexDigest(DigestAlgorithm::kSha256, key) +
         "\", \"client_id\": \"" + client + "\", \"enabled\": " + (enabled ? "true" : "false") +
         ", \"rate_per_minute\": " + std::to_string(rate) +
         ", \"max_concurrency\": " + std::to_string(concurrency) + list("s3_read", grants.read) +
         list("s3_write", grants.write) + "}";
}

std::string KeysFile(const std::vector<std::string>& entries) {
  std::string out = "{\"keys\": [";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
  return out + "]}";
}

}  // namespace dnaserve::testing
