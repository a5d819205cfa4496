// Whole-file reads and writes for tests (logs, fixtures, outputs).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace dnaserve::testing {

// The file's bytes; "" when it is missing or unreadable.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Replaces the file's contents with `data`.
inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

}  // namespace dnaserve::testing
