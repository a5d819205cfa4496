#include "gateway/render/context_list.h"

#include "core/render/json_writer.h"

namespace dnaserve::gateway {
namespace {

namespace pb = worker::v1;

void StringOrNull(core::JsonWriter& w, const char* key, const std::string& value) {
  if (value.empty()) {
    w.NullField(key);
  } else {
    w.Field(key, value);
  }
}

// The models list's rule (RenderModelList): the flagged model, else the first listed.
const pb::ModelInfo* DefaultOf(const std::vector<pb::ModelInfo>& models) {
  for (const auto& m : models) {
    if (m.is_default()) return &m;
  }
  return models.empty() ? nullptr : &models.front();
}

}  // namespace

std::string RenderContextList(const std::vector<pb::ModelInfo>& models) {
  const pb::ModelInfo* default_model = DefaultOf(models);
  core::JsonWriter w;
  w.StartObject();
  w.Field("task", "expression");
  StringOrNull(w, "default_model", default_model ? default_model->id() : std::string());
  w.Key("models");
  w.StartArray();
  for (const auto& m : models) {
    w.StartObject();
    w.Field("name", m.id());
    w.Field("is_default", &m == default_model);
    if (m.free_text_threshold() > 0) {
      w.Field("free_text_threshold", m.free_text_threshold());
    } else {
      w.NullField("free_text_threshold");
    }
    w.Key("contexts");
    w.StartArray();
    for (const auto& c : m.contexts()) {
      w.StartObject();
      w.Field("id", c.id());
      w.Field("name", c.name());
      StringOrNull(w, "curie", c.curie());
      StringOrNull(w, "label", c.label());
      StringOrNull(w, "group", c.group());
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::gateway
