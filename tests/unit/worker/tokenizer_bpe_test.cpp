// BPE from Hugging Face tokenizer.json: the project's chr20 vocabulary checked against the frozen
// vectors of scripts/bpe_reference.py and against that reference run live on random sequences;
// every supported option, and the configurations that are refused at load.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/tokenize/bpe_tokenizer.h"

namespace dnaserve::worker {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kFixture[] = "chr20_bpe.tokenizer.json";
constexpr char kExpected[] = "chr20_bpe.expected.json";

std::string FixtureDir() { return dnaserve::testing::SourceDir() + "/tests/data/tokenizers"; }

TokenizerSpec BpeSpec(const std::string& file) {
  TokenizerSpec spec;
  spec.type = TokenizerType::kBpe;
  spec.file = file;
  return spec;
}

std::shared_ptr<const Tokenizer> Fixture() {
  auto t = LoadTokenizer(BpeSpec(kFixture), FixtureDir());
  if (!t.ok()) CATCH_FAIL(t.status().message());
  return *t;
}

std::shared_ptr<const Tokenizer> Parse(const std::string& json) {
  auto t = ParseHfBpeTokenizer(json, "tokenizer.json");
  if (!t.ok()) CATCH_FAIL(t.status().message());
  return *t;
}

std::string ParseError(const std::string& json) {
  auto t = ParseHfBpeTokenizer(json, "tokenizer.json");
  return t.ok() ? "<parsed>" : t.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Describe(const std::vector<Token>& tokens) {
  std::ostringstream out;
  for (const Token& t : tokens) {
    out << "[" << t.id << "," << t.start << "," << t.end << "," << t.special << "]";
  }
  return out.str();
}

std::vector<Token> TokensFromJson(const rapidjson::Value& array) {
  std::vector<Token> tokens;
  for (const auto& t : array.GetArray()) {
    tokens.push_back({t[0].GetInt64(), t[1].GetInt64(), t[2].GetInt64(), t[3].GetInt() != 0});
  }
  return tokens;
}

// The content tokens of a BPE encoding tile the input: no gap, no overlap.
void CheckTiles(const std::vector<Token>& tokens, int64_t length) {
  int64_t at = 0;
  for (const Token& t : tokens) {
    CATCH_CHECK(t.start == at);
    CATCH_CHECK(t.end > t.start);
    at = t.end;
  }
  CATCH_CHECK(at == length);
}

CATCH_TEST_CASE("BPE: chr20 vocabulary reproduces the Python reference's frozen vectors",
                "[tokenizer][bpe]") {
  auto bpe = Fixture();
  rapidjson::Document expected;
  expected.Parse(testing::ReadFile(FixtureDir() + "/" + kExpected).c_str());
  CATCH_REQUIRE_FALSE(expected.HasParseError());
  CATCH_REQUIRE(std::string(expected["tokenizer"].GetString()) == kFixture);
  const auto& cases = expected["cases"];
  CATCH_REQUIRE(cases.Size() >= 10);
  for (const auto& c : cases.GetArray()) {
    const std::string name = c["name"].GetString();
    const std::string sequence = c["sequence"].GetString();
    CATCH_INFO("case '" << name << "'");
    const std::vector<Token> want = TokensFromJson(c["tokens"]);
    const std::vector<Token> got = bpe->EncodeWithSpecials(sequence);
    CATCH_CHECK(Describe(got) == Describe(want));
    const std::vector<Token> content = bpe->Encode(sequence);
    CheckTiles(content, static_cast<int64_t>(sequence.size()));
    std::vector<int64_t> ids;
    bpe->EncodeIds(sequence, &ids);
    CATCH_CHECK(ids.size() == content.size());
  }
  // The [CLS] $A [SEP] template, the [PAD] padding id, and tokens longer than one base.
  CATCH_CHECK(bpe->prefix_ids() == std::vector<int64_t>{1});
  CATCH_CHECK(bpe->suffix_ids() == std::vector<int64_t>{2});
  CATCH_CHECK(bpe->pad_id() == std::optional<int64_t>(3));
  CATCH_CHECK(bpe->vocab_size() == 2048);
  CATCH_CHECK(bpe->Describe() == "bpe");
}

// --- the live reference ------------------------------------------------------------------------

// Sequences that stress merging: uniform, low-complexity repeats, N runs, lower case and
// characters outside the alphabet (which both implementations read as N).
std::vector<std::string> RandomSequences(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const std::string bases = "ACGT";
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    const int length = pick(5) == 0 ? pick(8) : pick(1500);
    std::string s;
    const int kind = pick(4);
    std::string unit;
    for (int u = 0, n = 1 + pick(12); u < n; ++u) unit += bases[pick(4)];
    while (static_cast<int>(s.size()) < length) {
      if (kind == 1) {
        s += unit;  // a tandem repeat
      } else if (kind == 2 && pick(40) == 0) {
        s += std::string(1 + pick(30), 'N');
      } else {
        s += bases[pick(4)];
      }
    }
    s.resize(static_cast<size_t>(length));
    if (kind == 3) {
      for (char& c : s) {
        if (pick(3) == 0) c = static_cast<char>(c - 'A' + 'a');
        if (pick(200) == 0) c = pick(2) ? 'n' : 'R';
      }
    }
    out.push_back(s);
  }
  return out;
}

// Runs scripts/bpe_reference.py encode over `sequences`; nullopt if it failed.
std::optional<std::vector<std::vector<Token>>> RunReference(const std::string& tokenizer_path,
                                                            const std::vector<std::string>& seqs,
                                                            std::string* why) {
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-bpe-ref-");
  std::string input;
  for (const auto& s : seqs) input += s + "\n";
  testing::WriteFile(dir + "/in.txt", input);
  const std::string command = std::string(kPython) + " " + dnaserve::testing::SourceDir() +
                              "/scripts/bpe_reference.py encode --tokenizer " + tokenizer_path +
                              " < " + dir + "/in.txt > " + dir + "/out.txt 2> " + dir + "/err.txt";
  if (std::system(command.c_str()) != 0) {
    *why = testing::ReadFile(dir + "/err.txt");
    return std::nullopt;
  }
  std::vector<std::vector<Token>> results;
  std::istringstream lines(testing::ReadFile(dir + "/out.txt"));
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    if (doc.HasParseError() || !doc.IsArray()) {
      *why = "unparsable reference output: " + line.substr(0, 200);
      return std::nullopt;
    }
    results.push_back(TokensFromJson(doc));
  }
  testing::RemoveScratch(dir);
  return results;
}

