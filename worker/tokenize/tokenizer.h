// DNA sequence -> model token ids, every token carrying the bases it covers.
//
// One interface, three families (worker/README.md, "Tokenizers", is the user documentation):
//   char  one token per base; built-in ids PAD=0 A=1 C=2 G=3 T=4 N=5, or ids from a vocab file.
//   kmer  k bases per token. Conventions: "builtin" (PAD=0, UNK=1 for a k-mer containing N,
//         2 + base-4 value; or ids from a vocab file), "dnabert" ([CLS] overlapping k-mers [SEP],
//         ids from vocab.txt), "nucleotide_transformer" (<cls>, then non-overlapping k-mers
//         restarting after every N; N and leftover bases as single nucleotides).
//   bpe   a Hugging Face tokenizer.json with a BPE model (GENA-LM, DNABERT-2).
//
// Input is canonicalised before tokenising: lower case is upper-cased and anything outside ACGT
// counts as N, so a tokenizer only ever sees the alphabet ACGTN, which LoadTokenizer has checked
// it can encode. Spans are 0-based half-open offsets into the encoded string.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/sequence.h"
#include "common/status.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

// Built-in id schemes of the generated packages (worker/README.md).
inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kKmerUnkId = 1;

struct Token {
  int64_t id = 0;
  int64_t start = 0;     // first base covered
  int64_t end = 0;       // one past the last base; start == end for special tokens
  bool special = false;  // [CLS], [SEP], <cls>...: covers no base

  bool operator==(const Token& o) const {
    return id == o.id && start == o.start && end == o.end && special == o.special;
  }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The DNA tokens of `bases`, in order: what the worker feeds a model. Content tokens tile the
  // input for char, non-overlapping k-mers and BPE; overlapping k-mers overlap by k - stride, and
  // a trailing partial k-mer of the builtin/dnabert conventions is not a token. Special tokens
  // are not included: a package's model adds its own template (worker/README.md), so that output
  // token t of a per-token model is token t here.
  virtual std::vector<Token> Encode(std::string_view bases) const = 0;

  // The ids of Encode(bases), appended to `out`. Char and k-mer override it with a path that
  // builds no Token structs.
  virtual void EncodeIds(std::string_view bases, std::vector<int64_t>* out) const;

  // What the model's own tokenizer (Hugging Face with add_special_tokens, DNABERT, the Nucleotide
  // Transformer) returns for one sequence: its template's special tokens around Encode(bases).
  // Specials have special = true and an empty span where they sit (0 before, size() after).
  std::vector<Token> EncodeWithSpecials(std::string_view bases) const;

  // Ids of the template's special tokens before and after the sequence (none for char, builtin).
  const std::vector<int64_t>& prefix_ids() const { return prefix_ids_; }
  const std::vector<int64_t>& suffix_ids() const { return suffix_ids_; }

  // One more than the largest id either encoding can produce.
  virtual int64_t vocab_size() const = 0;

  // Id that right-pads a row of a batch whose windows tokenised to different lengths; nullopt when
  // every input of one length yields the same number of tokens (no padding is ever needed).
  virtual std::optional<int64_t> pad_id() const = 0;

  // For logs and the models list, e.g. "char", "kmer(k=6,stride=1,dnabert)", "bpe".
  virtual std::string Describe() const = 0;

 protected:
  void set_template(std::vector<int64_t> prefix, std::vector<int64_t> suffix) {
    prefix_ids_ = std::move(prefix);
    suffix_ids_ = std::move(suffix);
  }

 private:
  std::vector<int64_t> prefix_ids_;
  std::vector<int64_t> suffix_ids_;
};

// Builds the tokenizer of a package: `spec` from its manifest, files read from `package_dir`
// (unused by the built-in schemes, so "" works for those). Refuses, with a message naming the
// file and the reason, a file that cannot be read or parsed, a configuration this worker does not
// implement, and a tokenizer that cannot encode every base of ACGTN (for example a vocabulary with
// neither N nor an unknown token): the model registry turns that into model_loading.
StatusOr<std::shared_ptr<const Tokenizer>> LoadTokenizer(const TokenizerSpec& spec,
                                                         const std::string& package_dir);
inline StatusOr<std::shared_ptr<const Tokenizer>> LoadTokenizer(const ModelManifest& manifest) {
  return LoadTokenizer(manifest.tokenizer, manifest.package_dir);
}

// The tokenizers' base alphabet, in the order their per-base tables use: A C G T, then N.
inline constexpr char kBaseAlphabet[] = "ACGTN";

// Index of an input character in kBaseAlphabet: A=0 C=1 G=2 T=3 (either case), N (or anything
// else) 4.
inline int BaseAlphabetIndex(char c) {
  const int index = BaseIndex(c);
  return index < 0 ? 4 : index;
}

// Description text of the expression model: UTF-8 bytes, id = byte + 1, at most `max_tokens`.
std::vector<int64_t> EncodeTextBytes(std::string_view text, int max_tokens);

}  // namespace dnaserve::worker
