// Contig names as VCFs, catalogues and FASTAs spell them: "20" and "chr20" are one contig.
#pragma once

#include <string>
#include <string_view>

namespace dnaserve::variant {

// The name without a leading "chr" (any case): "chr20" -> "20", "ChrX" -> "X", "20" -> "20".
// "chrM" and "MT" stay different: GRCh37's MT and hg19's chrM are different sequences.
std::string ContigKey(std::string_view name);

}  // namespace dnaserve::variant