void CompareWithReference(const std::string& tokenizer_path, const Tokenizer& bpe,
                          const std::vector<std::string>& sequences) {
  std::string why;
  auto reference = RunReference(tokenizer_path, sequences, &why);
  CATCH_INFO(why);
  CATCH_REQUIRE(reference.has_value());
  CATCH_REQUIRE(reference->size() == sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) {
    CATCH_INFO("sequence " << i << ": " << sequences[i].substr(0, 120));
    CATCH_CHECK(Describe(bpe.EncodeWithSpecials(sequences[i])) == Describe((*reference)[i]));
  }
}

// A vocabulary with a continuing-subword prefix, a Lowercase normalizer, no token for N (so the
// unk token stands in, fused), merges as [a, b] pairs and an <s> $A </s> template.
const char kPrefixedVocab[] = R"({
  "normalizer": {"type": "Lowercase"},
  "pre_tokenizer": {"type": "WhitespaceSplit"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [2], "tokens": ["<s>"]},
                       "</s>": {"id": "</s>", "ids": [3], "tokens": ["</s>"]}}},
  "model": {"type": "BPE", "unk_token": "[UNK]", "fuse_unk": true,
    "continuing_subword_prefix": "##",
    "vocab": {"[UNK]": 0, "[PAD]": 1, "<s>": 2, "</s>": 3, "a": 4, "c": 5, "g": 6, "t": 7,
              "##a": 8, "##c": 9, "##g": 10, "##t": 11, "ac": 12, "##ac": 13, "acg": 14,
              "##gt": 15, "##acgt": 16, "##tt": 17, "##tttt": 18, "ca": 19, "gt": 20, "ta": 21,
              "##ca": 22, "##cag": 23},
    "merges": [["a", "##c"], ["##a", "##c"], ["ac", "##g"], ["##g", "##t"], ["##ac", "##gt"],
               ["##t", "##t"], ["##tt", "##tt"], ["c", "##a"], ["g", "##t"], ["t", "##a"],
               ["##c", "##a"], ["##ca", "##g"]]}
})";

