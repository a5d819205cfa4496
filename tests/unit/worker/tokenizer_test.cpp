// Char and k-mer tokenizers (builtin, DNABERT, Nucleotide Transformer), the manifest's tokenizer
// object, and refusal at model load of a tokenizer that cannot encode ACGTN.
#include "worker/tokenize/tokenizer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/models/model_registry.h"

namespace dnaserve::worker {
namespace {

using testing::WriteFile;

std::shared_ptr<const Tokenizer> Load(const TokenizerSpec& spec, const std::string& dir = "") {
  auto t = LoadTokenizer(spec, dir);
  if (!t.ok()) CATCH_FAIL_CHECK(t.status().message());
  CATCH_REQUIRE(t.ok());
  return *t;
}

std::string LoadError(const TokenizerSpec& spec, const std::string& dir) {
  auto t = LoadTokenizer(spec, dir);
  return t.ok() ? "<loaded>" : t.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<int64_t> Ids(const std::vector<Token>& tokens) {
  std::vector<int64_t> ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

std::vector<std::pair<int64_t, int64_t>> Spans(const std::vector<Token>& tokens) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const Token& t : tokens) spans.emplace_back(t.start, t.end);
  return spans;
}

std::vector<int64_t> FastIds(const Tokenizer& t, const std::string& bases) {
  std::vector<int64_t> ids;
  t.EncodeIds(bases, &ids);
  return ids;
}

// All k-mers over `order`, in the order itertools.product(order, repeat=k) lists them.
std::vector<std::string> Kmers(const std::string& order, int k) {
  std::vector<std::string> out{""};
  for (int i = 0; i < k; ++i) {
    std::vector<std::string> next;
    for (const auto& prefix : out) {
      for (char c : order) next.push_back(prefix + c);
    }
    out = std::move(next);
  }
  return out;
}

// A scratch package directory holding one vocab file, one token per line.
struct VocabDir {
  explicit VocabDir(const std::vector<std::string>& lines) {
    dir = dnaserve::testing::MakeTempDir("dnaserve-vocab-");
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    WriteFile(dir + "/vocab.txt", text);
  }
  ~VocabDir() { testing::RemoveScratch(dir); }
  std::string dir;
};

// The vocab.txt layout DNABERT ships: five specials, then every k-mer. The k-mers are listed in
// T, G, C, A order here so that ids can only come from the file, never from arithmetic.
std::vector<std::string> DnabertVocab(int k) {
  std::vector<std::string> lines{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const auto& kmer : Kmers("TGCA", k)) lines.push_back(kmer);
  return lines;
}

// The layout of the Nucleotide Transformer's vocab.txt (6-mers over A, T, C, G, then singles).
std::vector<std::string> NtVocab() {
  std::vector<std::string> lines{"<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"};
  for (const auto& kmer : Kmers("ATCG", 6)) lines.push_back(kmer);
  for (const char* single : {"A", "T", "C", "G", "N"}) lines.push_back(single);
  return lines;
}

int64_t IndexOf(const std::vector<std::string>& lines, const std::string& token) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == token) return static_cast<int64_t>(i);
  }
  return -1;
}

CATCH_TEST_CASE("char tokenizer: built-in ids, one token per base", "[tokenizer]") {
  auto t = Load(TokenizerSpec{TokenizerType::kChar, 1, 1, ""});
  const auto tokens = t->Encode("ACGTN");
  CATCH_CHECK(Ids(tokens) == std::vector<int64_t>{1, 2, 3, 4, 5});
  CATCH_CHECK(Spans(tokens) ==
              std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}});
  // Lower case is upper-cased; anything else counts as N.
  CATCH_CHECK(Ids(t->Encode("acgtnX-")) == std::vector<int64_t>{1, 2, 3, 4, 5, 5, 5});
  CATCH_CHECK(FastIds(*t, "acgtnX-") == Ids(t->Encode("acgtnX-")));
  CATCH_CHECK(t->EncodeWithSpecials("ACG") == t->Encode("ACG"));  // no template
  CATCH_CHECK(t->Encode("").empty());
  CATCH_CHECK(t->vocab_size() == 6);
  CATCH_CHECK_FALSE(t->pad_id().has_value());
  CATCH_CHECK(t->Describe() == "char");
}

