// Plain structs the VCF layer exchanges with the annotation engine: no htslib types here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnaserve::variant {

// Per-job bounds on the input VCF (runner settings DNASERVE_VCF_*; runner/README.md "Bounds").
// Each one ends the job with 400 bad_request naming the bound, the record and the fix, before
// any model call; together they bound a job's time and memory whatever the file holds.
struct VcfLimits {
  int64_t max_records = 10'000'000;                         // records in the file
  int64_t max_alts_per_record = 1000;                       // ALT alleles of one record
  int64_t max_line_bytes = int64_t{8} << 20;                // one line, header or record
  int64_t max_header_bytes = int64_t{64} << 20;             // the whole header
  int64_t max_decompressed_bytes = int64_t{20} << 30;       // the whole file, decompressed
};

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

// Which training context(s) the expression model matched a tissue description to (the worker's
// description_match; worker/README.md "Description matching").
struct ContextMatch {
  std::string id;    // e.g. "E066"
  std::string name;  // e.g. "Liver"
  double similarity = 0;
};

struct TissueMatch {
  bool matched = false;
  std::vector<ContextMatch> contexts;  // best first
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
  // Per tissue (same order), the matched context; empty, or nullopt for a tissue, when the
  // model reports none. Written as ##dnaserve_description_match lines.
  std::vector<std::optional<TissueMatch>> tissue_matches;
};

}  // namespace dnaserve::variant