CATCH_TEST_CASE("BPE: random sequences agree with the Python reference run live",
                "[tokenizer][bpe]") {
  if (::access(kPython, X_OK) != 0) {
    CATCH_WARN("skipped: " << kPython << " is not available to run scripts/bpe_reference.py");
    return;
  }
  // A fresh seed each run (the check is not only frozen vectors); DNASERVE_TOKENIZER_SEED
  // replays one.
  const char* env = std::getenv("DNASERVE_TOKENIZER_SEED");
  const uint32_t seed = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                            : static_cast<uint32_t>(std::random_device()());
  CATCH_INFO("DNASERVE_TOKENIZER_SEED=" << seed);
  const auto sequences = RandomSequences(seed, 60);

  CompareWithReference(FixtureDir() + "/" + kFixture, *Fixture(), sequences);

  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-bpe-prefixed-");
  testing::WriteFile(dir + "/tokenizer.json", kPrefixedVocab);
  CompareWithReference(dir + "/tokenizer.json", *Parse(kPrefixedVocab), sequences);
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("BPE: prefix, Lowercase, fused unknowns and pair-form merges", "[tokenizer][bpe]") {
  auto bpe = Parse(kPrefixedVocab);
  // a ##c ##g ##t -> ac ##g ##t -> acg ##t (rank 2 before rank 3)
  CATCH_CHECK(Describe(bpe->Encode("ACGT")) == "[14,0,3,0][11,3,4,0]");
  // Runs of N (no token of their own) become one fused [UNK].
  CATCH_CHECK(Describe(bpe->Encode("ANNNC")) == "[4,0,1,0][0,1,4,0][9,4,5,0]");
  CATCH_CHECK(Describe(bpe->EncodeWithSpecials("t")) == "[2,0,0,1][7,0,1,0][3,1,1,1]");
}

CATCH_TEST_CASE("BPE: \"a b\" and [a, b] merges give the same encodings", "[tokenizer][bpe]") {
  rapidjson::Document doc;
  doc.Parse(testing::ReadFile(FixtureDir() + "/" + kFixture).c_str());
  CATCH_REQUIRE_FALSE(doc.HasParseError());
  auto& merges = doc["model"]["merges"];
  CATCH_REQUIRE(merges[0].IsString());
  for (auto& m : merges.GetArray()) {
    std::string text = m.GetString();
    const size_t space = text.find(' ');
    rapidjson::Value pair(rapidjson::kArrayType);
    pair.PushBack(rapidjson::Value(text.substr(0, space).c_str(), doc.GetAllocator()),
                  doc.GetAllocator());
    pair.PushBack(rapidjson::Value(text.substr(space + 1).c_str(), doc.GetAllocator()),
                  doc.GetAllocator());
    m = pair;
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  auto pairs = Parse(buffer.GetString());
  auto strings = Fixture();
  for (const auto& s : RandomSequences(7, 20)) {
    CATCH_CHECK(Describe(pairs->EncodeWithSpecials(s)) == Describe(strings->EncodeWithSpecials(s)));
  }
}

// --- options and refusals on small hand-made vocabularies --------------------------------------

constexpr char kVocab[] = R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "N": 6,
                             "AC": 7, "CA": 8)";
constexpr char kMerges[] = R"(["A C"])";

// A minimal tokenizer.json: `model_extra` goes into "model", `top_extra` at the top level.
std::string Bpe(const std::string& model_extra = "", const std::string& top_extra = "",
                const std::string& vocab = kVocab, const std::string& merges = kMerges,
                const std::string& unk = R"("[UNK]")") {
  return "{" + top_extra + R"("model": {"type": "BPE", "unk_token": )" + unk + R"(, "vocab": {)" +
         vocab + R"(}, "merges": )" + merges + model_extra + "}}";
}

CATCH_TEST_CASE("BPE: lowest rank first, leftmost on ties", "[tokenizer][bpe]") {
  // "A C" has rank 0: ACA -> AC A.
  CATCH_CHECK(Describe(Parse(Bpe())->Encode("ACA")) == "[7,0,2,0][2,2,3,0]");
  // "C A" first: ACA -> A CA, although A C is further left.
  CATCH_CHECK(Describe(Parse(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4,
                                           "T": 5, "N": 6, "AC": 7, "CA": 8)",
                                 R"(["C A", "A C"])"))
                           ->Encode("ACA")) == "[2,0,1,0][8,1,3,0]");
  // Equal rank: the leftmost pair wins, and merged symbols do not merge again with that rule.
  auto aa = Parse(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "N": 6,
                                 "AA": 7, "AAAA": 8)",
                      R"(["A A", "AA AA"])"));
  CATCH_CHECK(Describe(aa->Encode("AAA")) == "[7,0,2,0][2,2,3,0]");
  CATCH_CHECK(Describe(aa->Encode("AAAAA")) == "[8,0,4,0][2,4,5,0]");
  CATCH_CHECK(aa->Encode("").empty());
  CATCH_CHECK(aa->EncodeWithSpecials("").empty());  // no template in this file
}