CATCH_TEST_CASE("char tokenizer with a vocab file, refused when N has no token", "[tokenizer]") {
  VocabDir ok({"<pad>", "T", "G", "C", "A", "N"});
  auto t = Load(TokenizerSpec{TokenizerType::kChar, 1, 1, "vocab.txt"}, ok.dir);
  CATCH_CHECK(Ids(t->Encode("ACGTN")) == std::vector<int64_t>{4, 3, 2, 1, 5});
  CATCH_CHECK(t->vocab_size() == 6);

  VocabDir with_unk({"[PAD]", "[UNK]", "A", "C", "G", "T"});
  auto u = Load(TokenizerSpec{TokenizerType::kChar, 1, 1, "vocab.txt"}, with_unk.dir);
  CATCH_CHECK(Ids(u->Encode("ANT")) == std::vector<int64_t>{2, 1, 5});

  VocabDir no_n({"[PAD]", "A", "C", "G", "T"});
  const std::string error = LoadError({TokenizerType::kChar, 1, 1, "vocab.txt"}, no_n.dir);
  CATCH_CHECK(Contains(error, "vocab.txt: has no token for base 'N' and no unknown token"));
  CATCH_CHECK(Contains(LoadError({TokenizerType::kChar, 1, 1, "missing.txt"}, no_n.dir),
                       "missing.txt: cannot be read"));
}

CATCH_TEST_CASE("builtin k-mers: the generated packages' id scheme is unchanged", "[tokenizer]") {
  auto t = Load(TokenizerSpec{TokenizerType::kKmer, 6, 6, ""});
  CATCH_CHECK(t->vocab_size() == 2 + 4096);
  // AAAAAA = 0; AAAAAC = 1; TTTTTT = 4095; NAAAAA -> UNK; the 2 trailing bases are dropped.
  const auto tokens = t->Encode("AAAAAAAAAAACTTTTTTNAAAAAGG");
  CATCH_CHECK(Ids(tokens) == std::vector<int64_t>{2, 3, 2 + 4095, kKmerUnkId});
  CATCH_CHECK(Spans(tokens) ==
              std::vector<std::pair<int64_t, int64_t>>{{0, 6}, {6, 12}, {12, 18}, {18, 24}});
  CATCH_CHECK(FastIds(*t, "AAAAAAAAAAACTTTTTTNAAAAAGG") == Ids(tokens));
  CATCH_CHECK(t->Encode("ACGTA").empty());  // shorter than one k-mer
  CATCH_CHECK(t->Encode(std::string(15000, 'C')).size() == 2500);
  CATCH_CHECK(t->Encode(std::string(13, 'C')).size() == 2);
  CATCH_CHECK(t->EncodeWithSpecials("AAAAAA").size() == 1);
  CATCH_CHECK(t->Describe() == "kmer(k=6,stride=6)");

  auto overlapping = Load(TokenizerSpec{TokenizerType::kKmer, 3, 1, ""});
  // ACG = 0*16 + 1*4 + 2 = 6; CGT = 1*16 + 2*4 + 3 = 27
  const auto o = overlapping->Encode("acgt");
  CATCH_CHECK(Ids(o) == std::vector<int64_t>{2 + 6, 2 + 27});
  CATCH_CHECK(Spans(o) == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {1, 4}});
  // Stride 2 over 8 bases: k-mers at 0, 2, 4 (6 would need 9 bases).
  auto strided = Load(TokenizerSpec{TokenizerType::kKmer, 3, 2, ""});
  CATCH_CHECK(Spans(strided->Encode("ACGTACGT")) ==
              std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {2, 5}, {4, 7}});
  // An N anywhere in the k-mer, including its last base, makes it unknown.
  CATCH_CHECK(Ids(strided->Encode("AANAAAAN")) ==
              std::vector<int64_t>{kKmerUnkId, kKmerUnkId, 2 + 0});
}

