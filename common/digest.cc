#include "common/digest.h"

#include <openssl/evp.h>

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

}  // namespace dnaserve
