#include "runner/vcf/bgzip_text.h"

#include <htslib/bgzf.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

namespace dnaserve::variant {

StatusOr<std::string> BgzipText(const std::string& text, const std::string& scratch_dir) {
  std::string path = (scratch_dir.empty() ? std::string("/tmp") : scratch_dir) +
                     "/dnaserve-bgzip-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) return Internal("cannot create a temporary file under " + scratch_dir);
  close(fd);
  path = name.data();
  BGZF* out = bgzf_open(path.c_str(), "w");
  if (out == nullptr) {
    std::remove(path.c_str());
    return Internal("htslib cannot open " + path + " for bgzip output");
  }
  const bool written = text.empty() || bgzf_write(out, text.data(), text.size()) ==
                                           static_cast<ssize_t>(text.size());
  const bool closed = bgzf_close(out) == 0;
  std::string bytes;
  if (written && closed) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::remove(path.c_str());
  if (!written || !closed) return Internal("htslib could not write the bgzip output");
  return bytes;
}

}  // namespace dnaserve::variant
