#include "worker/tokenize/bpe_tokenizer.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "common/file_text.h"

namespace dnaserve::worker {
namespace {

// ByteLevel's image of the space it prepends with add_prefix_space ("Ġ", U+0120).
constexpr char kPrefixSpace[] = "\xC4\xA0";
constexpr int kPrefixSpaceIndex = 5;  // after A C G T N in the initial-symbol table

// Where a character sits in its word: decides the continuing-subword prefix (not on the first)
// and the end-of-word suffix (only on the last).
enum Position { kFirst = 0, kMiddle = 1, kLast = 2, kOnly = 3 };

// What one character of a word becomes before any merge, resolved once at load.
struct InitialSymbol {
  enum class Kind { kIds, kUnk, kDropped };
  Kind kind = Kind::kDropped;
  std::vector<int64_t> ids;  // kIds: the character's token (or its byte-fallback tokens)
};

struct MergeTarget {
  int32_t rank = 0;
  int64_t new_id = 0;
};

uint64_t PairKey(int64_t a, int64_t b) {
  return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
}

// Pair of ids -> merge, open addressing with linear probing: the encoder's hot lookup (a few per
// base), about twice as fast as std::unordered_map on 500 kb inputs.
class MergeTable {
 public:
  // A pair inserted twice keeps the later target.
  void Insert(uint64_t key, MergeTarget target) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    Slot& slot = slots_[Probe(key)];
    if (slot.key == kEmpty) ++size_;
    slot = {key, target};
  }

  const MergeTarget* Find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const Slot& slot = slots_[Probe(key)];
    return slot.key == kEmpty ? nullptr : &slot.target;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are < 2^31, so no pair has this key
  struct Slot {
    uint64_t key = kEmpty;
    MergeTarget target;
  };

  // The slot holding `key`, or the empty slot where it would go.
  size_t Probe(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask;
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    shift_ = 64;
    for (size_t n = slots_.size(); n > 1; n >>= 1) --shift_;
    for (const Slot& slot : old) {
      if (slot.key != kEmpty) slots_[Probe(slot.key)] = slot;
    }
  }

