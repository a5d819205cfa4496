// GFF3 writer. Features are given in 0-based half-open coordinates and written 1-based closed.
// Column 2 (source) is the id of the model that produced the feature.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnaserve::worker {

struct Gff3Feature {
  std::string seqid;
  std::string source;  // model id
  std::string type;    // Sequence Ontology term, e.g. "exon", "five_prime_cis_splice_site"
  int64_t start = 0;   // 0-based, half-open
  int64_t end = 0;
  std::optional<double> score;
  char strand = '.';
  std::optional<int> phase;                                     // CDS only: 0, 1 or 2
  std::vector<std::pair<std::string, std::string>> attributes;  // written in this order
};

struct Gff3Region {
  std::string seqid;
  int64_t start = 0;  // 0-based, half-open
  int64_t end = 0;
};

// "##gff-version 3", one ##sequence-region line per region, then one line per feature.
std::string WriteGff3(const std::vector<Gff3Region>& regions,
                      const std::vector<Gff3Feature>& features);

// Percent-encodes what GFF3 reserves in a column (tab, newline, CR, '%', control characters;
// in attribute values also ';', '=', '&', ','; in seqids anything outside
// [a-zA-Z0-9.:^*$@!+_?|-]).
enum class Gff3Field { kSeqid, kColumn, kAttribute };
std::string Gff3Escape(std::string_view text, Gff3Field field);

}  // namespace dnaserve::worker
