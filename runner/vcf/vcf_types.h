// Plain structs the VCF layer exchanges with the annotation engine: no htslib types here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnaserve::variant {

// One input record, as far as the workflow needs it.
struct VariantRecord {
  int64_t number = 0;  // 1-based among the file's records
  std::string contig;
  int64_t pos = 0;  // VCF POS: 1-based position of the first REF base
  std::string ref;
  std::vector<std::string> alts;  // empty when ALT is '.'
};

// What the output carries for that record (INFO fields added to the input's own).
struct RecordAnnotation {
  std::vector<std::string> gex_ann;       // GEX_ANN entries
  std::string not_run_reason;             // non-empty: GEX_NOT_RUN + GEX_NOT_RUN_REASON
  std::vector<std::string> skipped_alts;  // GEX_SKIPPED_ALT
};

// The workflow's header lines (see GexHeaderLines).
struct GexHeader {
  std::vector<std::string> tissues;  // one log2 fold-change per tissue, in this order
  int64_t window = 0;
  std::string build;
  std::string annotation_release;
  std::string transcripts;
  std::string catalogue_md5;
  // Resolved Ensembl gene ids; nullopt when no panel was sent (every catalogue gene counts).
  std::optional<std::vector<std::string>> requested_genes;
  // Written as ##GEXModel only when a model actually scored something.
  std::optional<std::string> model;
  // The engine's definitions, recorded so the file explains itself.
  std::string distance_convention;
  std::string fold_change;
};

}  // namespace dnaserve::variant
