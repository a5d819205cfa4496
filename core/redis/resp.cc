#include "core/redis/resp.h"

#include <charconv>

namespace dnaserve::core {
namespace {

void AppendHeader(char marker, size_t number, std::string* out) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), number).ptr;
  out->push_back(marker);
  out->append(digits, end);
  out->append("\r\n", 2);
}

}  // namespace

void AppendRespCommand(const std::vector<std::string>& args, std::string* out) {
  size_t size = 16;
  for (const auto& arg : args) size += arg.size() + 24;
  out->reserve(out->size() + size);
  AppendHeader('*', args.size(), out);
  for (const auto& arg : args) {
    AppendHeader('$', arg.size(), out);
    out->append(arg);
    out->append("\r\n", 2);
  }
}

}  // namespace dnaserve::core
