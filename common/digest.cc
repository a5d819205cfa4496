#include "common/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

namespace dnaserve {

std::string ToHex(const unsigned char* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0xf]);
  }
  return out;
}

std::string HexDigest(DigestAlgorithm algorithm, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const EVP_MD* md = algorithm == DigestAlgorithm::kMd5 ? EVP_md5() : EVP_sha256();
  if (EVP_Digest(data.data(), data.size(), digest, &len, md, nullptr) != 1) return std::string();
  return ToHex(digest, len);
}

void IncrementalDigest::FreeContext::operator()(evp_md_ctx_st* context) const {
  EVP_MD_CTX_free(context);
}

IncrementalDigest::IncrementalDigest(DigestAlgorithm algorithm) : context_(EVP_MD_CTX_new()) {
  const EVP_MD* md = algorithm == DigestAlgorithm::kMd5 ? EVP_md5() : EVP_sha256();
  ok_ = context_ != nullptr && EVP_DigestInit_ex(context_.get(), md, nullptr) == 1;
}

IncrementalDigest::~IncrementalDigest() = default;

void IncrementalDigest::Update(std::string_view data) {
  if (ok_) ok_ = EVP_DigestUpdate(context_.get(), data.data(), data.size()) == 1;
}

bool IncrementalDigest::UpdateFromFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  std::vector<char> chunk(1 << 20);
  bool read_ok = true;
  while (true) {
    const size_t got = std::fread(chunk.data(), 1, chunk.size(), file);
    if (got > 0) Update(std::string_view(chunk.data(), got));
    if (got < chunk.size()) {
      read_ok = std::ferror(file) == 0;
      break;
    }
  }
  std::fclose(file);
  return read_ok;
}

std::string IncrementalDigest::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ok_ || EVP_DigestFinal_ex(context_.get(), digest, &len) != 1) return std::string();
  ok_ = false;  // a second call must not return a digest of nothing
  return ToHex(digest, len);
}

}  // namespace dnaserve
