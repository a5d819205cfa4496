// The meta-information lines an annotated VCF carries: one ##INFO line per field the workflow
// adds and ##GEX* lines saying how the values were made.
#pragma once

#include <string>
#include <vector>

#include "runner/vcf/vcf_types.h"

namespace dnaserve::variant {

inline constexpr const char* kGexAnn = "GEX_ANN";
inline constexpr const char* kGexNotRun = "GEX_NOT_RUN";
inline constexpr const char* kGexNotRunReason = "GEX_NOT_RUN_REASON";
inline constexpr const char* kGexSkippedAlt = "GEX_SKIPPED_ALT";

// The GEX_ANN sub-fields before the per-tissue fold changes.
inline constexpr const char* kGexAnnFields =
    "Allele|Gene|Gene_ID|Transcript_ID|TSS|Strand|TSS_distance";

// Full lines, each starting "##". Free text (tissue descriptions, release names) is escaped so
// it cannot break a line or a quoted Description.
std::vector<std::string> GexHeaderLines(const GexHeader& header);

// Text safe inside a VCF INFO value: ';', '=', ',', whitespace and '%' are %-encoded (VCF 4.3).
std::string InfoValueEscape(const std::string& text);

}  // namespace dnaserve::variant
