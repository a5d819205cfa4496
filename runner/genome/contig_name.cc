#include "runner/genome/contig_name.h"

#include <cctype>

#include "common/text.h"

namespace dnaserve::variant {

std::string ContigKey(std::string_view name) {
  if (name.size() > 3 && std::tolower(static_cast<unsigned char>(name[0])) == 'c' &&
      std::tolower(static_cast<unsigned char>(name[1])) == 'h' &&
      std::tolower(static_cast<unsigned char>(name[2])) == 'r') {
    name.remove_prefix(3);
  }
  return std::string(name);
}

}  // namespace dnaserve::variant

namespace dnaserve::variant {
namespace {

struct Accession {
  std::string_view key;        // ContigKey
  std::string_view accession;  // RefSeq
};

// GRCh37 (GRCh37.p13, GCF_000001405.25) primary-assembly chromosomes and the mitochondrion.
constexpr Accession kGrch37Accessions[] = {
    {"1", "NC_000001.10"},  {"2", "NC_000002.11"},  {"3", "NC_000003.11"},
    {"4", "NC_000004.11"},  {"5", "NC_000005.9"},   {"6", "NC_000006.11"},
    {"7", "NC_000007.13"},  {"8", "NC_000008.10"},  {"9", "NC_000009.11"},
    {"10", "NC_000010.10"}, {"11", "NC_000011.9"},  {"12", "NC_000012.11"},
    {"13", "NC_000013.10"}, {"14", "NC_000014.8"},  {"15", "NC_000015.9"},
    {"16", "NC_000016.9"},  {"17", "NC_000017.10"}, {"18", "NC_000018.9"},
    {"19", "NC_000019.9"},  {"20", "NC_000020.10"}, {"21", "NC_000021.8"},
    {"22", "NC_000022.10"}, {"X", "NC_000023.10"},  {"Y", "NC_000024.9"},
    {"MT", "NC_012920.1"},
};

bool IsGrch37(std::string_view assembly) { return EqualsIgnoringAsciiCase(assembly, "GRCh37"); }

}  // namespace

std::string AssemblyContigKey(std::string_view assembly, std::string_view name) {
  if (IsGrch37(assembly)) {
    for (const Accession& a : kGrch37Accessions) {
      if (EqualsIgnoringAsciiCase(name, a.accession)) return std::string(a.key);
    }
  }
  return ContigKey(name);
}

std::vector<std::string> ContigAliases(std::string_view assembly, std::string_view fasta_name) {
  const std::string key = ContigKey(fasta_name);
  std::vector<std::string> aliases;
  aliases.push_back(key == fasta_name ? "chr" + key : key);
  if (IsGrch37(assembly)) {
    for (const Accession& a : kGrch37Accessions) {
      if (a.key == key) aliases.emplace_back(a.accession);
    }
  }
  return aliases;
}

}  // namespace dnaserve::variant
