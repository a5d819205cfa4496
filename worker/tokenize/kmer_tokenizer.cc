#include "worker/tokenize/kmer_tokenizer.h"

#include <array>

#include "worker/tokenize/vocab_file.h"

namespace dnaserve::worker {
namespace {

// The largest k whose vocabulary-based ids are tabulated (4^10 entries, 8 MB). DNABERT uses 3-6,
// the Nucleotide Transformer 6; the built-in scheme computes ids and takes up to 12.
constexpr int kMaxVocabK = 10;

std::string KmerString(uint64_t value, int k) {
  std::string s(static_cast<size_t>(k), 'A');
  for (int i = k - 1; i >= 0; --i, value >>= 2) s[i] = kBaseAlphabet[value & 3];
  return s;
}

class CharTokenizer final : public Tokenizer {
 public:
  CharTokenizer(std::array<int64_t, 5> ids, int64_t vocab_size, std::string label)
      : ids_(ids), vocab_size_(vocab_size), label_(std::move(label)) {}

  std::vector<Token> Encode(std::string_view bases) const override {
    std::vector<Token> tokens;
    tokens.reserve(bases.size());
    for (size_t i = 0; i < bases.size(); ++i) {
      const int64_t at = static_cast<int64_t>(i);
      tokens.push_back({IdOf(bases[i]), at, at + 1, false});
    }
    return tokens;
  }

  void EncodeIds(std::string_view bases, std::vector<int64_t>* out) const override {
    for (char c : bases) out->push_back(IdOf(c));
  }

  int64_t vocab_size() const override { return vocab_size_; }
  std::optional<int64_t> pad_id() const override { return std::nullopt; }
  std::string Describe() const override { return label_; }

 private:
  int64_t IdOf(char c) const { return ids_[BaseAlphabetIndex(c)]; }

  std::array<int64_t, 5> ids_;  // A, C, G, T, N
  int64_t vocab_size_;
  std::string label_;
};

// All three k-mer conventions. Segmentation:
//   fixed (builtin, dnabert): token t covers [t*stride, t*stride + k) while a whole k-mer fits.
//   nucleotide_transformer: the input is cut at every N; each N-free run is read as consecutive
//     k-mers from its own start, its last (< k) bases as single nucleotides; each N is one token.
// Ids: the built-in arithmetic scheme, or a vocabulary resolved into tables at load.
class KmerTokenizer final : public Tokenizer {
 public:
  struct Config {
    int k = 6;
    int stride = 6;
    bool split_at_n = false;              // the nucleotide_transformer segmentation
    bool builtin_ids = true;              // 2 + value / kKmerUnkId, no vocabulary
    std::vector<int64_t> kmer_ids;        // vocabulary: id of each ACGT k-mer by base-4 value
    std::shared_ptr<VocabFile> vocab;     // vocabulary: literal lookup of k-mers containing N
    int64_t unk_id = kKmerUnkId;          // k-mers (or bases) the vocabulary lacks
    std::array<int64_t, 5> single_ids{};  // split_at_n: A, C, G, T, N as single tokens
    std::optional<int64_t> cls_id;
    std::optional<int64_t> sep_id;
    std::optional<int64_t> pad;
    int64_t vocab_size = 0;
    std::string label;
  };

  explicit KmerTokenizer(Config config) : c_(std::move(config)) {
    std::vector<int64_t> prefix;
    std::vector<int64_t> suffix;
    if (c_.cls_id) prefix.push_back(*c_.cls_id);
    if (c_.sep_id) suffix.push_back(*c_.sep_id);
    set_template(std::move(prefix), std::move(suffix));
  }

  std::vector<Token> Encode(std::string_view bases) const override {
    std::vector<Token> tokens;
    tokens.reserve(bases.size() / c_.stride + 1);
    Segment(bases, [&](int64_t id, int64_t start, int64_t end) {
      tokens.push_back({id, start, end, false});
    });
    return tokens;
  }

  void EncodeIds(std::string_view bases, std::vector<int64_t>* out) const override {
    Segment(bases, [&](int64_t id, int64_t, int64_t) { out->push_back(id); });
  }

  int64_t vocab_size() const override { return c_.vocab_size; }
  std::optional<int64_t> pad_id() const override { return c_.pad; }
  std::string Describe() const override { return c_.label; }