CATCH_TEST_CASE("BPE: supported options", "[tokenizer][bpe]") {
  // Unknown bases without fuse_unk: one [UNK] each.
  auto no_n = Parse(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5)", "[]"));
  CATCH_CHECK(Describe(no_n->Encode("ANN")) == "[2,0,1,0][0,1,2,0][0,2,3,0]");
  // dropout 0 is no dropout.
  CATCH_CHECK(ParseError(Bpe(R"(, "dropout": 0.0)")) == "<parsed>");
  // byte_fallback: N is spelled by its byte token.
  auto bytes =
      Parse(Bpe(R"(, "byte_fallback": true)", "",
                R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "<0x4E>": 6)", "[]"));
  CATCH_CHECK(Describe(bytes->Encode("AN")) == "[2,0,1,0][6,1,2,0]");
  // ignore_merges: a word that is a vocabulary token is taken whole.
  auto whole = Parse(Bpe(R"(, "ignore_merges": true)", "",
                         R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "N": 6,
                            "GATTACA": 7, "AC": 8)",
                         R"(["A C"])"));
  CATCH_CHECK(Describe(whole->Encode("GATTACA")) == "[7,0,7,0]");
  CATCH_CHECK(Describe(whole->Encode("GATTAC")).find("[8,4,6,0]") != std::string::npos);
  // end_of_word_suffix on the last base only.
  auto suffixed = Parse(Bpe(R"(, "end_of_word_suffix": "</w>")", "",
                            R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "N": 6,
                               "A</w>": 7, "C</w>": 8, "G</w>": 9, "T</w>": 10, "N</w>": 11,
                               "AC</w>": 12)",
                            R"(["A C</w>"])"));
  CATCH_CHECK(Describe(suffixed->Encode("GAC")) == "[4,0,1,0][12,1,3,0]");
  CATCH_CHECK(Describe(suffixed->Encode("C")) == "[8,0,1,0]");
  // padding section, BertProcessing, normalizer and pre-tokenizer sequences.
  auto bert = Parse(Bpe("", R"("padding": {"pad_id": 6, "pad_token": "N"},
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip"}]},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                                            {"type": "Digits"}]},
      "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 10], "cls": ["[CLS]", 9]},)"));
  CATCH_CHECK(bert->pad_id() == std::optional<int64_t>(6));
  CATCH_CHECK(Describe(bert->EncodeWithSpecials("AC")) == "[9,0,0,1][7,0,2,0][10,2,2,1]");
  CATCH_CHECK(bert->vocab_size() == 11);
  // ByteLevel with add_prefix_space: a "Ġ" symbol with no bases before the sequence.
  auto byte_level =
      Parse(Bpe("", R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true,
                                                       "trim_offsets": true, "use_regex": true},)",
                R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5, "N": 6,
                                 "\u0120": 7, "\u0120A": 8)",
                R"(["\u0120 A"])"));
  CATCH_CHECK(Describe(byte_level->Encode("AC")) == "[8,0,1,0][3,1,2,0]");
  CATCH_CHECK(Describe(byte_level->Encode("CA")) == "[7,0,0,0][3,0,1,0][2,1,2,0]");
}

