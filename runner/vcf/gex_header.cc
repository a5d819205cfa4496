#include "runner/vcf/gex_header.h"

#include <cstdio>

#include "common/percent_encoding.h"

namespace dnaserve::variant {
namespace {

// For a quoted Description: backslash and quote escaped, control characters become spaces.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// For an unstructured ##key=value line: one line, no leading '<' (which would make it
// structured).
std::string Plain(const std::string& text) {
  std::string out;
  for (char c : text) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
  }
  if (!out.empty() && out[0] == '<') out.insert(out.begin(), ' ');
  return out.empty() ? "." : out;
}

}  // namespace

std::string InfoValueEscape(const std::string& text) {
  return PercentEncode(text, [](unsigned char c) {
    return c == ';' || c == '=' || c == ',' || c == '%' || c <= 0x20 || c == 0x7f;
  });
}

std::vector<std::string> GexHeaderLines(const GexHeader& header) {
  std::string per_tissue;
  for (size_t i = 0; i < header.tissues.size(); ++i) {
    per_tissue += "|log2FC_" + std::to_string(i + 1);
  }
  std::vector<std::string> lines = {
      // The field list ends the Description, as bcftools +split-vep reads everything after
      // "Format: " as field names; the prose comes before it.
      std::string("##INFO=<ID=") + kGexAnn + ",Number=.,Type=String,Description=" +
          Quoted(std::string("Predicted effect on expression per supported ALT allele and start "
                             "site within the window; log2FC_i is for the i-th ##GEXTissue, TSS "
                             "is 1-based, see ##GEXDistanceConvention, ##GEXConsequence and "
                             "##GEXFoldChange. Format: ") +
                 kGexAnnFields + per_tissue + "|" + kGexAnnLastField) +
          ">",
      std::string("##INFO=<ID=") + kGexNotRun +
          ",Number=0,Type=Flag,Description=\"No prediction was made for this record; see "
          "GEX_NOT_RUN_REASON\">",
      std::string("##INFO=<ID=") + kGexNotRunReason +
          ",Number=1,Type=String,Description=\"Why no prediction was made: OUTSIDE_TSS_WINDOW, "
          "NO_TSS_ON_CONTIG, NO_SUPPORTED_ALT or NO_REQUESTED_GENE_IN_WINDOW\">",
      std::string("##INFO=<ID=") + kGexSkippedAlt +
          ",Number=.,Type=String,Description=\"ALT alleles not scored: symbolic (<...>), "
          "breakend or spanning deletion (*)\">",
      "##GEXDistanceConvention=" + Plain(header.distance_convention),
      std::string("##GEXConsequence=") + kGexConsequenceConvention,
      "##GEXWindow=" + std::to_string(header.window),
      "##GEXFoldChange=" + Plain(header.fold_change),
      "##GEXGenomeBuild=" + Plain(header.build),
      "##GEXAnnotationRelease=" + Plain(header.annotation_release),
      "##GEXStartSites=" + Plain(header.transcripts) + " (catalogue md5 " +
          Plain(header.catalogue_md5) + ")",
  };
  std::string genes = "ALL";
  if (header.requested_genes) {
    genes.clear();
    for (const auto& g : *header.requested_genes) genes += (genes.empty() ? "" : ",") + g;
  }
  lines.push_back("##GEXRequestedGenes=" + Plain(genes));
  for (size_t i = 0; i < header.tissues.size(); ++i) {
    lines.push_back("##GEXTissue=<ID=" + std::to_string(i + 1) +
                    ",Description=" + Quoted(header.tissues[i]) + ">");
  }
  if (header.model) lines.push_back("##GEXModel=" + Plain(*header.model));
  for (size_t i = 0; i < header.tissue_matches.size() && i < header.tissues.size(); ++i) {
    const auto& match = header.tissue_matches[i];
    if (!match || match->contexts.empty()) continue;
    const ContextMatch& best = match->contexts.front();
    char similarity[32];
    std::snprintf(similarity, sizeof(similarity), "%.4f", best.similarity);
    lines.push_back("##dnaserve_description_match=<Tissue=" + std::to_string(i + 1) +
                    ",Description=" + Quoted(header.tissues[i]) +
                    ",Matched=" + (match->matched ? "true" : "false") +
                    ",Context=" + InfoValueEscape(best.id) + ",Name=" + Quoted(best.name) +
                    ",Similarity=" + similarity + ">");
  }
  return lines;
}

}  // namespace dnaserve::variant