CATCH_TEST_CASE("DNABERT: overlapping 6-mers from vocab.txt inside [CLS] ... [SEP]",
                "[tokenizer]") {
  const auto lines = DnabertVocab(6);
  VocabDir vocab(lines);
  TokenizerSpec spec{TokenizerType::kKmer, 6, 1, "vocab.txt", KmerConvention::kDnabert};
  auto t = Load(spec, vocab.dir);
  const std::string seq = "ACGTACGTNCA";  // 11 bases: 6-mers at 0..5
  const auto tokens = t->EncodeWithSpecials(seq);
  CATCH_REQUIRE(tokens.size() == 8);
  CATCH_CHECK(tokens[0] == Token{2, 0, 0, true});    // [CLS]
  CATCH_CHECK(tokens[7] == Token{3, 11, 11, true});  // [SEP]
  const char* expected_kmers[] = {"ACGTAC", "CGTACG", "GTACGT"};
  for (int i = 0; i < 3; ++i) {
    CATCH_CHECK(tokens[1 + i] == Token{IndexOf(lines, expected_kmers[i]), i, i + 6, false});
  }
  for (int i = 3; i < 6; ++i) {                               // TACGTN, ACGTNC, CGTNCA hold the N
    CATCH_CHECK(tokens[1 + i] == Token{1, i, i + 6, false});  // [UNK]
  }
  CATCH_CHECK(t->Encode(seq).size() == 6);  // what the model is fed: no template
  CATCH_CHECK(t->prefix_ids() == std::vector<int64_t>{2});
  CATCH_CHECK(t->suffix_ids() == std::vector<int64_t>{3});
  CATCH_CHECK(FastIds(*t, seq) == Ids(t->Encode(seq)));
  // Shorter than k: no k-mer at all, as DNABERT's seq2kmer gives.
  CATCH_CHECK(Ids(t->EncodeWithSpecials("ACGTA")) == std::vector<int64_t>{2, 3});
  CATCH_CHECK(t->vocab_size() == 5 + 4096);
  CATCH_CHECK_FALSE(t->pad_id().has_value());  // fixed count per window: never padded
  CATCH_CHECK(t->Describe() == "kmer(k=6,stride=1,dnabert)");

  // DNABERT-3 on the same vocab layout.
  const auto lines3 = DnabertVocab(3);
  VocabDir vocab3(lines3);
  auto t3 = Load({TokenizerType::kKmer, 3, 1, "vocab.txt", KmerConvention::kDnabert}, vocab3.dir);
  CATCH_CHECK(Ids(t3->Encode("GATTACA")) ==
              std::vector<int64_t>{IndexOf(lines3, "GAT"), IndexOf(lines3, "ATT"),
                                   IndexOf(lines3, "TTA"), IndexOf(lines3, "TAC"),
                                   IndexOf(lines3, "ACA")});
}