CATCH_TEST_CASE("BPE: configurations refused at load, each with a clear reason",
                "[tokenizer][bpe]") {
  CATCH_CHECK(Parse(Bpe()) != nullptr);
  CATCH_CHECK(Contains(ParseError("{\"model\": "), "tokenizer.json: not valid JSON"));
  CATCH_CHECK(Contains(ParseError(R"({"model": {"type": "WordPiece", "vocab": {}}})"),
                       "model type 'WordPiece' is not supported (only BPE)"));
  CATCH_CHECK(Contains(ParseError(R"({"version": "1.0"})"), "missing 'model'"));
  CATCH_CHECK(Contains(ParseError(Bpe(R"(, "dropout": 0.1)")), "dropout makes encodings random"));
  CATCH_CHECK(Contains(ParseError(Bpe(R"(, "cache_capacity": 10)")),
                       "unknown BPE option 'model.cache_capacity'"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("extras": 1,)")), "unknown top-level field 'extras'"));
  CATCH_CHECK(
      Contains(ParseError(Bpe("", "", R"("[UNK]": 0, "A": 1, "C": 2)", "[]")), "no padding token"));
  CATCH_CHECK(Contains(ParseError(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4,
                                                 "T": 5, "N": 6, "AC": 7)",
                                      R"(["A Q"])")),
                       "merge 0 uses 'Q', which is not in the vocab"));
  CATCH_CHECK(Contains(ParseError(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4,
                                                 "T": 5, "N": 6)",
                                      R"(["A C"])")),
                       "merge 0 makes 'AC', which is not in the vocab"));
  CATCH_CHECK(Contains(ParseError(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4,
                                                 "T": 5, "N": 6)",
                                      R"(["A C G"])")),
                       "merge 0 (\"A C G\") is not of the form \"a b\""));
  CATCH_CHECK(Contains(ParseError(Bpe("", "", R"("[UNK]": 0, "[PAD]": 1, "A": 2)", R"([7])")),
                       "merge 0 must be \"a b\" or [\"a\", \"b\"]"));
  CATCH_CHECK(Contains(ParseError(Bpe("", "", kVocab, kMerges, R"("<unk>")")),
                       "'model.unk_token' \"<unk>\" is not in the vocab"));
  // The alphabet check: no N and nothing to stand in for it.
  const std::string no_n_no_unk =
      R"({"model": {"type": "BPE", "unk_token": null, "merges": [],
          "vocab": {"[PAD]": 0, "A": 1, "C": 2, "G": 3, "T": 4}}})";
  CATCH_CHECK(Contains(ParseError(no_n_no_unk),
                       "the vocab has no token for the base 'N' at the start of a word and there "
                       "is no unk_token"));
  // With a continuing-subword prefix a base needs its "##" form too.
  CATCH_CHECK(
      Contains(ParseError(Bpe(R"(, "continuing_subword_prefix": "##")", "", kVocab, "[]", "null")),
               "no token for the base 'A' inside a word"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("normalizer": {"type": "Replace", "pattern": "A",
                                                            "content": "G"},)")),
                       "normalizer 'Replace' is not supported"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("pre_tokenizer": {"type": "Metaspace"},)")),
                       "pre_tokenizer 'Metaspace' is not supported"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("post_processor": {"type": "TemplateProcessing",
                                              "single": [], "special_tokens": {}},)")),
                       "must hold $A exactly once"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}],
      "special_tokens": {}},)")),
                       "uses special token '[CLS]' without listing it"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("post_processor": {"type": "RobertaProcessing"},)")),
                       "needs 'cls': [token, id]"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("added_tokens": [{"id": 9, "content": "NNNN",
                                                               "special": false}],)")),
                       "added token \"NNNN\" can occur in a DNA sequence"));
  CATCH_CHECK(Contains(ParseError(Bpe("", R"("added_tokens": [{"id": 9, "content": "[X]"}],)")),
                       "<parsed>"));
  CATCH_CHECK(
      Contains(ParseError(Bpe(R"(, "byte_fallback": true)", "",
                              R"("[UNK]": 0, "[PAD]": 1, "A": 2, "C": 3, "G": 4, "T": 5)", "[]")),
               "needs the unk_token while byte_fallback is on"));
  // Through LoadTokenizer: the file is named, and an id past the vocabulary is caught.
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-bpe-bad-");
  testing::WriteFile(dir + "/tokenizer.json", "not json");
  auto bad = LoadTokenizer(BpeSpec("tokenizer.json"), dir);
  CATCH_REQUIRE_FALSE(bad.ok());
  CATCH_CHECK(Contains(bad.status().message(), "tokenizer.json: not valid JSON"));
  auto missing = LoadTokenizer(BpeSpec("absent.json"), dir);
  CATCH_CHECK(Contains(missing.status().message(), "absent.json: cannot be read"));
  testing::RemoveScratch(dir);
}

// --- throughput (not a timed test: run `worker_tests "[tokenizer-bench]"` to print it) ---------