  std::vector<Slot> slots_;
  int shift_ = 64;
  size_t size_ = 0;
};

struct BpeConfig {
  std::unordered_map<std::string, int64_t> vocab;  // model.vocab
  std::unordered_map<std::string, int64_t> added;  // added_tokens content -> id
  MergeTable merges;
  std::optional<int64_t> unk_id;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::string prefix;  // continuing_subword_prefix
  std::string suffix;  // end_of_word_suffix
  bool lowercase = false;
  bool prefix_space = false;
  std::vector<int64_t> specials_before;  // post-processor tokens before the sequence
  std::vector<int64_t> specials_after;
  std::optional<int64_t> pad;
  int64_t vocab_size = 0;
  size_t longest_token = 0;     // bytes, for ignore_merges
  InitialSymbol initial[6][4];  // [A C G T N, prefix space][Position]
};

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeConfig config) : c_(std::move(config)) {
    set_template(c_.specials_before, c_.specials_after);
  }

  std::vector<Token> Encode(std::string_view bases) const override {
    std::vector<Token> tokens;
    if (bases.empty() || WholeWordToken(bases, &tokens)) return tokens;
    std::vector<Symbol> symbols;
    BuildSymbols(bases, &symbols);
    MergeAll(&symbols);
    tokens.reserve(symbols.size());
    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
      tokens.push_back({symbols[i].id, symbols[i].start, symbols[i].end, false});
    }
    return tokens;
  }

  int64_t vocab_size() const override { return c_.vocab_size; }
  std::optional<int64_t> pad_id() const override { return c_.pad; }
  std::string Describe() const override { return "bpe"; }

 private:
  struct Symbol {
    int64_t id;
    int64_t start;
    int64_t end;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;  // index of the left symbol
    int64_t new_id;
  };
  // std heaps are max-heaps: "less" here means "later", so the top is the lowest rank, then the
  // leftmost position (the tokenizers library's order).
  struct Later {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
  };

  const MergeTarget* FindMerge(int64_t a, int64_t b) const { return c_.merges.Find(PairKey(a, b)); }

  // ignore_merges: a word that is itself in the vocabulary is one token.
  bool WholeWordToken(std::string_view bases, std::vector<Token>* tokens) const {
    if (!c_.ignore_merges) return false;
    const size_t bytes = bases.size() + (c_.prefix_space ? 2 : 0);
    if (bytes > c_.longest_token) return false;
    std::string word = c_.prefix_space ? kPrefixSpace : "";
    for (char ch : bases) {
      char base = CanonicalBase(ch);
      word += c_.lowercase ? static_cast<char>(base - 'A' + 'a') : base;
    }
    auto it = c_.vocab.find(word);
    if (it == c_.vocab.end()) return false;
    tokens->push_back({it->second, 0, static_cast<int64_t>(bases.size()), false});
    return true;
  }

  void BuildSymbols(std::string_view bases, std::vector<Symbol>* symbols) const {
    const int64_t n = static_cast<int64_t>(bases.size());
    const int64_t shift = c_.prefix_space ? 1 : 0;
    const int64_t chars = n + shift;
    symbols->reserve(static_cast<size_t>(chars));
    bool last_was_unk = false;
    for (int64_t p = 0; p < chars; ++p) {
      const bool first = p == 0;
      const bool last = p == chars - 1;
      const Position position = first && last ? kOnly : first ? kFirst : last ? kLast : kMiddle;
      const bool space = p < shift;
      const int ch = space ? kPrefixSpaceIndex : BaseAlphabetIndex(bases[p - shift]);
      const int64_t start = space ? 0 : p - shift;
      const int64_t end = space ? 0 : start + 1;
      const InitialSymbol& initial = c_.initial[ch][position];
      switch (initial.kind) {
        case InitialSymbol::Kind::kIds:
          for (int64_t id : initial.ids) symbols->push_back({id, start, end, -1, -1, true});
          last_was_unk = false;
          break;
        case InitialSymbol::Kind::kUnk:
          if (c_.fuse_unk && last_was_unk) {
            symbols->back().end = end;
          } else {
            symbols->push_back({*c_.unk_id, start, end, -1, -1, true});
          }
          last_was_unk = true;
          break;
        case InitialSymbol::Kind::kDropped:  // as the tokenizers library does without unk_token
          break;
      }
    }
    const int32_t count = static_cast<int32_t>(symbols->size());
    for (int32_t i = 0; i < count; ++i) {
      (*symbols)[i].prev = i - 1;
      (*symbols)[i].next = i + 1 < count ? i + 1 : -1;
    }
  }

  void MergeAll(std::vector<Symbol>* symbols_ptr) const {
    std::vector<Symbol>& symbols = *symbols_ptr;
    std::vector<Candidate> heap;
    heap.reserve(symbols.size());
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      if (const MergeTarget* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
        heap.push_back({m->rank, static_cast<int32_t>(i), m->new_id});
      }
    }
    std::make_heap(heap.begin(), heap.end(), Later());
    auto push = [&](int32_t pos, const MergeTarget* m) {
      heap.push_back({m->rank, pos, m->new_id});
      std::push_heap(heap.begin(), heap.end(), Later());
    };
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), Later());
      const Candidate top = heap.back();
      heap.pop_back();
      Symbol& left = symbols[top.pos];
      if (!left.alive || left.next < 0) continue;
      Symbol& right = symbols[left.next];
      // A stale entry: one of the two symbols has changed since it was queued.
      const MergeTarget* current = FindMerge(left.id, right.id);
      if (current == nullptr || current->new_id != top.new_id) continue;
      left.id = top.new_id;
      left.end = right.end;
      right.alive = false;
      left.next = right.next;
      if (left.next >= 0) symbols[left.next].prev = top.pos;
      if (left.prev >= 0) {
        if (const MergeTarget* m = FindMerge(symbols[left.prev].id, left.id)) push(left.prev, m);
      }
      if (left.next >= 0) {
        if (const MergeTarget* m = FindMerge(left.id, symbols[left.next].id)) push(top.pos, m);
      }
    }
  }

  BpeConfig c_;
};

