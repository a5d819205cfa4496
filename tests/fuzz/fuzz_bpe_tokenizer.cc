// The BPE tokenizer (worker/tokenize/bpe_tokenizer.h) on arbitrary input, both ways in:
//  - byte 0 even: the rest is a sequence (any bytes: the tokenizer canonicalises them to ACGTN
//    itself) encoded with the project's chr20 vocabulary (tests/data/tokenizers);
//  - byte 0 odd: the rest is a tokenizer.json, loaded the way the worker loads a package's
//    (LoadTokenizer, from a file: a memfd); when it loads, fixed sequences are encoded.
// Every encoding must tile its input (content tokens cover 0..n with no gap or overlap), keep
// ids below vocab_size(), agree with EncodeIds(), and wrap the template's specials around it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "worker/tokenize/bpe_tokenizer.h"

using namespace dnaserve;
using namespace dnaserve::worker;

namespace {

std::shared_ptr<const Tokenizer> g_chr20;
int g_package_fd = -1;  // the tokenizer.json of parse mode
TokenizerSpec g_bpe_spec;

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "tokenizer invariant broken: %s\n", what.c_str());
  std::abort();
}

void CheckEncoding(const Tokenizer& tokenizer, std::string_view bases) {
  const std::vector<Token> tokens = tokenizer.Encode(bases);
  int64_t at = 0;
  for (const Token& t : tokens) {
    if (t.special) Violation("Encode returned a special token");
    // ByteLevel's prefix space is a token covering no base ([0, 0)); all others cover some.
    if (t.start != at || t.end < t.start) Violation("tokens do not tile the input");
    if (t.id < 0 || t.id >= tokenizer.vocab_size()) Violation("id outside the vocabulary");
    at = t.end;
  }
  if (at != static_cast<int64_t>(bases.size())) Violation("tokens do not cover the input");

  std::vector<int64_t> ids;
  tokenizer.EncodeIds(bases, &ids);
  if (ids.size() != tokens.size()) Violation("EncodeIds length differs from Encode");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != tokens[i].id) Violation("EncodeIds differs from Encode");
  }

  const std::vector<Token> wrapped = tokenizer.EncodeWithSpecials(bases);
  const size_t specials = tokenizer.prefix_ids().size() + tokenizer.suffix_ids().size();
  if (wrapped.size() != tokens.size() + specials) Violation("specials miscounted");
  for (size_t i = 0; i < tokenizer.prefix_ids().size(); ++i) {
    if (!wrapped[i].special || wrapped[i].id != tokenizer.prefix_ids()[i]) {
      Violation("prefix specials misplaced");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const std::string path =
      std::string(DNASERVE_SOURCE_DIR) + "/tests/data/tokenizers/chr20_bpe.tokenizer.json";
  auto loaded = ReadHfBpeTokenizer(path, "chr20_bpe.tokenizer.json");
  if (!loaded.ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), loaded.status().message().c_str());
    std::abort();
  }
  g_chr20 = *loaded;
  g_package_fd = memfd_create("fuzz-tokenizer-json", 0);
  if (g_package_fd < 0) std::abort();
  g_bpe_spec.type = TokenizerType::kBpe;
  g_bpe_spec.file = std::to_string(g_package_fd);  // package-relative: /proc/self/fd/<fd>
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    CheckEncoding(*g_chr20, rest);
    return 0;
  }
  if (ftruncate(g_package_fd, 0) != 0 ||
      pwrite(g_package_fd, rest.data(), rest.size(), 0) != static_cast<ssize_t>(rest.size())) {
    std::abort();
  }
  auto parsed = LoadTokenizer(g_bpe_spec, "/proc/self/fd");
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) Violation("refusal without a message");
    return 0;
  }
  CheckEncoding(**parsed, "ACGTNNACGTTTGACCANGGGTACAGT");
  CheckEncoding(**parsed, "");
  return 0;
}
