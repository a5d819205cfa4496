// Contig names as VCFs, catalogues and FASTAs spell them: "20" and "chr20" are one contig.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dnaserve::variant {

// The name without a leading "chr" (any case): "chr20" -> "20", "ChrX" -> "X", "20" -> "20".
// "chrM" and "MT" stay different: GRCh37's MT and hg19's chrM are different sequences.
std::string ContigKey(std::string_view name);

// The alias table: the ContigKey that `name` stands for on `assembly` (any case), with the
// assembly's RefSeq accessions resolved: on GRCh37 "NC_000020.10", "chr20" and "20" all give
// "20". An accession is specific to its assembly (NC_000020.11 is GRCh38's chr20), so it is
// resolved only on the assembly it belongs to; any other name is ContigKey(name).
std::string AssemblyContigKey(std::string_view assembly, std::string_view name);

// The names other than `fasta_name` that the contig answers to on `assembly`, for
// GET /v1/genomes: the chr/no-chr twin and, where the table has one, the RefSeq accession.
std::vector<std::string> ContigAliases(std::string_view assembly, std::string_view fasta_name);

}  // namespace dnaserve::variant
