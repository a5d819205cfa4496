#include "common/ids.h"

#include <uuid/uuid.h>

#include <cctype>

namespace dnaserve {

std::string NewUuidV4() {
  uuid_t raw;
  uuid_generate_random(raw);
  char text[37];
  uuid_unparse_lower(raw, text);
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
