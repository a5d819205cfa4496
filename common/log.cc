#include "common/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

namespace dnaserve::log {
namespace {

std::string g_component = "dnaserve";

void AppendEscaped(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t plain = 0;  // start of the run of characters that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      }
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out.push_back('"');
}

// "2026-11-26T18:25:01.123Z". The date and time up to the second are formatted once per second
// per thread: this runs for every request line.
void AppendNowIso8601(std::string& out) {
  struct Cache {
    int64_t second = -1;
    char text[24] = {0};  // "YYYY-MM-DDTHH:MM:SS."
    size_t size = 0;
  };
  thread_local Cache cache;
  const auto now = std::chrono::system_clock::now();
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const int64_t second = ms / 1000;
  if (second != cache.second) {
    std::time_t secs = static_cast<std::time_t>(second);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    cache.size = std::strftime(cache.text, sizeof(cache.text), "%Y-%m-%dT%H:%M:%S.", &tm);
    cache.second = second;
  }
  const int milli = static_cast<int>(ms % 1000);
  out.append(cache.text, cache.size);
  out.push_back(static_cast<char>('0' + milli / 100));
  out.push_back(static_cast<char>('0' + milli / 10 % 10));
  out.push_back(static_cast<char>('0' + milli % 10));
  out.push_back('Z');
}

// Lines into one buffer, written to fd 2 in large pieces by a thread of its own
// (Output::kBuffered). The base class serialises sink_it_/flush_ with its mutex; the write(2)
// happens outside that mutex, on the writer thread: a 64 KiB write to a file can take a
// millisecond, and holding the logging lock for it stalled every reactor thread behind it (seen
// as a multi-millisecond latency tail under load). A full buffer waits for the previous one to be
// written (memory stays bounded at two buffers); Flush waits until all is written.
class BufferedStderrSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static constexpr size_t kFlushBytes = 64 * 1024;
  BufferedStderrSink() : writer_([this] { WriterLoop(); }) { current_.reserve(2 * kFlushBytes); }
  ~BufferedStderrSink() override {
    HandOver();
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      stop_ = true;
    }
    writer_cv_.notify_all();
    writer_.join();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    current_.append(msg.payload.data(), msg.payload.size());
    current_.push_back('\n');
    if (current_.size() >= kFlushBytes) HandOver();
  }
  void flush_() override {
    HandOver();
    std::unique_lock<std::mutex> lock(writer_mu_);
    writer_cv_.wait(lock, [this] { return pending_.empty() && !writing_; });
  }

 private:
  // Called with the base mutex held: passes current_ to the writer thread.
  void HandOver() {
    if (current_.empty()) return;
    std::unique_lock<std::mutex> lock(writer_mu_);
    writer_cv_.wait(lock, [this] { return pending_.empty(); });
    pending_.swap(current_);  // current_ takes the empty (written) buffer back
    lock.unlock();
    writer_cv_.notify_all();
  }

  void WriterLoop() {
    std::string writing;
    std::unique_lock<std::mutex> lock(writer_mu_);
    while (true) {
      writer_cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      writing.swap(pending_);
      writing_ = true;
      lock.unlock();
      WriteAll(writing);
      writing.clear();
      lock.lock();
      writing_ = false;
      writer_cv_.notify_all();
    }
  }

  static void WriteAll(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(STDERR_FILENO, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // stderr is gone: nothing else to tell
      done += static_cast<size_t>(n);
    }
  }

  std::string current_;  // guarded by the base class's mutex
  std::mutex writer_mu_;
  std::condition_variable writer_cv_;
  std::string pending_;   // full buffer waiting for the writer (writer_mu_)
  bool writing_ = false;  // the writer holds a buffer it has not finished writing (writer_mu_)
  bool stop_ = false;     // (writer_mu_)
  std::thread writer_;    // last: starts after the members it uses exist
};

std::shared_ptr<spdlog::logger> MakeLogger(Output output) {
  std::shared_ptr<spdlog::logger> l;
  if (output == Output::kBuffered) {
    l = std::make_shared<spdlog::logger>("dnaserve", std::make_shared<BufferedStderrSink>());
    l->flush_on(spdlog::level::warn);
    spdlog::register_logger(l);
    spdlog::flush_every(std::chrono::seconds(1));
  } else {
    l = spdlog::stderr_logger_mt("dnaserve");
    l->flush_on(spdlog::level::info);
  }
  l->set_pattern("%v");
  return l;
}

// Immediate until Init says otherwise (tests and tools log without calling Init). Init runs
// before other threads log, so replacing the logger there needs no lock.
std::shared_ptr<spdlog::logger>& LoggerSlot() {
  static std::shared_ptr<spdlog::logger> logger = MakeLogger(Output::kImmediate);
  return logger;
}

spdlog::logger& Logger() { return *LoggerSlot(); }

}  // namespace

void Init(std::string_view component, Output output) {
  g_component = std::string(component);
  auto& logger = LoggerSlot();
  logger->flush();
  spdlog::drop("dnaserve");
  logger = MakeLogger(output);
}

void Flush() { Logger().flush(); }

std::string FormatLine(std::string_view level, std::string_view event,
                       std::initializer_list<Field> fields) {
  std::string out;
  out.reserve(256);
  out += "{\"ts\":\"";
  AppendNowIso8601(out);  // nothing in it needs escaping
  out.push_back('"');
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
      char buf[24];
      out.append(buf, std::to_chars(buf, buf + sizeof(buf), *i).ptr);
    } else if (auto d = std::get_if<double>(&f.value)) {
      // As printf's %.6g, without its locale and format-string machinery.
      char buf[32];
      out.append(buf, std::to_chars(buf, buf + sizeof(buf), *d, std::chars_format::general, 6).ptr);
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