 private:
  template <typename Emit>
  void Segment(std::string_view bases, Emit&& emit) const {
    if (c_.split_at_n) {
      SegmentAtN(bases, emit);
    } else {
      SegmentFixed(bases, emit);
    }
  }

  int64_t KmerId(uint64_t value) const {
    return c_.builtin_ids ? 2 + static_cast<int64_t>(value) : c_.kmer_ids[value];
  }

  // A k-mer containing N: the vocabulary's own entry for it if it has one, else unknown.
  int64_t KmerWithNId(std::string_view bases, int64_t start) const {
    if (c_.builtin_ids) return kKmerUnkId;
    std::string kmer(bases.substr(static_cast<size_t>(start), static_cast<size_t>(c_.k)));
    for (char& ch : kmer) ch = CanonicalBase(ch);
    return c_.vocab->Find(kmer).value_or(c_.unk_id);
  }

  template <typename Emit>
  void SegmentFixed(std::string_view bases, Emit&& emit) const {
    const int64_t n = static_cast<int64_t>(bases.size());
    const int64_t k = c_.k;
    const uint64_t mask = (uint64_t{1} << (2 * k)) - 1;
    uint64_t value = 0;   // the last k bases, base-4 (N read as A; last_n says whether one is in)
    int64_t last_n = -1;  // position of the latest N
    for (int64_t i = 0; i < n; ++i) {
      int b = BaseAlphabetIndex(bases[i]);
      if (b == 4) {
        last_n = i;
        b = 0;
      }
      value = ((value << 2) | static_cast<uint64_t>(b)) & mask;
      const int64_t start = i + 1 - k;
      if (start < 0 || start % c_.stride != 0) continue;
      emit(last_n >= start ? KmerWithNId(bases, start) : KmerId(value), start, start + k);
    }
  }

  template <typename Emit>
  void SegmentAtN(std::string_view bases, Emit&& emit) const {
    const int64_t n = static_cast<int64_t>(bases.size());
    const int64_t k = c_.k;
    int64_t i = 0;
    while (i < n) {
      if (BaseIndex(bases[i]) < 0) {
        emit(c_.single_ids[4], i, i + 1);
        ++i;
        continue;
      }
      int64_t run_end = i;
      while (run_end < n && BaseIndex(bases[run_end]) >= 0) ++run_end;
      int64_t p = i;
      for (; p + k <= run_end; p += k) {
        uint64_t value = 0;
        for (int64_t j = p; j < p + k; ++j) {
          value = (value << 2) | static_cast<uint64_t>(BaseAlphabetIndex(bases[j]));
        }
        emit(KmerId(value), p, p + k);
      }
      for (; p < run_end; ++p)
        emit(c_.single_ids[BaseAlphabetIndex(bases[p])], p, p + 1);
      i = run_end;
    }
  }

