// Message digests as lower-case hex (OpenSSL's EVP, used only in digest.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace dnaserve {

enum class DigestAlgorithm { kMd5, kSha256 };

// Hex digest of `data`; empty only if OpenSSL fails (never equal to a real digest).
std::string HexDigest(DigestAlgorithm algorithm, std::string_view data);
// A digest fed in pieces, for inputs too large to hold twice in memory (a model's weights can be
// gigabytes: hashing them after reading the whole file doubled a worker's peak at load).
class IncrementalDigest {
 public:
  explicit IncrementalDigest(DigestAlgorithm algorithm);
  ~IncrementalDigest();
  IncrementalDigest(const IncrementalDigest&) = delete;
  IncrementalDigest& operator=(const IncrementalDigest&) = delete;

  void Update(std::string_view data);
  // Feeds the file's bytes in fixed-size chunks; false if it cannot be opened or read.
  bool UpdateFromFile(const std::string& path);
  // The hex digest of everything fed; empty if OpenSSL failed at any step. Call once.
  std::string FinishHex();

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> context_;
  bool ok_ = true;
};

// Lower-case hex of raw bytes.
std::string ToHex(const unsigned char* bytes, size_t size);

}  // namespace dnaserve