// --- tokenizer.json parsing -------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string name) : name_(std::move(name)) {}

  Status Bad(const std::string& message) const { return Internal(name_ + ": " + message); }

  Status Parse(std::string_view json, BpeConfig* c) {
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    if (doc.HasParseError()) {
      return Bad(std::string("not valid JSON (") +
                 rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
                 std::to_string(doc.GetErrorOffset()) + ")");
    }
    if (!doc.IsObject()) return Bad("the top level must be an object");
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
      const std::string key = it->name.GetString();
      static const char* kKnown[] = {"version",        "truncation", "padding",
                                     "added_tokens",   "normalizer", "pre_tokenizer",
                                     "post_processor", "decoder",    "model"};
      if (std::none_of(std::begin(kKnown), std::end(kKnown),
                       [&](const char* k) { return key == k; })) {
        return Bad("unknown top-level field '" + key + "'");
      }
    }
    if (!doc.HasMember("model")) return Bad("missing 'model'");
    DNASERVE_RETURN_IF_ERROR(ParseModel(doc["model"], c));
    if (doc.HasMember("added_tokens"))
      DNASERVE_RETURN_IF_ERROR(ParseAddedTokens(doc["added_tokens"], c));
    if (doc.HasMember("normalizer"))
      DNASERVE_RETURN_IF_ERROR(ParseNormalizer(doc["normalizer"], c));
    if (doc.HasMember("pre_tokenizer")) {
      DNASERVE_RETURN_IF_ERROR(ParsePreTokenizer(doc["pre_tokenizer"], c));
    }
    if (doc.HasMember("post_processor")) {
      DNASERVE_RETURN_IF_ERROR(ParsePostProcessor(doc["post_processor"], c));
    }
    if (doc.HasMember("padding")) DNASERVE_RETURN_IF_ERROR(ParsePadding(doc["padding"], c));
    // "truncation" and "decoder" do not change what the worker computes (see the header).
    return Finish(c);
  }

 private:
  std::optional<int64_t> Lookup(const BpeConfig& c, const std::string& token) const {
    if (auto it = c.added.find(token); it != c.added.end()) return it->second;
    if (auto it = c.vocab.find(token); it != c.vocab.end()) return it->second;
    return std::nullopt;
  }

  static bool IsId(const rapidjson::Value& v) { return v.IsUint64() && v.GetUint64() <= INT32_MAX; }

  static std::string Type(const rapidjson::Value& v) {
    if (!v.IsObject() || !v.HasMember("type") || !v["type"].IsString()) return "";
    return v["type"].GetString();
  }

  Status OptionalString(const rapidjson::Value& model, const char* key, std::string* out) {
    if (!model.HasMember(key) || model[key].IsNull()) return Status::Ok();
    if (!model[key].IsString()) return Bad(std::string("'model.") + key + "' must be a string");
    *out = model[key].GetString();
    return Status::Ok();
  }

  Status OptionalBool(const rapidjson::Value& model, const char* key, bool* out) {
    if (!model.HasMember(key) || model[key].IsNull()) return Status::Ok();
    if (!model[key].IsBool()) return Bad(std::string("'model.") + key + "' must be true or false");
    *out = model[key].GetBool();
    return Status::Ok();
  }

  Status ParseModel(const rapidjson::Value& model, BpeConfig* c) {
    if (!model.IsObject()) return Bad("'model' must be an object");
    const std::string type = Type(model);
    if (type != "BPE") {
      return Bad("model type '" + (type.empty() ? std::string("(none)") : type) +
                 "' is not supported (only BPE)");
    }
    for (auto it = model.MemberBegin(); it != model.MemberEnd(); ++it) {
      const std::string key = it->name.GetString();
      static const char* kKnown[] = {"type",
                                     "dropout",
                                     "unk_token",
                                     "continuing_subword_prefix",
                                     "end_of_word_suffix",
                                     "fuse_unk",
                                     "byte_fallback",
                                     "ignore_merges",
                                     "vocab",
                                     "merges"};
      if (std::none_of(std::begin(kKnown), std::end(kKnown),
                       [&](const char* k) { return key == k; })) {
        return Bad("unknown BPE option 'model." + key + "'");
      }
    }
    if (model.HasMember("dropout") && !model["dropout"].IsNull()) {
      if (!model["dropout"].IsNumber()) return Bad("'model.dropout' must be a number or null");
      if (model["dropout"].GetDouble() != 0.0) {
        return Bad("BPE dropout makes encodings random; 'model.dropout' must be null or 0");
      }
    }
    DNASERVE_RETURN_IF_ERROR(OptionalString(model, "continuing_subword_prefix", &c->prefix));
    DNASERVE_RETURN_IF_ERROR(OptionalString(model, "end_of_word_suffix", &c->suffix));
    DNASERVE_RETURN_IF_ERROR(OptionalBool(model, "fuse_unk", &c->fuse_unk));
    DNASERVE_RETURN_IF_ERROR(OptionalBool(model, "byte_fallback", &c->byte_fallback));
    DNASERVE_RETURN_IF_ERROR(OptionalBool(model, "ignore_merges", &c->ignore_merges));

    if (!model.HasMember("vocab") || !model["vocab"].IsObject()) {
      return Bad("'model.vocab' must be an object of token -> id");
    }
    for (auto it = model["vocab"].MemberBegin(); it != model["vocab"].MemberEnd(); ++it) {
      if (!IsId(it->value)) {
        return Bad("'model.vocab' id of '" + std::string(it->name.GetString()) +
                   "' must be an integer in [0, 2147483647]");
      }
      std::string token(it->name.GetString(), it->name.GetStringLength());
      c->longest_token = std::max(c->longest_token, token.size());
      c->vocab[std::move(token)] = static_cast<int64_t>(it->value.GetUint64());
    }
    if (c->vocab.empty()) return Bad("'model.vocab' is empty");

    std::string unk;
    DNASERVE_RETURN_IF_ERROR(OptionalString(model, "unk_token", &unk));
    if (model.HasMember("unk_token") && !model["unk_token"].IsNull()) {
      auto id = c->vocab.find(unk);
      if (id == c->vocab.end()) return Bad("'model.unk_token' \"" + unk + "\" is not in the vocab");
      c->unk_id = id->second;
    }

    if (!model.HasMember("merges") || !model["merges"].IsArray()) {
      return Bad("'model.merges' must be an array");
    }
    const auto& merges = model["merges"];
    for (rapidjson::SizeType i = 0; i < merges.Size(); ++i) {
      std::string a;
      std::string b;
      const auto& m = merges[i];
      if (m.IsString()) {
        // "a b": exactly one space, as the tokenizers library requires.
        std::string text(m.GetString(), m.GetStringLength());
        size_t space = text.find(' ');
        if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
          return Bad("merge " + std::to_string(i) + " (\"" + text +
                     "\") is not of the form \"a b\"");
        }
        a = text.substr(0, space);
        b = text.substr(space + 1);
      } else if (m.IsArray() && m.Size() == 2 && m[0].IsString() && m[1].IsString()) {
        a.assign(m[0].GetString(), m[0].GetStringLength());
        b.assign(m[1].GetString(), m[1].GetStringLength());
      } else {
        return Bad("merge " + std::to_string(i) + " must be \"a b\" or [\"a\", \"b\"]");
      }
      auto a_id = c->vocab.find(a);
      auto b_id = c->vocab.find(b);
      if (a_id == c->vocab.end() || b_id == c->vocab.end()) {
        return Bad("merge " + std::to_string(i) + " uses '" + (a_id == c->vocab.end() ? a : b) +
                   "', which is not in the vocab");
      }
      if (b.size() < c->prefix.size()) {
        return Bad("merge " + std::to_string(i) + ": '" + b +
                   "' is shorter than the continuing_subword_prefix");
      }
      const std::string merged = a + b.substr(c->prefix.size());
      auto new_id = c->vocab.find(merged);
      if (new_id == c->vocab.end()) {
        return Bad("merge " + std::to_string(i) + " makes '" + merged +
                   "', which is not in the vocab");
      }
      // A pair listed twice keeps its last rank, as in the tokenizers library's merge map.
      c->merges.Insert(PairKey(a_id->second, b_id->second),
                       {static_cast<int32_t>(i), new_id->second});
    }
    return Status::Ok();
  }

  Status ParseAddedTokens(const rapidjson::Value& added, BpeConfig* c) {
    if (added.IsNull()) return Status::Ok();
    if (!added.IsArray()) return Bad("'added_tokens' must be an array");
    for (const auto& t : added.GetArray()) {
      if (!t.IsObject() || !t.HasMember("id") || !IsId(t["id"]) || !t.HasMember("content") ||
          !t["content"].IsString()) {
        return Bad("every entry of 'added_tokens' needs an integer 'id' and a string 'content'");
      }
      std::string content(t["content"].GetString(), t["content"].GetStringLength());
      const bool dna_like =
          !content.empty() && std::all_of(content.begin(), content.end(), [](char ch) {
            return std::string_view("ACGTNacgtn").find(ch) != std::string_view::npos;
          });
      if (dna_like) {
        // The tokenizers library would cut the input at every occurrence of it.
        return Bad("added token \"" + content +
                   "\" can occur in a DNA sequence; such added tokens are not supported");
      }
      c->added[content] = static_cast<int64_t>(t["id"].GetUint64());
    }
    return Status::Ok();
  }

  Status ParseNormalizer(const rapidjson::Value& v, BpeConfig* c) {
    if (v.IsNull()) return Status::Ok();
    const std::string type = Type(v);
    if (type == "Sequence") {
      if (!v.HasMember("normalizers") || !v["normalizers"].IsArray()) {
        return Bad("normalizer Sequence needs a 'normalizers' array");
      }
      for (const auto& item : v["normalizers"].GetArray()) {
        DNASERVE_RETURN_IF_ERROR(ParseNormalizer(item, c));
      }
      return Status::Ok();
    }
    if (type == "Lowercase") {
      c->lowercase = true;
      return Status::Ok();
    }
    if (type == "BertNormalizer") {
      if (v.HasMember("lowercase") && v["lowercase"].IsBool() && v["lowercase"].GetBool()) {
        c->lowercase = true;
      }
      return Status::Ok();
    }
    // Unicode normal forms and stripping do not change a string of ASCII letters.
    static const char* kIdentity[] = {"NFC", "NFD", "NFKC", "NFKD", "Strip", "StripAccents"};
    if (std::any_of(std::begin(kIdentity), std::end(kIdentity),
                    [&](const char* k) { return type == k; })) {
      return Status::Ok();
    }
    return Bad("normalizer '" + (type.empty() ? std::string("(no type)") : type) +
               "' is not supported");
  }

  Status ParsePreTokenizer(const rapidjson::Value& v, BpeConfig* c) {
    if (v.IsNull()) return Status::Ok();
    const std::string type = Type(v);
    if (type == "Sequence") {
      if (!v.HasMember("pretokenizers") || !v["pretokenizers"].IsArray()) {
        return Bad("pre_tokenizer Sequence needs a 'pretokenizers' array");
      }
      for (const auto& item : v["pretokenizers"].GetArray()) {
        DNASERVE_RETURN_IF_ERROR(ParsePreTokenizer(item, c));
      }
      return Status::Ok();
    }
    if (type == "ByteLevel") {
      // ASCII letters map to themselves; the only effect is the optional leading "Ġ" (the
      // tokenizers library's default is to add it).
      bool add_prefix_space = true;
      if (v.HasMember("add_prefix_space") && v["add_prefix_space"].IsBool()) {
        add_prefix_space = v["add_prefix_space"].GetBool();
      }
      c->prefix_space = c->prefix_space || add_prefix_space;
      return Status::Ok();
    }
    // Each of these splits on whitespace, punctuation or digits: a run of letters stays one word.
    static const char* kOneWord[] = {"Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Digits",
                                     "Punctuation"};
    if (std::any_of(std::begin(kOneWord), std::end(kOneWord),
                    [&](const char* k) { return type == k; })) {
      return Status::Ok();
    }
    return Bad("pre_tokenizer '" + (type.empty() ? std::string("(no type)") : type) +
               "' is not supported");
  }

  // Specials a post-processor puts around the sequence, composed like processors.Sequence does.
  Status ParsePostProcessor(const rapidjson::Value& v, BpeConfig* c) {
    if (v.IsNull()) return Status::Ok();
    const std::string type = Type(v);
    std::vector<int64_t> before;
    std::vector<int64_t> after;
    if (type == "Sequence") {
      if (!v.HasMember("processors") || !v["processors"].IsArray()) {
        return Bad("post_processor Sequence needs a 'processors' array");
      }
      for (const auto& item : v["processors"].GetArray()) {
        DNASERVE_RETURN_IF_ERROR(ParsePostProcessor(item, c));
      }
      return Status::Ok();
    }
    if (type == "ByteLevel") return Status::Ok();
    if (type == "TemplateProcessing") {
      DNASERVE_RETURN_IF_ERROR(ParseTemplate(v, &before, &after));
    } else if (type == "BertProcessing" || type == "RobertaProcessing") {
      for (const char* key : {"cls", "sep"}) {
        if (!v.HasMember(key) || !v[key].IsArray() || v[key].Size() != 2 || !v[key][0].IsString() ||
            !IsId(v[key][1])) {
          return Bad("post_processor " + type + " needs '" + key + "': [token, id]");
        }
      }
      before.push_back(static_cast<int64_t>(v["cls"][1].GetUint64()));
      after.push_back(static_cast<int64_t>(v["sep"][1].GetUint64()));
    } else {
      return Bad("post_processor '" + (type.empty() ? std::string("(no type)") : type) +
                 "' is not supported");
    }
    c->specials_before.insert(c->specials_before.begin(), before.begin(), before.end());
    c->specials_after.insert(c->specials_after.end(), after.begin(), after.end());
    return Status::Ok();
  }

  // "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}, ...], with the ids
  // of each special token in "special_tokens": {"[CLS]": {"ids": [1], ...}}.
  Status ParseTemplate(const rapidjson::Value& v, std::vector<int64_t>* before,
                       std::vector<int64_t>* after) {
    if (!v.HasMember("single") || !v["single"].IsArray()) {
      return Bad("post_processor TemplateProcessing needs a 'single' array");
    }
    int sequences = 0;
    for (const auto& piece : v["single"].GetArray()) {
      if (piece.IsObject() && piece.HasMember("Sequence")) {
        const auto& seq = piece["Sequence"];
        if (!seq.IsObject() || !seq.HasMember("id") || !seq["id"].IsString() ||
            std::string(seq["id"].GetString()) != "A") {
          return Bad("TemplateProcessing 'single' may only hold the sequence $A");
        }
        ++sequences;
        continue;
      }
      if (!piece.IsObject() || !piece.HasMember("SpecialToken") ||
          !piece["SpecialToken"].IsObject() || !piece["SpecialToken"].HasMember("id") ||
          !piece["SpecialToken"]["id"].IsString()) {
        return Bad("TemplateProcessing 'single' entries must be Sequence or SpecialToken");
      }
      const std::string name = piece["SpecialToken"]["id"].GetString();
      if (!v.HasMember("special_tokens") || !v["special_tokens"].IsObject() ||
          !v["special_tokens"].HasMember(name.c_str())) {
        return Bad("TemplateProcessing uses special token '" + name +
                   "' without listing it in 'special_tokens'");
      }
      const auto& entry = v["special_tokens"][name.c_str()];
      if (!entry.IsObject() || !entry.HasMember("ids") || !entry["ids"].IsArray() ||
          entry["ids"].Empty()) {
        return Bad("TemplateProcessing special token '" + name + "' needs a non-empty 'ids' list");
      }
      for (const auto& id : entry["ids"].GetArray()) {
        if (!IsId(id)) return Bad("TemplateProcessing special token '" + name + "' has a bad id");
        (sequences == 0 ? before : after)->push_back(static_cast<int64_t>(id.GetUint64()));
      }
    }
    if (sequences != 1) return Bad("TemplateProcessing 'single' must hold $A exactly once");
    return Status::Ok();
  }

  Status ParsePadding(const rapidjson::Value& v, BpeConfig* c) {
    if (v.IsNull()) return Status::Ok();
    if (!v.IsObject()) return Bad("'padding' must be null or an object");
    if (v.HasMember("pad_id")) {
      if (!IsId(v["pad_id"])) return Bad("'padding.pad_id' must be an integer id");
      c->pad = static_cast<int64_t>(v["pad_id"].GetUint64());
    }
    return Status::Ok();
  }

  InitialSymbol Resolve(const BpeConfig& c, int ch, Position position) const {
    std::string text = ch == kPrefixSpaceIndex ? kPrefixSpace : std::string(1, kBaseAlphabet[ch]);
    if (c.lowercase && ch != kPrefixSpaceIndex) text[0] = static_cast<char>(text[0] - 'A' + 'a');
    if (position == kMiddle || position == kLast) text = c.prefix + text;
    if (position == kLast || position == kOnly) text += c.suffix;
    InitialSymbol s;
    if (auto it = c.vocab.find(text); it != c.vocab.end()) {
      s.kind = InitialSymbol::Kind::kIds;
      s.ids = {it->second};
      return s;
    }
    if (c.byte_fallback) {
      std::vector<int64_t> ids;
      for (unsigned char byte : text) {
        char code[8];
        std::snprintf(code, sizeof(code), "<0x%02X>", byte);
        auto it = c.vocab.find(code);
        if (it == c.vocab.end()) break;
        ids.push_back(it->second);
      }
      if (ids.size() == text.size()) {
        s.kind = InitialSymbol::Kind::kIds;
        s.ids = std::move(ids);
        return s;
      }
    }
    if (c.unk_id) s.kind = InitialSymbol::Kind::kUnk;
    return s;
  }

  Status Finish(BpeConfig* c) {
    static const char* kPositionName[] = {"at the start of a word", "inside a word",
                                          "at the end of a word", "as a one-base word"};
    for (int ch = 0; ch < 6; ++ch) {
      for (int p = kFirst; p <= kOnly; ++p) {
        c->initial[ch][p] = Resolve(*c, ch, static_cast<Position>(p));
      }
    }
    // Alphabet coverage: every base, wherever it can sit in a word, becomes some token. (Behind
    // ByteLevel's prefix space a base is never first.)
    for (int ch = 0; ch < 5; ++ch) {
      for (int p = kFirst; p <= kOnly; ++p) {
        if (c->prefix_space && (p == kFirst || p == kOnly)) continue;
        const InitialSymbol& s = c->initial[ch][p];
        const std::string base(1, kBaseAlphabet[ch]);
        if (s.kind == InitialSymbol::Kind::kDropped) {
          return Bad("the vocab has no token for the base '" + base + "' " + kPositionName[p] +
                     " and there is no unk_token, so such bases would be dropped");
        }
        if (s.kind == InitialSymbol::Kind::kIds && s.ids.size() != 1) {
          return Bad("byte fallback would split the base '" + base +
                     "' into several tokens; not supported");
        }
        if (s.kind == InitialSymbol::Kind::kUnk && c->byte_fallback) {
          // The library's unk handling interleaves with byte fallback in an order we do not copy.
          return Bad("the base '" + base +
                     "' needs the unk_token while byte_fallback is on; "
                     "not supported");
        }
      }
    }
    if (!c->pad) c->pad = Lookup(*c, "[PAD]");
    if (!c->pad) c->pad = Lookup(*c, "<pad>");
    if (!c->pad) {
      // BPE token counts vary from window to window, so rows of a batch need padding.
      return Bad("no padding token ([PAD], <pad> or a 'padding' section with pad_id)");
    }
    int64_t largest = *c->pad;
    for (const auto& [token, id] : c->vocab) largest = std::max(largest, id);
    for (const auto& [token, id] : c->added) largest = std::max(largest, id);
    for (int64_t id : c->specials_before) largest = std::max(largest, id);
    for (int64_t id : c->specials_after) largest = std::max(largest, id);
    c->vocab_size = largest + 1;
    return Status::Ok();
  }

  std::string name_;
};

}  // namespace

StatusOr<std::shared_ptr<const Tokenizer>> ParseHfBpeTokenizer(std::string_view json,
                                                               const std::string& name) {
  BpeConfig config;
  DNASERVE_RETURN_IF_ERROR(Parser(name).Parse(json, &config));
  return std::shared_ptr<const Tokenizer>(std::make_shared<BpeTokenizer>(std::move(config)));
}

StatusOr<std::shared_ptr<const Tokenizer>> ReadHfBpeTokenizer(const std::string& path,
                                                              const std::string& name) {
  auto text = ReadFileText(path);
  if (!text) return Internal(name + ": cannot be read");
  return ParseHfBpeTokenizer(*text, name);
}

}  // namespace dnaserve::worker
