#include "worker/windowing/coding_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/sequence.h"
#include "worker/windowing/table_text.h"

namespace dnaserve::worker {

namespace {

using table_text::ParseDouble;
using table_text::ParseLogProbabilities;
using table_text::Words;

std::string ContextName(int64_t context, int order) {
  std::string out(static_cast<size_t>(order), 'A');
  for (int d = 0; d < order; ++d) {
    out[order - 1 - d] = "ACGT"[(context >> (2 * d)) & 3];
  }
  return out;
}

}  // namespace

StatusOr<CodingModel> ParseCodingModel(std::string_view text, std::string_view name) {
  auto error = [&](int64_t line, const std::string& what) {
    return Status(ErrorCode::kValidationFailed,
                  std::string(name) + ": line " + std::to_string(line) + ": " + what);
  };
  CodingModel model;
  int64_t contexts = -1, next_context = 0, line_number = 0;
  table_text::Lines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    line_number = lines.number();
    const std::vector<std::string_view> words = Words(line);
    if (words.empty() || words.front().front() == '#') continue;
    if (contexts < 0) {
      double order = 0;
      if (words.size() != 2 || words[0] != "order" || !ParseDouble(words[1], &order) ||
          order != std::floor(order) || order < 1 || order > kMaxCodingOrder) {
        return error(line_number,
                     "expected \"order K\" with K in 1.." + std::to_string(kMaxCodingOrder));
      }
      model.order = static_cast<int>(order);
      contexts = int64_t{1} << (2 * model.order);
      for (auto& table : model.coding) table.reserve(static_cast<size_t>(contexts) * 4);
      model.noncoding.reserve(static_cast<size_t>(contexts) * 4);
      continue;
    }
    if (next_context == contexts) return error(line_number, "more contexts than 4^order");
    const std::string expected = ContextName(next_context, model.order);
    if (words.size() != 17 || words[0] != expected) {
      return error(line_number, "expected context \"" + expected + "\" and 16 log-probabilities");
    }
    for (int group = 0; group < 4; ++group) {
      std::array<double, 4> values{};
      std::string why;
      if (!ParseLogProbabilities(words, 1 + group * 4, &values, &why)) {
        return error(line_number, why);
      }
      auto& target = group < 3 ? model.coding[group] : model.noncoding;
      target.insert(target.end(), values.begin(), values.end());
    }
    ++next_context;
  }
  if (contexts < 0) return error(line_number, "no \"order K\" line");
  if (next_context != contexts) {
    return error(line_number, "holds " + std::to_string(next_context) + " contexts, expected " +
                                  std::to_string(contexts));
  }
  return model;
}

StatusOr<CodingModel> LoadCodingModel(const std::string& path) {
  return table_text::LoadTableFile(path, ParseCodingModel);
}

std::array<std::vector<double>, 3> CodingLogRatios(const CodingModel& model,
                                                   std::string_view sequence) {
  const int64_t n = static_cast<int64_t>(sequence.size());
  std::array<std::vector<double>, 3> out;
  for (auto& row : out) row.assign(static_cast<size_t>(n), 0.0);
  const int64_t mask = (int64_t{1} << (2 * model.order)) - 1;
  int64_t context = 0, valid = 0;  // valid: ACGT bases in a row ending before i
  for (int64_t i = 0; i < n; ++i) {
    const int base = BaseIndex(sequence[i]);
    if (base >= 0 && valid >= model.order) {
      const size_t k = static_cast<size_t>(context * 4 + base);
      for (int q = 0; q < 3; ++q) out[q][i] = model.coding[q][k] - model.noncoding[k];
    }
    if (base < 0) {
      valid = 0, context = 0;
    } else {
      ++valid;
      context = ((context << 2) | base) & mask;
    }
  }
  return out;
}

CodingTables BuildCodingTables(std::string_view s, const std::array<std::vector<double>, 3>& r) {
  const int64_t n = static_cast<int64_t>(s.size());
  auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
  auto codon_is = [&](int64_t j, const char* codon) {
    return upper(s[j]) == codon[0] && upper(s[j + 1]) == codon[1] && upper(s[j + 2]) == codon[2];
  };
  std::vector<bool> stop(static_cast<size_t>(n), false), atg(static_cast<size_t>(n), false);
  for (int64_t j = 0; j + 2 < n; ++j) {
    stop[j] = codon_is(j, "TAA") || codon_is(j, "TAG") || codon_is(j, "TGA");
    atg[j] = codon_is(j, "ATG");
  }
  CodingTables t;
  for (int64_t g = 0; g < 3; ++g) {
    auto& sums = t.frame_sums[g];
    sums.assign(static_cast<size_t>(n + 1), 0.0);
    for (int64_t j = 0; j < n; ++j) sums[j + 1] = sums[j] + r[((j - g) % 3 + 3) % 3][j];
    auto& next = t.next_stop[g];
    next.assign(static_cast<size_t>(n + 1), n + 3);
    for (int64_t j = n - 1; j >= 0; --j) {
      next[j] = stop[j] && ((j - g) % 3 + 3) % 3 == 0 ? j : next[j + 1];
    }
    next[n] = n + 3;
    auto& previous = t.previous_stop[g];
    previous.assign(static_cast<size_t>(n), -3);
    for (int64_t j = 0; j < n; ++j) {
      const bool here = stop[j] && ((j - g) % 3 + 3) % 3 == 0;
      previous[j] = here ? j : (j > 0 ? previous[j - 1] : -3);
      if (atg[j] && ((j - g) % 3 + 3) % 3 == 0) t.atg[g].push_back(j);
    }
  }
  return t;
}

}  // namespace dnaserve::worker
