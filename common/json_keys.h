// Object keys that a JSON text repeats. RFC 8259 4 says the names within an object SHOULD be
// unique and leaves the meaning of a repeat to each reader: RapidJSON keeps both members, the
// request walkers took the last, and a proxy or a client library in front may take the first.
// So a request body naming a key twice is refused instead of read one way (see SECURITY.md).
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dnaserve {

// One step from a JSON value to one inside it: an object key or an array index.
struct JsonPathStep {
  std::string name;  // the key, or the index in decimal
  bool index = false;
};

// The first key that some object in `root` (at any depth) holds twice, in document order of the
// objects: the path to it, the repeated key last. nullopt when every object's keys are distinct.
// Keys are compared as decoded (so "a" and "\u0061" are the same key). Iterative: no recursion
// however deeply `root` nests.
std::optional<std::vector<JsonPathStep>> FindRepeatedKey(const rapidjson::Value& root);

// `path` as text for a message: `root` then ".key" or "[index]" per step, keys shown printable
// (other bytes as \xNN) and cut at 64 bytes.
std::string JsonPathText(const std::string& root, const std::vector<JsonPathStep>& path);

// ok, or 400 bad_request naming the repeated key and where it is; details.errors holds one
// entry whose loc is `loc_root` followed by the path (["body", "options", "threshold"]) and whose
// type is "duplicate_key".
Status CheckKeysUnique(const rapidjson::Value& root, const std::string& loc_root);

}  // namespace dnaserve
