#include "core/render/render_helpers.h"

namespace dnaserve::core {

std::map<std::string_view, std::string_view> Sorted(
    const google::protobuf::Map<std::string, std::string>& map) {
  std::map<std::string_view, std::string_view> sorted;
  for (const auto& [key, value] : map) sorted.emplace(key, value);
  return sorted;
}

void WriteStringObject(JsonWriter& w, const google::protobuf::Map<std::string, std::string>& map) {
  w.StartObject();
  for (const auto& [key, value] : Sorted(map)) w.Field(key, value);
  w.EndObject();
}

void WriteSpan(JsonWriter& w, int64_t start, int64_t end) {
  w.StartArray();
  w.Int(start);
  w.Int(end);
  w.EndArray();
}

}  // namespace dnaserve::core
