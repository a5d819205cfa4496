#include "common/file_text.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dnaserve {

std::optional<std::string> ReadFileText(const std::string& path, std::string* reason) {
  auto fail = [&](int error) -> std::optional<std::string> {
    if (reason != nullptr) *reason = std::strerror(error);
    return std::nullopt;
  };
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return fail(errno);
  // An ifstream opens a directory and then reads nothing: say so here.
  if (S_ISDIR(info.st_mode)) return fail(EISDIR);
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errno != 0 ? errno : EIO);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(EIO);
  return text.str();
}

StatusOr<std::string> ReadSecretFile(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return BadRequest("cannot read the secret file " + path);
  std::string secret = std::move(*text);
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  if (secret.empty()) return BadRequest("the secret file " + path + " is empty");
  return secret;
}

}  // namespace dnaserve
