#include "gateway/auth/key_entry_json.h"

#include "gateway/http/json_writer.h"

namespace dnaserve::gateway {

std::string KeyEntryJson(const KeyEntry& entry) {
  JsonWriter w;
  w.StartObject();
  w.Field("key_sha256", entry.key_sha256);
  w.Field("client_id", entry.principal.client_id);
  w.Field("enabled", entry.enabled);
  w.Field("rate_per_minute", entry.principal.rate_per_minute);
  w.Field("max_concurrency", entry.principal.max_concurrency);
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::gateway
