#include "worker/windowing/splice_signal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/sequence.h"
#include "worker/windowing/table_text.h"

namespace dnaserve::worker {

StatusOr<SpliceSignal> ParseSpliceSignal(std::string_view text, std::string_view name) {
  auto error = [&](int64_t line, const std::string& what) {
    return Status(ErrorCode::kValidationFailed,
                  std::string(name) + ": line " + std::to_string(line) + ": " + what);
  };
  SpliceSignal model;
  // The section being read (nullptr: none yet), its expected rows, which sections were seen.
  SignalWindow* window = nullptr;
  int64_t rows = 0, line_number = 0;
  int sections = 0;
  table_text::Lines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    line_number = lines.number();
    const std::vector<std::string_view> words = table_text::Words(line);
    if (words.empty() || words.front().front() == '#') continue;
    if (window == nullptr || static_cast<int64_t>(window->site.size()) == rows) {
      const char* want = sections == 0 ? "donor" : sections == 1 ? "acceptor" : nullptr;
      if (want == nullptr) return error(line_number, "text after the acceptor section");
      double first = 0, length = 0;
      if (words.size() != 3 || words[0] != want || !table_text::ParseDouble(words[1], &first) ||
          !table_text::ParseDouble(words[2], &length) || first != std::floor(first) ||
          length != std::floor(length) || std::abs(first) > kMaxSignalWindow || length < 1 ||
          length > kMaxSignalWindow) {
        return error(line_number,
                     std::string("expected \"") + want +
                         " FIRST LENGTH\" (|FIRST| <= " + std::to_string(kMaxSignalWindow) +
                         ", LENGTH 1.." + std::to_string(kMaxSignalWindow) + ")");
      }
      window = sections == 0 ? &model.donor : &model.acceptor;
      window->first = static_cast<int>(first);
      rows = static_cast<int64_t>(length);
      ++sections;
      continue;
    }
    const int64_t offset = window->first + static_cast<int64_t>(window->site.size());
    double written = 0;
    if (words.size() != 33 || !table_text::ParseDouble(words[0], &written) ||
        written != static_cast<double>(offset)) {
      return error(line_number,
                   "expected offset " + std::to_string(offset) + " and 32 log-probabilities");
    }
    std::array<double, 16> site{}, nonsite{};
    for (int group = 0; group < 8; ++group) {
      std::array<double, 4> values{};
      std::string why;
      if (!table_text::ParseLogProbabilities(words, 1 + group * 4, &values, &why)) {
        return error(line_number, why);
      }
      std::copy(values.begin(), values.end(),
                (group < 4 ? site.begin() + group * 4 : nonsite.begin() + (group - 4) * 4));
    }
    window->site.push_back(site);
    window->nonsite.push_back(nonsite);
  }
  if (sections < 2 || static_cast<int64_t>(window->site.size()) != rows) {
    return error(line_number, sections < 2 ? "needs a donor and an acceptor section"
                                           : "the acceptor section holds " +
                                                 std::to_string(window->site.size()) +
                                                 " rows, expected " + std::to_string(rows));
  }
  return model;
}

StatusOr<SpliceSignal> LoadSpliceSignal(const std::string& path) {
  return table_text::LoadTableFile(path, ParseSpliceSignal);
}

std::vector<double> SignalScores(const SignalWindow& window, std::string_view sequence) {
  const int64_t n = static_cast<int64_t>(sequence.size());
  const int64_t length = static_cast<int64_t>(window.site.size());
  std::vector<double> out(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = i + window.first;  // the window's first base; its context is lo - 1
    if (lo - 1 < 0 || lo + length > n) continue;
    double score = 0;
    int previous = BaseIndex(sequence[lo - 1]);
    bool ok = previous >= 0;
    for (int64_t j = 0; ok && j < length; ++j) {
      const int base = BaseIndex(sequence[lo + j]);
      if (base < 0) {
        ok = false;
        break;
      }
      const int k = previous * 4 + base;
      score += window.site[j][k] - window.nonsite[j][k];
      previous = base;
    }
    if (ok) out[i] = score;
  }
  return out;
}

}  // namespace dnaserve::worker
