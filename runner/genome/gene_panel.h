// A request's `options.genes` resolved against the start-site catalogue.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "runner/genome/tss_catalogue.h"

namespace dnaserve::variant {

struct GenePanel {
  // Catalogue Ensembl gene ids, in the order the request first named them, without repeats.
  std::vector<std::string> gene_ids;

  bool Contains(const StartSite& site) const { return members_.count(site.gene_id) > 0; }

 private:
  friend StatusOr<GenePanel> ResolveGenePanel(const TssCatalogue&, const std::vector<std::string>&);
  std::set<std::string> members_;
};

// Each identifier is an HGNC symbol (any case) or an Ensembl gene id with or without its
// version suffix ("ENSG00000101076" and "ENSG00000101076.17" are one gene). A symbol naming
// several catalogue genes adds them all. Identifiers matching no catalogue gene are all named
// in one bad_request.
StatusOr<GenePanel> ResolveGenePanel(const TssCatalogue& catalogue,
                                     const std::vector<std::string>& identifiers);

}  // namespace dnaserve::variant
