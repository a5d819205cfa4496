// The gateway's one JSON writer (response bodies, envelopes, the OpenAPI document), a thin layer
// over RapidJSON. It exists for one reason beyond
// brevity: RapidJSON's Writer::Double() writes the separator before it rejects NaN/Inf, which
// leaves a half-written, invalid document. Here a non-finite number is written as null instead,
// so no model output can ever corrupt a response body.
#pragma once

#include <rapidjson/writer.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace dnaserve::core {

class JsonWriter {
 public:
  JsonWriter() : writer_(out_) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  void StartObject() { writer_.StartObject(); }
  void EndObject() { writer_.EndObject(); }
  void StartArray() { writer_.StartArray(); }
  void EndArray() { writer_.EndArray(); }

  void Key(std::string_view key) {
    writer_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  }
  void String(std::string_view value) {
    writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
  void Int(int64_t value) { writer_.Int64(value); }
  void Bool(bool value) { writer_.Bool(value); }
  void Null() { writer_.Null(); }
  // Shortest representation that reads back to the same double; null when not finite.
  void Double(double value) {
    if (std::isfinite(value)) {
      writer_.Double(value);
    } else {
      writer_.Null();
    }
  }

  // Key + value shorthands, the common case in response bodies.
  void Field(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, const char* value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, const std::string& value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, bool value) {
    Key(key);
    Bool(value);
  }
  void Field(std::string_view key, int32_t value) {
    Key(key);
    Int(value);
  }
  void Field(std::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void Field(std::string_view key, double value) {
    Key(key);
    Double(value);
  }
  void NullField(std::string_view key) {
    Key(key);
    Null();
  }

  // True when every opened object/array was closed (the document is a complete value).
  bool Complete() const { return writer_.IsComplete(); }
  // Room for `bytes` of output, allocated once: growing by doubling would briefly hold the old
  // and the new buffer (1.5x the body) at the last step. Untouched capacity costs no memory.
  void Reserve(size_t bytes) { out_.text.reserve(bytes); }
  // The document written so far; the writer is spent afterwards. Moved out, not copied: a
  // response body is held once, never twice (RELIABILITY.md, "Memory per request").
  std::string Take() { return std::move(out_.text); }

 private:
  // RapidJSON output stream appending straight to the std::string that becomes the body
  // (rapidjson::StringBuffer would need a copy into one at the end).
  struct StringOut {
    using Ch = char;
    void Put(char c) { text.push_back(c); }
    void Flush() {}
    std::string text;
  };
  StringOut out_;
  rapidjson::Writer<StringOut> writer_;
};

}  // namespace dnaserve::core
