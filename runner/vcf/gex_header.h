// The meta-information lines an annotated VCF carries: one ##INFO line per field the workflow
// adds and ##GEX* lines saying how the values were made.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner/vcf/vcf_types.h"

namespace dnaserve::variant {

inline constexpr const char* kGexAnn = "GEX_ANN";
inline constexpr const char* kGexNotRun = "GEX_NOT_RUN";
inline constexpr const char* kGexNotRunReason = "GEX_NOT_RUN_REASON";
inline constexpr const char* kGexSkippedAlt = "GEX_SKIPPED_ALT";

// The GEX_ANN sub-fields before the per-tissue fold changes (the contract's fields, in its
// order), and the one after them: `Consequence`, there because bcftools +split-vep (Debian's
// 1.16) refuses a field list without one. Last, so that no contract field moves; its values are
// the two Sequence Ontology terms of kGexConsequenceConvention, from TSS_distance alone.
inline constexpr const char* kGexAnnFields =
    "Allele|Gene|Gene_ID|Transcript_ID|TSS|Strand|TSS_distance";
inline constexpr const char* kGexAnnLastField = "Consequence";

// The Consequence of an entry: what its geometry says, nothing more (the catalogue has start
// sites only, no exon structure, so nothing past the TSS can be named more precisely).
inline constexpr const char* kConsequenceUpstream = "upstream_gene_variant";  // SO:0001631
inline constexpr const char* kConsequenceOther = "sequence_variant";          // SO:0001060
inline const char* GexConsequence(int64_t tss_distance) {
  return tss_distance < 0 ? kConsequenceUpstream : kConsequenceOther;
}
inline constexpr const char* kGexConsequenceConvention =
    "Consequence is upstream_gene_variant (SO:0001631) when the whole REF allele is 5' of the "
    "start site (TSS_distance < 0), else sequence_variant (SO:0001060): the catalogue holds start "
    "sites only, so no transcript part is claimed";

// Full lines, each starting "##". Free text (tissue descriptions, release names) is escaped so
// it cannot break a line or a quoted Description.
std::vector<std::string> GexHeaderLines(const GexHeader& header);

// Text safe inside a VCF INFO value: ';', '=', ',', whitespace and '%' are %-encoded (VCF 4.3).
std::string InfoValueEscape(const std::string& text);

}  // namespace dnaserve::variant