  Config c_;
};

Status Refuse(const std::string& name, const std::string& reason) {
  return Internal(name + ": " + reason);
}

}  // namespace

StatusOr<std::shared_ptr<const Tokenizer>> MakeCharTokenizer(const TokenizerSpec& spec,
                                                             const std::string& package_dir) {
  const std::string label = TokenizerLabel(spec);
  if (spec.vocab_file.empty()) {
    return std::shared_ptr<const Tokenizer>(
        std::make_shared<CharTokenizer>(std::array<int64_t, 5>{1, 2, 3, 4, 5}, 6, label));
  }
  auto vocab = VocabFile::Read(package_dir + "/" + spec.vocab_file, spec.vocab_file);
  if (!vocab.ok()) return vocab.status();
  const auto unk = vocab->FindAny({"[UNK]", "<unk>"});
  std::array<int64_t, 5> ids{};
  for (int b = 0; b < 5; ++b) {
    auto id = vocab->Find(std::string(1, kBaseAlphabet[b]));
    if (!id && !unk) {
      return Refuse(spec.vocab_file, std::string("has no token for base '") + kBaseAlphabet[b] +
                                         "' and no unknown token ([UNK] or <unk>)");
    }
    ids[b] = id ? *id : *unk;
  }
  return std::shared_ptr<const Tokenizer>(
      std::make_shared<CharTokenizer>(ids, vocab->size(), label));
}

StatusOr<std::shared_ptr<const Tokenizer>> MakeKmerTokenizer(const TokenizerSpec& spec,
                                                             const std::string& package_dir) {
  KmerTokenizer::Config c;
  c.k = spec.k;
  c.stride = spec.stride;
  c.label = TokenizerLabel(spec);
  const std::string name = spec.vocab_file.empty() ? "tokenizer" : spec.vocab_file;
  if (spec.k < 1 || spec.k > 12 || spec.stride < 1 || spec.stride > spec.k) {
    return Refuse(name, "k must be 1-12 and stride 1-k (got k=" + std::to_string(spec.k) +
                            ", stride=" + std::to_string(spec.stride) + ")");
  }
  const bool nt = spec.convention == KmerConvention::kNucleotideTransformer;
  const bool dnabert = spec.convention == KmerConvention::kDnabert;
  if (nt && spec.stride != spec.k) {
    return Refuse(name,
                  "the nucleotide_transformer convention reads non-overlapping k-mers "
                  "(stride must equal k)");
  }
  if (spec.vocab_file.empty()) {
    if (spec.convention != KmerConvention::kBuiltin) {
      return Refuse(name, "the " + c.label + " tokenizer needs the model's vocab file");
    }
    c.builtin_ids = true;
    c.vocab_size = 2 + (int64_t{1} << (2 * spec.k));
    return std::shared_ptr<const Tokenizer>(std::make_shared<KmerTokenizer>(std::move(c)));
  }
  if (spec.k > kMaxVocabK) {
    return Refuse(name, "k-mer vocabularies are supported up to k=" + std::to_string(kMaxVocabK));
  }
  auto read = VocabFile::Read(package_dir + "/" + spec.vocab_file, spec.vocab_file);
  if (!read.ok()) return read.status();
  c.vocab = std::make_shared<VocabFile>(std::move(read).value());
  const VocabFile& vocab = *c.vocab;
  c.builtin_ids = false;
  c.split_at_n = nt;
  c.vocab_size = vocab.size();

  // Each convention's own spelling of its special tokens.
  std::optional<int64_t> unk;
  if (dnabert) {
    unk = vocab.Find("[UNK]");
    c.cls_id = vocab.Find("[CLS]");
    c.sep_id = vocab.Find("[SEP]");
    if (!c.cls_id || !c.sep_id) {
      return Refuse(name,
                    "the dnabert convention wraps every input in [CLS] ... [SEP], and the "
                    "vocabulary lacks " +
                        std::string(c.cls_id ? "[SEP]" : "[CLS]"));
    }
  } else if (nt) {
    unk = vocab.Find("<unk>");
    c.cls_id = vocab.Find("<cls>");
    c.pad = vocab.Find("<pad>");
    if (!c.cls_id) {
      return Refuse(name,
                    "the nucleotide_transformer convention prepends <cls>, and the "
                    "vocabulary lacks it");
    }
    if (!c.pad) {
      // Token counts depend on where the Ns are, so windows of one batch need padding.
      return Refuse(name, "the nucleotide_transformer convention needs <pad> in the vocabulary");
    }
  } else {
    unk = vocab.FindAny({"[UNK]", "<unk>"});
  }
  const std::string unk_names = dnabert ? "[UNK]" : nt ? "<unk>" : "[UNK] or <unk>";
  c.unk_id = unk.value_or(-1);

  const uint64_t kmers = uint64_t{1} << (2 * spec.k);
  c.kmer_ids.resize(kmers);
  for (uint64_t v = 0; v < kmers; ++v) {
    const std::string kmer = KmerString(v, spec.k);
    auto id = vocab.Find(kmer);
    if (!id && !unk) {
      return Refuse(
          name, "has no token for the k-mer " + kmer + " and no unknown token (" + unk_names + ")");
    }
    c.kmer_ids[v] = id ? *id : *unk;
  }
  if (nt) {
    for (int b = 0; b < 5; ++b) {
      auto id = vocab.Find(std::string(1, kBaseAlphabet[b]));
      if (!id && !unk) {
        return Refuse(name, std::string("has no single-nucleotide token for '") + kBaseAlphabet[b] +
                                "' and no unknown token (<unk>)");
      }
      c.single_ids[b] = id ? *id : *unk;
    }
  } else if (!unk) {
    return Refuse(
        name, "has no unknown token (" + unk_names + "), which k-mers containing N are encoded as");
  }
  return std::shared_ptr<const Tokenizer>(std::make_shared<KmerTokenizer>(std::move(c)));
}

}  // namespace dnaserve::worker
