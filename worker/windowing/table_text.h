// Small helpers for the decoder's sequence-sensor table files (coding_model.h, splice_signal.h):
// reading one, and the words and numbers of a text line.
#pragma once

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_text.h"
#include "common/status.h"

namespace dnaserve::worker::table_text {

// The lines of a text one at a time ('\n'-separated; a last line without one counts too), and
// the 1-based number of the line last returned, for error messages.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool Next(std::string_view* line) {
    if (at_ >= text_.size()) return false;
    size_t end = text_.find('\n', at_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(at_, end - at_);
    at_ = end + 1;
    ++number_;
    return true;
  }
  int64_t number() const { return number_; }

 private:
  std::string_view text_;
  size_t at_ = 0;
  int64_t number_ = 0;
};

// The words of a line separated by spaces or tabs (a trailing '\r' ignored).
inline std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The whole word as a finite number.
inline bool ParseDouble(std::string_view word, double* out) {
  std::string text(word);
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(*out);
}

// A table file read whole and parsed by `parse(text, name)`, the file's name (not its path) in
// the messages; an unreadable file is a validation error like a malformed one.
template <typename Parse>
auto LoadTableFile(const std::string& path, Parse parse)
    -> decltype(parse(std::string_view{}, std::string_view{})) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  auto text = ReadFileText(path);
  if (!text) return Status(ErrorCode::kValidationFailed, name + ": cannot be read");
  return parse(*text, name);
}

// Four words from `first` as a base's log-probabilities (A, C, G, T): finite, <= 0, and summing
// (as probabilities) to 1 within 1e-3. On failure, what a table's error message should say.
inline bool ParseLogProbabilities(const std::vector<std::string_view>& words, size_t first,
                                  std::array<double, 4>* out, std::string* why) {
  double total = 0;
  for (size_t b = 0; b < 4; ++b) {
    if (first + b >= words.size() || !ParseDouble(words[first + b], &(*out)[b]) || (*out)[b] > 0) {
      *why = "log-probabilities must be finite numbers <= 0";
      return false;
    }
    total += std::exp((*out)[b]);
  }
  if (std::abs(total - 1.0) > 1e-3) {
    *why = "a group of four log-probabilities does not sum to 1";
    return false;
  }
  return true;
}

}  // namespace dnaserve::worker::table_text
