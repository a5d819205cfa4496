// Limits on the shape of a JSON text, checked in one pass over its bytes before a parser builds
// anything: how deep it nests and how many values it holds.
//
// Why: the request schemas are at most three levels deep with a few dozen values, but a body of
// the allowed 16 MiB made of '[' or of tiny array elements makes RapidJSON's DOM (and its
// iterative parser's stack) grow to hundreds of MB before the schema can refuse it: measured
// 450 MB of gateway memory for 16 MiB of '['. With these limits the parser never sees such a
// body; what is left is proportional to the body's own size.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace dnaserve::core {

struct JsonShapeLimits {
  size_t max_depth = 32;       // nested objects and arrays
  size_t max_values = 100'000;  // array elements and object members, counted by their separators
};

// ok, or bad_request naming the limit. Does not validate the JSON itself (the parser does).
Status CheckJsonShape(std::string_view text, const JsonShapeLimits& limits = {});

}  // namespace dnaserve::core
