// Single-nucleotide and k-mer tokenizers (internal to worker/tokenize; use LoadTokenizer).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "worker/manifest/manifest.h"
#include "worker/tokenize/tokenizer.h"

namespace dnaserve::worker {

// spec.type == kChar: built-in ids, or A/C/G/T/N (else an unknown token) from spec.vocab_file.
StatusOr<std::shared_ptr<const Tokenizer>> MakeCharTokenizer(const TokenizerSpec& spec,
                                                             const std::string& package_dir);

// spec.type == kKmer, any convention (tokenizer.h).
StatusOr<std::shared_ptr<const Tokenizer>> MakeKmerTokenizer(const TokenizerSpec& spec,
                                                             const std::string& package_dir);

}  // namespace dnaserve::worker
