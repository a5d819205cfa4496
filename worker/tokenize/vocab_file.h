// Line-per-token vocabulary files (BERT vocab.txt, as DNABERT and the Nucleotide Transformer ship
// them): the token on line i (0-based) has id i.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

class VocabFile {
 public:
  // Lines end in "\n" or "\r\n"; a final line without a newline counts, an empty file does not
  // parse. Like BertTokenizer, a token listed twice keeps the id of its last line.
  static StatusOr<VocabFile> Parse(std::string_view text, const std::string& name);
  static StatusOr<VocabFile> Read(const std::string& path, const std::string& name);

  std::optional<int64_t> Find(std::string_view token) const;
  // The id of the first of `tokens` present, e.g. FindAny({"[UNK]", "<unk>"}).
  std::optional<int64_t> FindAny(std::initializer_list<std::string_view> tokens) const;
  int64_t size() const { return static_cast<int64_t>(lines_); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  size_t lines_ = 0;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace dnaserve::worker
