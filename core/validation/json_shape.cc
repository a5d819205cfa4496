#include "core/validation/json_shape.h"

#include <string>

namespace dnaserve::core {

Status CheckJsonShape(std::string_view text, const JsonShapeLimits& limits) {
  size_t depth = 0;
  size_t values = 0;  // commas and openings outside strings: at least elements + members - 1
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
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
