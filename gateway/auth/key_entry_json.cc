#include "gateway/auth/key_entry_json.h"

#include "core/render/json_writer.h"

namespace dnaserve::gateway {

std::string KeyEntryJson(const KeyEntry& entry) {
  core::JsonWriter w;
  w.StartObject();
  w.Field("key_sha256", entry.key_sha256);
  w.Field("client_id", entry.principal.client_id);
  w.Field("enabled", entry.enabled);
  w.Field("rate_per_minute", entry.principal.rate_per_minute);
  w.Field("max_concurrency", entry.principal.max_concurrency);
  // Grants only when there are some, so an entry without them reads as before.
  const auto grants = [&](const char* name, const std::vector<S3Grant>& list) {
    if (list.empty()) return;
    w.Key(name);
    w.StartArray();
    for (const S3Grant& grant : list) w.String(grant.ToString());
    w.EndArray();
  };
  grants("s3_read", entry.principal.s3_read());
  grants("s3_write", entry.principal.s3_write());
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::gateway
