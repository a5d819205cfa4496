#include "gateway/auth/key_entry_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace dnaserve::gateway {

std::string KeyEntryJson(const KeyEntry& entry) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("key_sha256");
  w.String(entry.key_sha256.data(), static_cast<rapidjson::SizeType>(entry.key_sha256.size()));
  w.Key("client_id");
  w.String(entry.principal.client_id.data(),
           static_cast<rapidjson::SizeType>(entry.principal.client_id.size()));
  w.Key("enabled");
  w.Bool(entry.enabled);
  w.Key("rate_per_minute");
  w.Int64(entry.principal.rate_per_minute);
  w.Key("max_concurrency");
  w.Int64(entry.principal.max_concurrency);
  w.EndObject();
  return buffer.GetString();
}

}  // namespace dnaserve::gateway
