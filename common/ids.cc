#include "common/ids.h"

#include <openssl/rand.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace dnaserve {

namespace {

// CSPRNG output drawn 4 KiB at a time per thread: one RAND_bytes call per 256 ids instead of
// one per id (each call takes OpenSSL's provider locks). The bytes are as unpredictable as
// RAND_bytes makes them; each is handed out once.
void RandomBytes(uint8_t* out, size_t n) {
  struct Pool {
    uint8_t bytes[4096];
    size_t used = sizeof(bytes);
  };
  thread_local Pool pool;
  if (pool.used + n > sizeof(pool.bytes)) {
    if (RAND_bytes(pool.bytes, sizeof(pool.bytes)) != 1) {
      // Only when the DRBG cannot be seeded at all; ids that might repeat must not be made.
      std::abort();
    }
    pool.used = 0;
  }
  std::memcpy(out, pool.bytes + pool.used, n);
  std::memset(pool.bytes + pool.used, 0, n);
  pool.used += n;
}

}  // namespace

std::string NewUuidV4() {
  uint8_t raw[16];
  RandomBytes(raw, sizeof(raw));
  raw[6] = static_cast<uint8_t>((raw[6] & 0x0f) | 0x40);  // version 4
  raw[8] = static_cast<uint8_t>((raw[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(36, '-');
  size_t at = 0;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++at;  // the dashes
    text[at++] = kHex[raw[i] >> 4];
    text[at++] = kHex[raw[i] & 0x0f];
  }
  return text;
}

std::string NewHexId32() {
  std::string id = NewUuidV4();
  std::string hex;
  hex.reserve(32);
  for (char c : id) {
    if (c != '-') hex.push_back(c);
  }
  return hex;
}

bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

}  // namespace dnaserve
