#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace dnaserve::log {
namespace {

std::string g_component = "dnaserve";

void AppendEscaped(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

std::string NowIso8601() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_logger_mt("dnaserve");
    l->set_pattern("%v");
    l->flush_on(spdlog::level::info);
    return l;
  }();
  return *logger;
}

}  // namespace

void Init(std::string_view component) {
  g_component = std::string(component);
  Logger();
}

std::string FormatLine(std::string_view level, std::string_view event,
                       std::initializer_list<Field> fields) {
  std::string out = "{\"ts\":";
  AppendEscaped(out, NowIso8601());
  out += ",\"level\":";
  AppendEscaped(out, level);
  out += ",\"component\":";
  AppendEscaped(out, g_component);
  out += ",\"event\":";
  AppendEscaped(out, event);
  for (const Field& f : fields) {
    out.push_back(',');
    AppendEscaped(out, f.key);
    out.push_back(':');
    if (auto s = std::get_if<std::string_view>(&f.value)) {
      AppendEscaped(out, *s);
    } else if (auto i = std::get_if<int64_t>(&f.value)) {
      out += std::to_string(*i);
    } else if (auto d = std::get_if<double>(&f.value)) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.6g", *d);
      out += buf;
    } else if (auto b = std::get_if<bool>(&f.value)) {
      out += *b ? "true" : "false";
    }
  }
  out.push_back('}');
  return out;
}

void Info(std::string_view event, std::initializer_list<Field> fields) {
  Logger().info(FormatLine("info", event, fields));
}
void Warn(std::string_view event, std::initializer_list<Field> fields) {
  Logger().warn(FormatLine("warn", event, fields));
}
void Error(std::string_view event, std::initializer_list<Field> fields) {
  Logger().error(FormatLine("error", event, fields));
}

}  // namespace dnaserve::log
