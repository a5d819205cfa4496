// Small JSON pieces the gateway's renderers share. Internal to gateway/render/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <google/protobuf/map.h>

#include "core/render/json_writer.h"

namespace dnaserve::core {

// Protobuf map iteration order is unspecified; responses must be byte-stable for the same
// result (a completed poll returns exactly what the sync call would have), so keys are sorted.
// The entries are views into `map`, which must outlive the result: a copy would hold every
// text track (a chromatin BED of several MB) a second time while the body is rendered, at the
// gateway's peak memory.
std::map<std::string_view, std::string_view> Sorted(
    const google::protobuf::Map<std::string, std::string>& map);

void WriteStringObject(JsonWriter& w, const google::protobuf::Map<std::string, std::string>& map);

// [start, end] as a two-element array.
void WriteSpan(JsonWriter& w, int64_t start, int64_t end);

}  // namespace dnaserve::core