CATCH_TEST_CASE("DNABERT vocabularies that cannot cover ACGTN are refused", "[tokenizer]") {
  TokenizerSpec spec{TokenizerType::kKmer, 6, 1, "vocab.txt", KmerConvention::kDnabert};
  auto without = [](const std::string& token) {
    auto lines = DnabertVocab(6);
    lines.erase(lines.begin() + IndexOf(lines, token));
    return lines;
  };
  VocabDir no_unk(without("[UNK]"));
  CATCH_CHECK(Contains(LoadError(spec, no_unk.dir), "no unknown token ([UNK])"));
  VocabDir no_cls(without("[CLS]"));
  CATCH_CHECK(Contains(LoadError(spec, no_cls.dir), "lacks [CLS]"));
  // A missing k-mer is fine while [UNK] exists...
  VocabDir gap(without("GATTAC"));
  auto t = Load(spec, gap.dir);
  CATCH_CHECK(Ids(t->Encode("GATTAC")) == std::vector<int64_t>{1});
  // ...and fatal without it.
  auto lines = without("GATTAC");
  lines.erase(lines.begin() + IndexOf(lines, "[UNK]"));
  VocabDir gap_no_unk(lines);
  CATCH_CHECK(Contains(LoadError(spec, gap_no_unk.dir), "no token for the k-mer GATTAC"));
  // The convention needs the model's vocabulary.
  CATCH_CHECK(Contains(LoadError(spec, "/nonexistent"), "vocab.txt: cannot be read"));
  CATCH_CHECK(Contains(LoadError({TokenizerType::kKmer, 6, 1, "", KmerConvention::kDnabert}, ""),
                       "needs the model's vocab file"));
}

CATCH_TEST_CASE("Nucleotide Transformer: non-overlapping 6-mers, restarting after N",
                "[tokenizer]") {
  const auto lines = NtVocab();
  VocabDir vocab(lines);
  TokenizerSpec spec{TokenizerType::kKmer, 6, 6, "vocab.txt",
                     KmerConvention::kNucleotideTransformer};
  auto t = Load(spec, vocab.dir);
  // ACGTAC GGGTTT | A (leftover before the N) | N | CCCCCC | A A (leftover at the end)
  const std::string seq = "ACGTACGGGTTTANCCCCCCAA";
  const auto tokens = t->EncodeWithSpecials(seq);
  const std::vector<Token> expected = {
      {3, 0, 0, true},  // <cls>; no end token
      {IndexOf(lines, "ACGTAC"), 0, 6, false},
      {IndexOf(lines, "GGGTTT"), 6, 12, false},
      {IndexOf(lines, "A"), 12, 13, false},
      {IndexOf(lines, "N"), 13, 14, false},
      {IndexOf(lines, "CCCCCC"), 14, 20, false},
      {IndexOf(lines, "A"), 20, 21, false},
      {IndexOf(lines, "A"), 21, 22, false},
  };
  CATCH_CHECK(tokens == expected);
  CATCH_CHECK(FastIds(*t, seq) == Ids(t->Encode(seq)));
  // An N run is one token per N; a run shorter than k is all single nucleotides.
  CATCH_CHECK(Ids(t->Encode("NNTTN")) ==
              std::vector<int64_t>{IndexOf(lines, "N"), IndexOf(lines, "N"), IndexOf(lines, "T"),
                                   IndexOf(lines, "T"), IndexOf(lines, "N")});
  // Token counts depend on the Ns, so batches are padded with <pad>.
  CATCH_CHECK(t->pad_id() == std::optional<int64_t>(1));
  CATCH_CHECK(t->vocab_size() == static_cast<int64_t>(lines.size()));

  auto no_pad = lines;
  no_pad.erase(no_pad.begin() + IndexOf(no_pad, "<pad>"));
  VocabDir vocab_no_pad(no_pad);
  CATCH_CHECK(Contains(LoadError(spec, vocab_no_pad.dir), "needs <pad>"));
  auto no_n = lines;
  no_n.erase(no_n.begin() + IndexOf(no_n, "N"));
  no_n.erase(no_n.begin() + IndexOf(no_n, "<unk>"));
  VocabDir vocab_no_n(no_n);
  CATCH_CHECK(Contains(LoadError(spec, vocab_no_n.dir), "no single-nucleotide token for 'N'"));
  CATCH_CHECK(Contains(
      LoadError({TokenizerType::kKmer, 6, 3, "vocab.txt", KmerConvention::kNucleotideTransformer},
                vocab.dir),
      "stride must equal k"));
}

