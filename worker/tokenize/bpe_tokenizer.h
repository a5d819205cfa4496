// Byte-pair encoding from a Hugging Face `tokenizer.json` (the format GENA-LM and DNABERT-2 ship).
//
// What is implemented is what those models use, applied to input that is only ever A/C/G/T/N:
//   model          BPE: vocab, merges ("a b" strings or [a, b] pairs), unk_token, fuse_unk,
//                  continuing_subword_prefix, end_of_word_suffix, byte_fallback, ignore_merges;
//                  dropout must be null or 0 (it would make encodings random).
//   normalizer     null, Lowercase, NFC/NFD/NFKC/NFKD, Strip, StripAccents, BertNormalizer, or a
//                  Sequence of them (on ACGTN only lowercasing changes anything).
//   pre_tokenizer  null, Whitespace, WhitespaceSplit, BertPreTokenizer, Digits, Punctuation,
//                  ByteLevel (add_prefix_space puts one "Ġ" symbol before the bases), or a
//                  Sequence of them: each leaves a run of letters as one word.
//   post_processor null, TemplateProcessing (single: special tokens around exactly one $A),
//                  BertProcessing, RobertaProcessing, ByteLevel, or a Sequence of them.
//   added_tokens   kept for their ids; one whose text could occur in a DNA sequence is refused,
//                  because Hugging Face would split the input on it.
// Anything else is refused at load with a Status naming the field. `truncation` is ignored: the
// worker's windows decide how much sequence one input holds.
//
// Merges are applied exactly as the tokenizers library does: repeatedly the adjacent pair with the
// lowest merge rank, leftmost first, using a priority queue (O(n log n) for an n-base word).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::worker {

// `name` prefixes every error message (normally the file name, e.g. "tokenizer.json").
StatusOr<std::shared_ptr<const Tokenizer>> ParseHfBpeTokenizer(std::string_view json,
                                                               const std::string& name);
StatusOr<std::shared_ptr<const Tokenizer>> ReadHfBpeTokenizer(const std::string& path,
                                                              const std::string& name);

}  // namespace dnaserve::worker
