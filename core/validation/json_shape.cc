#include "core/validation/json_shape.h"

#include <cstring>
#include <string>

namespace dnaserve::core {

Status CheckJsonShape(std::string_view text, const JsonShapeLimits& limits) {
  size_t depth = 0;
  size_t values = 0;  // commas and openings outside strings: at least elements + members - 1
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      // Jump to the string's closing quote with memchr rather than walking it byte by byte:
      // strings (the sequence) are nearly all of a predict body. A quote closes the string
      // unless an odd run of backslashes precedes it. An unterminated string ends the scan;
      // the parser refuses it.
      size_t close = i;
      for (;;) {
        const void* found = std::memchr(text.data() + close + 1, '"', text.size() - close - 1);
        if (found == nullptr) return Status::Ok();
        close = static_cast<size_t>(static_cast<const char*>(found) - text.data());
        size_t backslashes = 0;
        while (close - backslashes > i + 1 && text[close - backslashes - 1] == '\\') ++backslashes;
        if (backslashes % 2 == 0) break;
      }
      i = close;
      continue;
    }
    switch (c) {
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return BadRequest("request body nests objects and arrays deeper than " +
                            std::to_string(limits.max_depth) + " levels");
        }
        ++values;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
        ++values;
        break;
      default:
        continue;
    }
    if (values > limits.max_values) {
      return BadRequest("request body holds more than " + std::to_string(limits.max_values) +
                        " JSON values");
    }
  }
  return Status::Ok();
}

}  // namespace dnaserve::core