CATCH_TEST_CASE("builtin k-mers with a vocab file take its ids", "[tokenizer]") {
  const auto lines = DnabertVocab(3);
  VocabDir vocab(lines);
  auto t = Load({TokenizerType::kKmer, 3, 3, "vocab.txt"}, vocab.dir);
  CATCH_CHECK(Ids(t->Encode("GATNCA")) == std::vector<int64_t>{IndexOf(lines, "GAT"), 1});
  CATCH_CHECK(t->EncodeWithSpecials("GAT").size() == 1);  // builtin: never a template
}

// --- the manifest's "tokenizer" object -----------------------------------------------------------

const char kSplice[] = R"({
  "format_version": 1, "id": "splice-x", "task": "splice", "description": "d",
  "is_default": true, "tokenizer": TOKENIZER, "context_window_bp": 15000,
  "trained_window_bp": null, "output_labels": ["neither", "acceptor", "donor"],
  "trained": false, "weights": "model.pt", "model_card": "MODEL_CARD.md"
})";

StatusOr<ModelManifest> ParseWithTokenizer(const std::string& tokenizer) {
  std::string json = kSplice;
  json.replace(json.find("TOKENIZER"), 9, tokenizer);
  return ParseManifest(json, "splice-x");
}

std::string ManifestError(const std::string& tokenizer) {
  auto parsed = ParseWithTokenizer(tokenizer);
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

CATCH_TEST_CASE("manifest: tokenizer types and conventions", "[tokenizer][manifest]") {
  auto bpe = ParseWithTokenizer(R"({"type": "bpe", "file": "tokenizer.json"})");
  CATCH_REQUIRE(bpe.ok());
  CATCH_CHECK(bpe->tokenizer.type == TokenizerType::kBpe);
  CATCH_CHECK(bpe->tokenizer.file == "tokenizer.json");
  CATCH_CHECK(TokenizerLabel(bpe->tokenizer) == "bpe");

  auto dnabert = ParseWithTokenizer(
      R"({"type": "kmer", "k": 6, "stride": 1, "vocab": "vocab.txt", "convention": "dnabert"})");
  CATCH_REQUIRE(dnabert.ok());
  CATCH_CHECK(dnabert->tokenizer.convention == KmerConvention::kDnabert);
  CATCH_CHECK(dnabert->tokenizer.vocab_file == "vocab.txt");
  CATCH_CHECK(TokenizerLabel(dnabert->tokenizer) == "kmer(k=6,stride=1,dnabert)");

  auto nt = ParseWithTokenizer(R"({"type": "kmer", "k": 6, "stride": 6, "vocab": "vocab.txt",
                                   "convention": "nucleotide_transformer"})");
  CATCH_REQUIRE(nt.ok());
  CATCH_CHECK(TokenizerLabel(nt->tokenizer) == "kmer(k=6,stride=6,nucleotide_transformer)");

  auto builtin = ParseWithTokenizer(R"({"type": "kmer", "k": 6, "stride": 6})");
  CATCH_REQUIRE(builtin.ok());
  CATCH_CHECK(builtin->tokenizer.convention == KmerConvention::kBuiltin);
  CATCH_CHECK(ParseWithTokenizer(R"({"type": "kmer", "k": 6, "stride": 6,
                                     "convention": "builtin"})")
                  .ok());

  CATCH_CHECK(
      Contains(ManifestError(R"({"type": "bpe"})"), "missing required field 'tokenizer.file'"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "bpe", "file": "../tokenizer.json"})"),
                       "'tokenizer.file' must be a file name inside the package"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "bpe", "file": "t.json", "k": 6})"),
                       "type bpe takes no k/stride"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "bpe", "file": "t.json", "vocab": "v.txt"})"),
                       "'tokenizer.vocab' is only valid for type char or kmer"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "char", "convention": "dnabert"})"),
                       "'tokenizer.convention' is only valid for type kmer"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "kmer", "k": 6, "stride": 6, "file": "t.json"})"),
                       "'tokenizer.file' is only valid for type bpe"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "kmer", "k": 6, "stride": 1,
                                         "convention": "dnabert"})"),
                       "'tokenizer.vocab' is required for the dnabert convention"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "kmer", "k": 6, "stride": 1, "vocab": "v.txt",
                                         "convention": "nucleotide_transformer"})"),
                       "must equal 'tokenizer.k' for the nucleotide_transformer convention"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "kmer", "k": 6, "stride": 6,
                                         "convention": "esm"})"),
                       "'tokenizer.convention' must be \"builtin\", \"dnabert\" or"));
  CATCH_CHECK(Contains(ManifestError(R"({"type": "kmer", "k": 6, "stride": 6, "merges": 3})"),
                       "unknown field 'tokenizer.merges'"));
}

