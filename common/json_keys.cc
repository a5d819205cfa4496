#include "common/json_keys.h"

#include <cstdio>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace dnaserve {
namespace {

std::string_view KeyOf(const rapidjson::Value::ConstMemberIterator& m) {
  return std::string_view(m->name.GetString(), m->name.GetStringLength());
}

// The first member of `object` whose key an earlier member already used, or MemberEnd().
rapidjson::Value::ConstMemberIterator FirstRepeat(const rapidjson::Value& object) {
  const auto begin = object.MemberBegin();
  const auto end = object.MemberEnd();
  // Request objects hold a handful of keys: compared pairwise, without allocating.
  constexpr rapidjson::SizeType kPairwiseUpTo = 16;
  if (object.MemberCount() <= kPairwiseUpTo) {
    for (auto m = begin; m != end; ++m) {
      for (auto earlier = begin; earlier != m; ++earlier) {
        if (KeyOf(earlier) == KeyOf(m)) return m;
      }
    }
    return end;
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(object.MemberCount());
  for (auto m = begin; m != end; ++m) {
    if (!seen.insert(KeyOf(m)).second) return m;
  }
  return end;
}

// A key as a message shows it: printable ASCII kept, every other byte escaped, long keys cut.
std::string Printable(std::string_view key) {
  constexpr size_t kShownBytes = 64;
  std::string out;
  for (size_t i = 0; i < key.size() && i < kShownBytes; ++i) {
    const auto u = static_cast<unsigned char>(key[i]);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(key[i]);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", u);
      out.append(escaped);
    }
  }
  if (key.size() > kShownBytes) out.append("...");
  return out;
}

}  // namespace

std::optional<std::vector<JsonPathStep>> FindRepeatedKey(const rapidjson::Value& root) {
  // Depth-first, in document order. Each entry is a value still to visit and the number of path
  // steps that lead to it; `path` holds the steps of the value being visited.
  struct Pending {
    const rapidjson::Value* value;
    size_t depth;
    JsonPathStep step;  // the last step to `value` (unused for the root)
  };
  std::vector<Pending> stack{{&root, 0, {}}};
  std::vector<JsonPathStep> path;
  while (!stack.empty()) {
    Pending next = std::move(stack.back());
    stack.pop_back();
    path.resize(next.depth > 0 ? next.depth - 1 : 0);
    if (next.depth > 0) path.push_back(std::move(next.step));
    const rapidjson::Value& v = *next.value;
    if (v.IsObject()) {
      const auto repeat = FirstRepeat(v);
      if (repeat != v.MemberEnd()) {
        path.push_back({std::string(KeyOf(repeat)), false});
        return path;
      }
      // Pushed last to first, so that the first member is visited first.
      for (auto m = v.MemberEnd(); m != v.MemberBegin();) {
        --m;
        if (m->value.IsObject() || m->value.IsArray()) {
          stack.push_back({&m->value, next.depth + 1, {std::string(KeyOf(m)), false}});
        }
      }
    } else if (v.IsArray()) {
      for (rapidjson::SizeType i = v.Size(); i > 0; --i) {
        const rapidjson::Value& item = v[i - 1];
        if (item.IsObject() || item.IsArray()) {
          stack.push_back({&item, next.depth + 1, {std::to_string(i - 1), true}});
        }
      }
    }
  }
  return std::nullopt;
}

std::string JsonPathText(const std::string& root, const std::vector<JsonPathStep>& path) {
  std::string out = root;
  for (const JsonPathStep& step : path) {
    if (step.index) {
      out += "[" + step.name + "]";
    } else {
      if (!out.empty()) out += '.';
      out += Printable(step.name);
    }
  }
  return out;
}

Status CheckKeysUnique(const rapidjson::Value& root, const std::string& loc_root) {
  auto path = FindRepeatedKey(root);
  if (!path) return Status::Ok();
  const std::string key = Printable(path->back().name);
  const std::vector<JsonPathStep> parent(path->begin(), path->end() - 1);
  std::vector<std::string> loc{loc_root};
  for (const JsonPathStep& step : *path) loc.push_back(step.name);
  return Status(ErrorCode::kBadRequest,
                "request body repeats the key '" + key + "' in " + JsonPathText(loc_root, parent) +
                    ": a key may appear only once in a JSON object",
                ValidationDetails{
                    {FieldError{std::move(loc), "Duplicate key '" + key + "'", "duplicate_key"}}});
}

}  // namespace dnaserve