CATCH_TEST_CASE("tokenizer throughput on 500 kb", "[.][tokenizer-bench]") {
  // Real sequence for BPE (its merges depend on composition): the fixture's 4 kb chr20 slice,
  // repeated; random bases for the rest.
  rapidjson::Document expected;
  expected.Parse(testing::ReadFile(FixtureDir() + "/" + kExpected).c_str());
  std::string real;
  for (const auto& c : expected["cases"].GetArray()) {
    if (std::string(c["sequence"].GetString()).size() == 4000) real = c["sequence"].GetString();
  }
  CATCH_REQUIRE(real.size() == 4000);
  std::string chr20_like;
  while (chr20_like.size() < 500000) chr20_like += real;
  chr20_like.resize(500000);
  std::string random(500000, 'A');
  std::mt19937 rng(5);
  for (char& c : random) c = "ACGT"[rng() % 4];

  auto time_it = [](const Tokenizer& t, const std::string& s, const char* label) {
    double best = 1e9;
    size_t tokens = 0;
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<int64_t> ids;
      t.EncodeIds(s, &ids);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::min(best, seconds);
      tokens = ids.size();
    }
    CATCH_WARN(label << ": " << tokens << " tokens from " << s.size() << " bp in " << best * 1e3
                     << " ms = " << static_cast<int64_t>(tokens / best) << " tokens/s, "
                     << static_cast<int64_t>(s.size() / best) << " bp/s");
  };
  auto load = [](const TokenizerSpec& spec, const std::string& dir) {
    auto t = LoadTokenizer(spec, dir);
    CATCH_REQUIRE(t.ok());
    return *t;
  };
  time_it(*load({TokenizerType::kChar, 1, 1, ""}, ""), random, "char");
  time_it(*load({TokenizerType::kKmer, 6, 6, ""}, ""), random, "kmer builtin k=6 stride=6");
  time_it(*load({TokenizerType::kKmer, 6, 1, ""}, ""), random, "kmer builtin k=6 stride=1");
  const std::string vocab_dir = dnaserve::testing::MakeTempDir("dnaserve-bench-vocab-");
  {
    std::string dnabert = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    std::string nt = "<unk>\n<pad>\n<mask>\n<cls>\n<eos>\n<bos>\n";
    for (int v = 0; v < 4096; ++v) {
      std::string kmer;
      for (int i = 5; i >= 0; --i) kmer += "ACGT"[(v >> (2 * i)) & 3];
      dnabert += kmer + "\n";
      nt += kmer + "\n";
    }
    nt += "A\nT\nC\nG\nN\n";
    ::mkdir((vocab_dir + "/dnabert").c_str(), 0755);
    ::mkdir((vocab_dir + "/nt").c_str(), 0755);
    testing::WriteFile(vocab_dir + "/dnabert/vocab.txt", dnabert);
    testing::WriteFile(vocab_dir + "/nt/vocab.txt", nt);
  }
  time_it(*load({TokenizerType::kKmer, 6, 1, "vocab.txt", KmerConvention::kDnabert},
                vocab_dir + "/dnabert"),
          random, "kmer dnabert k=6 stride=1");
  time_it(*load({TokenizerType::kKmer, 6, 6, "vocab.txt", KmerConvention::kNucleotideTransformer},
                vocab_dir + "/nt"),
          random, "kmer nucleotide_transformer k=6");
  testing::RemoveScratch(vocab_dir);
  auto bpe = Fixture();
  time_it(*bpe, chr20_like, "bpe chr20 vocab (2,048), chr20 sequence");
  time_it(*bpe, random, "bpe chr20 vocab (2,048), random sequence");
  CheckTiles(bpe->Encode(chr20_like), 500000);

  // As the worker calls it: one 15,000 bp splice window (or 2,000 bp promoter window) at a time.
  for (size_t window : {15000, 2000}) {
    double best = 1e9;
    size_t tokens = 0;
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<int64_t> ids;
      for (size_t at = 0; at < chr20_like.size(); at += window) {
        bpe->EncodeIds(std::string_view(chr20_like).substr(at, window), &ids);
      }
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      tokens = ids.size();
    }
    CATCH_WARN("bpe chr20 vocab, chr20 sequence in "
               << window << " bp windows: " << tokens << " tokens in " << best * 1e3
               << " ms = " << static_cast<int64_t>(tokens / best) << " tokens/s");
  }
}

}  // namespace
}  // namespace dnaserve::worker