CATCH_TEST_CASE("a package whose tokenizer file is missing is rejected at scan", "[tokenizer]") {
  const std::string models = dnaserve::testing::MakeTempDir("dnaserve-tokpkg-");
  const std::string dir = models + "/splice-x";
  CATCH_REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  std::string json = kSplice;
  json.replace(json.find("TOKENIZER"), 9, R"({"type": "bpe", "file": "tokenizer.json"})");
  WriteFile(dir + "/manifest.json", json);
  WriteFile(dir + "/model.pt", "x");
  WriteFile(dir + "/MODEL_CARD.md", "card");
  auto loaded = LoadManifest(dir);
  CATCH_REQUIRE_FALSE(loaded.ok());
  CATCH_CHECK(Contains(loaded.status().message(),
                       "tokenizer file 'tokenizer.json' is missing from the package"));
  testing::RemoveScratch(models);
}

CATCH_TEST_CASE("a tokenizer that cannot encode ACGTN fails the model load: model_loading",
                "[tokenizer][registry]") {
  VocabDir no_n({"[PAD]", "A", "C", "G", "T"});
  ModelManifest m = testing::TestManifest(Task::kPromoter);
  m.tokenizer = {TokenizerType::kChar, 1, 1, "vocab.txt"};
  m.package_dir = no_n.dir;
  int loads = 0;
  ModelRegistry registry({m}, [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
    ++loads;
    return Internal("weights must not be loaded");
  });
  auto lease = registry.Acquire("");
  CATCH_REQUIRE_FALSE(lease.ok());
  CATCH_CHECK(lease.status().code() == ErrorCode::kModelLoading);
  CATCH_CHECK(lease.status().retry_after_seconds().has_value());
  CATCH_CHECK(Contains(lease.status().message(), "has no token for base 'N'"));
  CATCH_CHECK(loads == 0);  // refused before the weights
  CATCH_CHECK(registry.LoadedCount() == 0);

  // A good vocabulary: the lease carries the package's tokenizer.
  VocabDir good({"[PAD]", "A", "C", "G", "T", "N"});
  m.package_dir = good.dir;
  ModelRegistry ok({m}, [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
    return std::shared_ptr<Model>(std::make_shared<testing::FakeModel>(
        [](const std::vector<IdTensor>&) -> StatusOr<std::vector<FloatTensor>> {
          return std::vector<FloatTensor>{};
        }));
  });
  auto leased = ok.Acquire("");
  CATCH_REQUIRE(leased.ok());
  CATCH_REQUIRE(leased->tokenizer != nullptr);
  CATCH_CHECK(Ids(leased->tokenizer->Encode("NACGT")) == std::vector<int64_t>{5, 1, 2, 3, 4});
  auto warm = ok.Acquire("");
  CATCH_REQUIRE(warm.ok());
  CATCH_CHECK(warm->tokenizer == leased->tokenizer);  // loaded once, shared
}

}  // namespace
}  // namespace dnaserve::worker
