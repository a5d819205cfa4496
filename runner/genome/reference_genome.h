// The reference sequence the variant workflow builds its windows from: an operator-configured
// FASTA (bgzip with .fai and .gzi, or plain with .fai) read through htslib's faidx, which is used
// only in reference_genome.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace dnaserve::variant {

class ReferenceGenome {
 public:
  // Opens an indexed FASTA; never writes index files (a missing index is an error saying how to
  // make one).
  static StatusOr<std::unique_ptr<ReferenceGenome>> Open(const std::string& fasta_path);
  ~ReferenceGenome();
  ReferenceGenome(const ReferenceGenome&) = delete;
  ReferenceGenome& operator=(const ReferenceGenome&) = delete;

  // Length of `contig` ("20" and "chr20" match), nullopt when the FASTA does not have it.
  std::optional<int64_t> ContigLength(std::string_view contig) const;
  // Bases [start, end) (0-based) upper-cased; positions outside the contig, and any IUPAC code
  // other than A/C/G/T, read as N. Thread-safe.
  StatusOr<std::string> Fetch(std::string_view contig, int64_t start, int64_t end) const;

  struct ContigInfo {
    std::string name;  // as the FASTA spells it
    int64_t length = 0;
  };
  // Every contig, in the FASTA's order.
  std::vector<ContigInfo> Contigs() const;
  // Lower-case hex MD5 of the contig's sequence upper-cased, every IUPAC code kept (the VCF
  // ##contig md5 and refget convention). Reads the whole contig, 1 Mb at a time.
  StatusOr<std::string> ContigMd5(std::string_view contig) const;

 private:
  struct Faidx;
  struct Contig {
    std::string name;  // as the FASTA spells it
    int64_t length = 0;
  };
  ReferenceGenome(std::unique_ptr<Faidx> fai, std::string path);
  const Contig* Find(std::string_view contig) const;
  // The bases [from, to) of `c` (0 <= from < to <= length) as the FASTA holds them.
  StatusOr<std::string> ReadBases(const Contig& c, int64_t from, int64_t to) const;

  std::unique_ptr<Faidx> fai_;
  std::string path_;
  std::unordered_map<std::string, Contig> contigs_;  // by ContigKey
  std::vector<ContigInfo> order_;                     // as in the FASTA
  mutable std::mutex mu_;                            // faidx_t seeks a shared stream
};

}  // namespace dnaserve::variant
