#include "worker/tokenize/vocab_file.h"

#include "common/file_text.h"

namespace dnaserve::worker {

StatusOr<VocabFile> VocabFile::Parse(std::string_view text, const std::string& name) {
  VocabFile vocab;
  vocab.name_ = name;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t newline = text.find('\n', pos);
    size_t end = newline == std::string_view::npos ? text.size() : newline;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    vocab.ids_[std::string(line)] = static_cast<int64_t>(vocab.lines_++);
    pos = newline == std::string_view::npos ? text.size() : newline + 1;
  }
  if (vocab.lines_ == 0) return Internal(name + ": the vocabulary file is empty");
  return vocab;
}

StatusOr<VocabFile> VocabFile::Read(const std::string& path, const std::string& name) {
  auto text = ReadFileText(path);
  if (!text) return Internal(name + ": cannot be read");
  return Parse(*text, name);
}

std::optional<int64_t> VocabFile::Find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> VocabFile::FindAny(std::initializer_list<std::string_view> tokens) const {
  for (std::string_view token : tokens) {
    if (auto id = Find(token)) return id;
  }
  return std::nullopt;
}

}  // namespace dnaserve::worker
