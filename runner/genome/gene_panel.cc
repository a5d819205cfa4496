#include "runner/genome/gene_panel.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace dnaserve::variant {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "ENSG00000101076.17" -> "ENSG00000101076"; anything else unchanged.
std::string WithoutVersion(std::string_view id) {
  std::string upper = Upper(id);
  if (upper.rfind("ENSG", 0) != 0) return upper;
  size_t dot = upper.find('.');
  if (dot == std::string::npos) return upper;
  for (size_t i = dot + 1; i < upper.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(upper[i]))) return upper;
  }
  return dot + 1 < upper.size() ? upper.substr(0, dot) : upper;
}

bool LooksLikeEnsemblGene(std::string_view id) { return Upper(id).rfind("ENSG", 0) == 0; }

// "chr20 only" or "24 contigs": a gene missing from a one-chromosome catalogue (the default
// is chr20) is far more often off that chromosome than misspelt, and the caller should see so.
std::string Coverage(const std::vector<std::string>& contigs) {
  if (contigs.size() > 3) return std::to_string(contigs.size()) + " contigs";
  std::string out;
  for (size_t i = 0; i < contigs.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == contigs.size() ? " and " : ", ") + contigs[i];
  }
  return out + " only";
}

}  // namespace

StatusOr<GenePanel> ResolveGenePanel(const TssCatalogue& catalogue,
                                     const std::vector<std::string>& identifiers) {
  std::map<std::string, std::vector<std::string>> by_symbol;  // upper-cased symbol -> gene ids
  std::map<std::string, std::string> by_id;                   // versionless upper id -> gene id
  std::vector<std::string> contigs;                           // as named, in catalogue order
  for (const auto& site : catalogue.sites()) {
    if (std::find(contigs.begin(), contigs.end(), site.contig) == contigs.end()) {
      contigs.push_back(site.contig);
    }
    auto& ids = by_symbol[Upper(site.gene_symbol)];
    if (std::find(ids.begin(), ids.end(), site.gene_id) == ids.end()) ids.push_back(site.gene_id);
    by_id.emplace(WithoutVersion(site.gene_id), site.gene_id);
  }
  GenePanel panel;
  std::vector<std::string> unresolved;
  auto add = [&](const std::string& gene_id) {
    if (panel.members_.insert(gene_id).second) panel.gene_ids.push_back(gene_id);
  };
  for (const auto& identifier : identifiers) {
    if (LooksLikeEnsemblGene(identifier)) {
      auto it = by_id.find(WithoutVersion(identifier));
      if (it != by_id.end()) {
        add(it->second);
        continue;
      }
    } else {
      auto it = by_symbol.find(Upper(identifier));
      if (it != by_symbol.end()) {
        for (const auto& id : it->second) add(id);
        continue;
      }
    }
    unresolved.push_back(identifier);
  }
  if (!unresolved.empty()) {
    std::string list;
    for (const auto& u : unresolved) list += (list.empty() ? "'" : ", '") + u + "'";
    return BadRequest("options.genes: " + std::to_string(unresolved.size()) +
                      (unresolved.size() == 1 ? " identifier matches" : " identifiers match") +
                      " no gene in the " + catalogue.info().build + " start-site catalogue (" +
                      catalogue.info().transcripts + "; on " + Coverage(contigs) + "): " + list);
  }
  return panel;
}

}  // namespace dnaserve::variant
