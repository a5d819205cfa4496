#include "worker/tokenize/tokenizer.h"

#include <algorithm>

#include "worker/tokenize/bpe_tokenizer.h"
#include "worker/tokenize/kmer_tokenizer.h"

namespace dnaserve::worker {
namespace {

// Every id a tokenizer produces for a spread of inputs must fit its vocabulary: a last check that
// catches a vocabulary whose special tokens or merges point past its end.
Status CheckIdsInRange(const Tokenizer& tokenizer) {
  static const char* kProbes[] = {"A",
                                  "C",
                                  "G",
                                  "T",
                                  "N",
                                  "ACGTNACGTN",
                                  "NNNNNNNNNNNNN",
                                  "AAAAAAAAAAAACCCCCCCCCCCCGGGGGGGGGGGGTTTTTTTTTTTT"};
  for (const char* probe : kProbes) {
    for (const Token& t : tokenizer.EncodeWithSpecials(probe)) {
      if (t.id < 0 || t.id >= tokenizer.vocab_size()) {
        return Internal(tokenizer.Describe() + " tokenizer produced id " + std::to_string(t.id) +
                        " outside its vocabulary of " + std::to_string(tokenizer.vocab_size()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void Tokenizer::EncodeIds(std::string_view bases, std::vector<int64_t>* out) const {
  for (const Token& t : Encode(bases)) out->push_back(t.id);
}

std::vector<Token> Tokenizer::EncodeWithSpecials(std::string_view bases) const {
  const int64_t n = static_cast<int64_t>(bases.size());
  std::vector<Token> content = Encode(bases);
  std::vector<Token> tokens;
  tokens.reserve(prefix_ids_.size() + content.size() + suffix_ids_.size());
  for (int64_t id : prefix_ids_) tokens.push_back({id, 0, 0, true});
  tokens.insert(tokens.end(), content.begin(), content.end());
  for (int64_t id : suffix_ids_) tokens.push_back({id, n, n, true});
  return tokens;
}

StatusOr<std::shared_ptr<const Tokenizer>> LoadTokenizer(const TokenizerSpec& spec,
                                                         const std::string& package_dir) {
  StatusOr<std::shared_ptr<const Tokenizer>> made = Internal("unknown tokenizer type");
  switch (spec.type) {
    case TokenizerType::kChar:
      made = MakeCharTokenizer(spec, package_dir);
      break;
    case TokenizerType::kKmer:
      made = MakeKmerTokenizer(spec, package_dir);
      break;
    case TokenizerType::kBpe:
      if (spec.file.empty()) return Internal("tokenizer: a bpe tokenizer needs its 'file'");
      made = ReadHfBpeTokenizer(package_dir + "/" + spec.file, spec.file);
      break;
  }
  if (!made.ok()) return made.status();
  DNASERVE_RETURN_IF_ERROR(CheckIdsInRange(**made));
  return made;
}

std::vector<int64_t> EncodeTextBytes(std::string_view text, int max_tokens) {
  std::vector<int64_t> ids;
  size_t n = std::min(text.size(), static_cast<size_t>(max_tokens > 0 ? max_tokens : 0));
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<unsigned char>(text[i]) + 1);
  return ids;
}

}  // namespace dnaserve::worker
