// Structured logging: one JSON object per line on stderr, through spdlog.
//
// Callers pass typed fields; nothing here formats request bodies or sequences, and callers must
// never pass them (a test greps the logs of a full run for sequence data).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

namespace dnaserve::log {

using FieldValue = std::variant<std::string_view, int64_t, double, bool>;
struct Field {
  std::string_view key;
  FieldValue value;
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  Field(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
  Field(std::string_view k, int v) : key(k), value(static_cast<int64_t>(v)) {}
  Field(std::string_view k, int64_t v) : key(k), value(v) {}
  Field(std::string_view k, uint64_t v) : key(k), value(static_cast<int64_t>(v)) {}
  Field(std::string_view k, double v) : key(k), value(v) {}
  Field(std::string_view k, bool v) : key(k), value(v) {}
};

// Names the process in every line ("gateway", "worker-splice", ...). Call once from main().
void Init(std::string_view component);

void Info(std::string_view event, std::initializer_list<Field> fields = {});
void Warn(std::string_view event, std::initializer_list<Field> fields = {});
void Error(std::string_view event, std::initializer_list<Field> fields = {});

// Renders one line without emitting it (used by the above; exposed for tests).
std::string FormatLine(std::string_view level, std::string_view event,
                       std::initializer_list<Field> fields);

}  // namespace dnaserve::log
