// Keys files for tests: one entry per key in the format gateway/auth/key_store.h reads (the key
// stored only as its SHA-256), so a test names its tenants instead of writing JSON by hand.
#pragma once

#include <string>
#include <vector>

namespace dnaserve::testing {

// Object-storage grants of an entry (`s3://bucket/prefix/` strings, written as given: a test may
// write malformed ones). None by default.
struct S3KeyGrants {
  std::vector<std::string> read;
  std::vector<std::string> write;
};

// One entry of a keys file.
std::string KeyEntry(const std::string& key, const std::string& client, bool enabled, int rate,
                     int concurrency, const S3KeyGrants& grants = {});

// A whole keys file: {"keys": [entries...]}.
std::string KeysFile(const std::vector<std::string>& entries);

}  // namespace dnaserve::testing
