#include "runner/vcf/line_reader.h"

#include <zlib.h>

#include <cstring>

namespace dnaserve::variant {
namespace {

constexpr size_t kReadBytes = 128 * 1024;

gzFile File(void* f) { return static_cast<gzFile>(f); }

void DropCarriageReturn(std::string_view* line) {
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
}

}  // namespace

std::unique_ptr<LineReader> LineReader::Open(const std::string& path, int64_t max_line_bytes,
                                             int64_t max_text_bytes) {
  gzFile f = gzopen(path.c_str(), "rb");  // gzip, bgzip (multi-member gzip) or plain text
  if (f == nullptr) return nullptr;
  (void)gzbuffer(f, kReadBytes);
  std::unique_ptr<LineReader> reader(new LineReader());
  reader->file_ = f;
  reader->max_line_bytes_ = max_line_bytes;
  reader->max_text_bytes_ = max_text_bytes;
  reader->buf_.resize(kReadBytes);
  return reader;
}

LineReader::~LineReader() {
  if (file_ != nullptr) (void)gzclose_r(File(file_));
}

int64_t LineReader::file_offset() const {
  return static_cast<int64_t>(gzoffset(File(file_)));
}

bool LineReader::Fill() {
  if (eof_) return false;
  const int n = gzread(File(file_), buf_.data(), static_cast<unsigned>(buf_.size()));
  int err = Z_OK;
  const char* message = nullptr;
  if (n <= 0) message = gzerror(File(file_), &err);
  if (n < 0 || (n == 0 && err != Z_OK && err != Z_BUF_ERROR)) {
    eof_ = true;
    error_ = message != nullptr ? message : "read error";
    done_ = Result::kCorrupt;
    return false;
  }
  if (n == 0) {
    eof_ = true;
    // zlib reports a gzip stream cut short as a "soft" Z_BUF_ERROR at the end of the data.
    if (err == Z_BUF_ERROR) done_ = Result::kTruncated;
    return false;
  }
  text_bytes_ += n;
  if (max_text_bytes_ > 0 && text_bytes_ > max_text_bytes_) {
    eof_ = true;
    done_ = Result::kTooMuchText;
    return false;
  }
  pos_ = 0;
  end_ = static_cast<size_t>(n);
  return true;
}

LineReader::Result LineReader::Next(std::string_view* line) {
  if (done_ != Result::kLine) return done_;
  line_.clear();
  bool have_text = false;
  while (true) {
    if (pos_ == end_ && !Fill()) {
      if (done_ != Result::kLine) return done_;
      if (!have_text) return done_ = Result::kEnd;
      // A last line without its newline; the end comes with the next call.
      done_ = Result::kEnd;
      *line = line_;
      DropCarriageReturn(line);
      return Result::kLine;
    }
    const char* start = buf_.data() + pos_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const size_t n = newline != nullptr ? static_cast<size_t>(newline - start) : end_ - pos_;
    if (max_line_bytes_ > 0 && static_cast<int64_t>(line_.size() + n) > max_line_bytes_) {
      return done_ = Result::kLineTooLong;  // nothing past the bound is kept
    }
    have_text = true;
    if (newline != nullptr) {
      pos_ += n + 1;
      if (line_.empty()) {
        *line = std::string_view(start, n);  // the whole line is in the buffer: no copy
      } else {
        line_.append(start, n);
        *line = line_;
      }
      DropCarriageReturn(line);
      return Result::kLine;
    }
    line_.append(start, n);
    pos_ = end_;
  }
}

}  // namespace dnaserve::variant
