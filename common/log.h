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

// How lines reach stderr.
enum class Output {
  // Each line is written as it is logged (one write(2) per line).
  kImmediate,
  // Lines collect in a buffer that is written when it holds 64 KiB, every second, at a warning
  // or error (which is written at once, after what came before it), on Flush() and at exit: one
  // system call per many lines instead of one per line. A process killed outright loses up to a
  // second of info lines. For processes that log one line per request (the gateway).
  kBuffered,
};

// Names the process in every line ("gateway", "worker-splice", ...). Call once from main(),
// before any other thread logs.
void Init(std::string_view component, Output output = Output::kImmediate);

// Writes out whatever kBuffered holds (call before a normal exit that skips static destructors).
void Flush();

void Info(std::string_view event, std::initializer_list<Field> fields = {});
void Warn(std::string_view event, std::initializer_list<Field> fields = {});
void Error(std::string_view event, std::initializer_list<Field> fields = {});

// Renders one line without emitting it (used by the above; exposed for tests).
std::string FormatLine(std::string_view level, std::string_view event,
                       std::initializer_list<Field> fields);

}  // namespace dnaserve::log
