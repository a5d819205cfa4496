// The start-site catalogue: which transcription start sites (TSS) the variant workflow scores
// against, loaded from the operator's catalogue file (format in runner/genome/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace dnaserve::variant {

enum class Strand { kPlus, kMinus };
inline char StrandChar(Strand s) { return s == Strand::kPlus ? '+' : '-'; }

struct StartSite {
  size_t index = 0;    // position in TssCatalogue::sites(); stable for the catalogue's life
  std::string contig;  // as the catalogue spells it
  int64_t tss = 0;     // 0-based position of the first transcribed base
  Strand strand = Strand::kPlus;
  std::string gene_symbol;    // HGNC symbol
  std::string gene_id;        // Ensembl gene id
  std::string transcript_id;  // "." in a gene-level catalogue
};

// What `meta.gene_annotation` reports.
struct CatalogueInfo {
  std::string build;               // e.g. "GRCh37"
  std::string annotation_release;  // where the coordinates come from
  std::string transcripts;         // which start sites these are (never claims MANE Select)
  std::string description;
  std::string md5;  // of the catalogue file's bytes, hex
  int64_t start_sites = 0;
};

class TssCatalogue {
 public:
  // Reads and checks the whole file; every problem names the file and line.
  static StatusOr<TssCatalogue> Load(const std::string& path);

  const CatalogueInfo& info() const { return info_; }
  const std::vector<StartSite>& sites() const { return sites_; }

  // True when any start site lies on `contig` ("20" and "chr20" match).
  bool HasContig(std::string_view contig) const;
  // Start sites on `contig` with first <= tss <= last (0-based), in tss order.
  std::vector<const StartSite*> SitesBetween(std::string_view contig, int64_t first,
                                             int64_t last) const;

 private:
  CatalogueInfo info_;
  std::vector<StartSite> sites_;
  // ContigKey -> indices into sites_, sorted by tss.
  std::unordered_map<std::string, std::vector<size_t>> by_contig_;
};

}  // namespace dnaserve::variant
