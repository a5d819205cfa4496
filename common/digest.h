// Message digests as lower-case hex (OpenSSL's EVP, used only in digest.cc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dnaserve {

enum class DigestAlgorithm { kMd5, kSha256 };

// Hex digest of `data`; empty only if OpenSSL fails (never equal to a real digest).
std::string HexDigest(DigestAlgorithm algorithm, std::string_view data);
// Lower-case hex of raw bytes.
std::string ToHex(const unsigned char* bytes, size_t size);

}  // namespace dnaserve
