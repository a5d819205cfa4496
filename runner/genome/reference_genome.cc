#include "runner/genome/reference_genome.h"

#include <htslib/faidx.h>
#include <htslib/hts_log.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

#include "common/digest.h"
#include "runner/genome/contig_name.h"

namespace dnaserve::variant {

constexpr int kBlockCacheBytes = 16 << 20;

struct ReferenceGenome::Faidx {
  faidx_t* fai = nullptr;
  ~Faidx() {
    if (fai) fai_destroy(fai);
  }
};

ReferenceGenome::ReferenceGenome(std::unique_ptr<Faidx> fai, std::string path)
    : fai_(std::move(fai)), path_(std::move(path)) {}
ReferenceGenome::~ReferenceGenome() = default;

StatusOr<std::unique_ptr<ReferenceGenome>> ReferenceGenome::Open(const std::string& fasta_path) {
  hts_set_log_level(HTS_LOG_OFF);  // htslib would print to stderr outside our log format
  auto fai = std::make_unique<Faidx>();
  fai->fai = fai_load3(fasta_path.c_str(), nullptr, nullptr, 0);  // 0: never write an index
  if (fai->fai == nullptr) {
    return Internal("reference FASTA " + fasta_path +
                    " cannot be opened with its index: it needs <fasta>.fai (and <fasta>.gzi "
                    "when bgzip-compressed), e.g. from `samtools faidx`");
  }
  // Keep recently decompressed bgzip blocks (64 KiB each): a record's windows, and the next
  // record's, mostly fall in the same few blocks.
  fai_set_cache_size(fai->fai, kBlockCacheBytes);
  std::unique_ptr<ReferenceGenome> genome(new ReferenceGenome(std::move(fai), fasta_path));
  const int n = faidx_nseq(genome->fai_->fai);
  for (int i = 0; i < n; ++i) {
    const char* name = faidx_iseq(genome->fai_->fai, i);
    Contig contig{name, faidx_seq_len(genome->fai_->fai, name)};
    genome->order_.push_back({contig.name, contig.length});
    genome->contigs_.emplace(ContigKey(name), std::move(contig));
  }
  if (genome->contigs_.empty()) return Internal("reference FASTA " + fasta_path + " is empty");
  return genome;
}

const ReferenceGenome::Contig* ReferenceGenome::Find(std::string_view contig) const {
  auto it = contigs_.find(ContigKey(contig));
  return it == contigs_.end() ? nullptr : &it->second;
}

std::optional<int64_t> ReferenceGenome::ContigLength(std::string_view contig) const {
  const Contig* c = Find(contig);
  if (!c) return std::nullopt;
  return c->length;
}

StatusOr<std::string> ReferenceGenome::Fetch(std::string_view contig, int64_t start,
                                             int64_t end) const {
  const Contig* c = Find(contig);
  if (!c) return Internal("contig '" + std::string(contig) + "' is not in the reference FASTA");
  if (end < start) return Internal("reference fetch with end before start");
  std::string out(static_cast<size_t>(end - start), 'N');
  const int64_t from = std::max<int64_t>(start, 0);
  const int64_t to = std::min<int64_t>(end, c->length);
  if (from >= to) return out;
  auto bases = ReadBases(*c, from, to);
  if (!bases.ok()) return bases.status();
  for (size_t i = 0; i < bases->size(); ++i) {
    char b = (*bases)[i];
    switch (b) {
      case 'A':
      case 'a':
        b = 'A';
        break;
      case 'C':
      case 'c':
        b = 'C';
        break;
      case 'G':
      case 'g':
        b = 'G';
        break;
      case 'T':
      case 't':
        b = 'T';
        break;
      default:
        b = 'N';
    }
    out[static_cast<size_t>(from - start) + i] = b;
  }
  return out;
}

StatusOr<std::string> ReferenceGenome::ReadBases(const Contig& c, int64_t from, int64_t to) const {
  hts_pos_t len = 0;
  char* bases = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bases = faidx_fetch_seq64(fai_->fai, c.name.c_str(), from, to - 1, &len);
  }
  std::unique_ptr<char, decltype(&std::free)> owned(bases, &std::free);
  if (bases == nullptr || len != to - from) {
    return Internal("reading " + c.name + ":" + std::to_string(from + 1) + "-" +
                    std::to_string(to) + " from the reference FASTA " + path_ + " failed");
  }
  return std::string(bases, static_cast<size_t>(len));
}

std::vector<ReferenceGenome::ContigInfo> ReferenceGenome::Contigs() const { return order_; }

StatusOr<std::string> ReferenceGenome::ContigMd5(std::string_view contig) const {
  const Contig* c = Find(contig);
  if (!c) return Internal("contig '" + std::string(contig) + "' is not in the reference FASTA");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!md || EVP_DigestInit_ex(md.get(), EVP_md5(), nullptr) != 1) {
    return Internal("MD5 is not available from OpenSSL");
  }
  constexpr int64_t kChunk = 1 << 20;
  for (int64_t from = 0; from < c->length; from += kChunk) {
    const int64_t to = std::min(c->length, from + kChunk);
    auto bases = ReadBases(*c, from, to);
    if (!bases.ok()) return bases.status();
    for (char& b : *bases) b = static_cast<char>(std::toupper(static_cast<unsigned char>(b)));
    if (EVP_DigestUpdate(md.get(), bases->data(), bases->size()) != 1) {
      return Internal("MD5 update failed");
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(md.get(), digest, &size) != 1) return Internal("MD5 final failed");
  return ToHex(digest, size);
}

}  // namespace dnaserve::variant
