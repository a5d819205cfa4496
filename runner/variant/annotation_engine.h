// The annotation engine: pure logic over plain structs, no network and no files of its own.
// For each VCF record it finds the start sites within `window` bp on the record's contig,
// decides whether the record can be scored (and if not, why), scores every supported ALT allele
// against every counting start site in each requested tissue, and counts what happened.
//
// Reasons a record is not run, checked in this order (a panel restricts which genes count):
//   NO_TSS_ON_CONTIG            the catalogue has no start site on the record's contig
//   OUTSIDE_TSS_WINDOW          no start site within `window` bp of the REF allele
//   NO_REQUESTED_GENE_IN_WINDOW a panel was sent and none of its genes has a start site there
//   NO_SUPPORTED_ALT            no ALT allele is a sequence (all symbolic, breakend, '*' or '.')
// Unsupported alleles are listed in GEX_SKIPPED_ALT whether or not the record is run.
//
// Values: the model predicts v = log(TPM+1) for the reference and the alternate window; each is
// back-transformed as the expression task's expression_tpm is (TPM = max(0, e^v - 1)) and the
// value is log2((TPM_alt + c) / (TPM_ref + c)) with pseudo-count c = 1 TPM. With c = 1 this is
// (v_alt - v_ref) / ln 2 on the model's own scale, so near-zero predictions cannot blow a tiny
// absolute change up into a large fold change.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/variant_limits.h"
#include "runner/genome/gene_panel.h"
#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"
#include "runner/variant/expression_scorer.h"
#include "runner/variant/tss_window.h"
#include "runner/vcf/vcf_types.h"

namespace dnaserve::variant {

inline constexpr const char* kOutsideTssWindow = "OUTSIDE_TSS_WINDOW";
inline constexpr const char* kNoTssOnContig = "NO_TSS_ON_CONTIG";
inline constexpr const char* kNoSupportedAlt = "NO_SUPPORTED_ALT";
inline constexpr const char* kNoRequestedGeneInWindow = "NO_REQUESTED_GENE_IN_WINDOW";

// The request's bounds (common/variant_limits.h: the gateway publishes the same).
inline constexpr int64_t kMaxWindowBp = kMaxVariantWindowBp;
inline constexpr size_t kMaxTissues = kMaxVariantTissues;

// Windows one record sends to the scorer at once (times the tissues): 256 x 9,198 bp, about
// 2.4 MB, however many ALT alleles and start sites the record has.
inline constexpr size_t kMaxWindowsPerBatch = 256;

inline constexpr double kPseudoCountTpm = 1.0;
inline constexpr const char* kFoldChangeDefinition =
    "log2((TPM_alt + 1) / (TPM_ref + 1)) per tissue, TPM = max(0, exp(v) - 1) of the model's "
    "log(TPM+1) prediction v for the alternate and the reference 9198 bp windows centred on the "
    "TSS (gene sense strand); pseudo-count 1 TPM";

struct EngineOptions {
  int64_t window = 5000;
  std::vector<std::string> tissues;
  std::optional<GenePanel> panel;  // nullopt: every catalogue gene counts
};

// The spec's data.counts, plus two figures for logs.
struct AnnotationCounts {
  int64_t variants_in = 0;
  int64_t annotated = 0;
  int64_t not_run = 0;
  int64_t annotated_alleles = 0;
  int64_t associations = 0;
  std::map<std::string, int64_t> not_run_reasons;  // zero counts never appear
  int64_t skipped_alleles = 0;
  // Not in the response: records whose REF differs from the reference FASTA (a sign of another
  // build), and windows sent to the model (reference windows are scored once per site and
  // tissue; an alternate window equal to its reference window is not sent).
  int64_t reference_mismatches = 0;
  int64_t windows_scored = 0;
};

// What will happen to a record, decided without the model.
struct RecordPlan {
  std::string not_run_reason;             // empty: the record is scored
  std::vector<size_t> supported_alts;     // indices into VariantRecord::alts
  std::vector<std::string> skipped_alts;  // as written in the VCF
  std::vector<const StartSite*> sites;    // the start sites scored (panel applied)
  // Alternate windows the record will send to the model (an allele x site whose REF span
  // overlaps the site's 9,198 bp window and whose ALT differs from REF): an estimate made
  // without the reference, exact unless REF disagrees with the FASTA.
  int64_t changed_windows = 0;
  int64_t associations() const {
    return not_run_reason.empty() ? static_cast<int64_t>(supported_alts.size() * sites.size()) : 0;
  }
};

class AnnotationEngine {
 public:
  // Checks that the reference covers every catalogue contig and start site, and the options
  // (window 1-100,000, 1-16 tissues).
  static StatusOr<std::unique_ptr<AnnotationEngine>> Create(const TssCatalogue* catalogue,
                                                            const ReferenceGenome* reference,
                                                            ExpressionScorer* scorer,
                                                            EngineOptions options);

  // bad_request when the record's REF or an ALT is not a valid VCF allele. Reads no sequence.
  StatusOr<RecordPlan> Plan(const VariantRecord& record) const;
  // Plans, scores and counts one record; returns what the output record carries.
  StatusOr<RecordAnnotation> Annotate(const VariantRecord& record,
                                      const std::atomic<bool>* cancelled);

  const AnnotationCounts& counts() const { return counts_; }
  const EngineOptions& options() const { return options_; }

 private:
  AnnotationEngine(const TssCatalogue* catalogue, const ReferenceGenome* reference,
                   ExpressionScorer* scorer, EngineOptions options);
  FetchBases FetcherFor(const StartSite& site) const;

  const TssCatalogue* catalogue_;
  const ReferenceGenome* reference_;
  ExpressionScorer* scorer_;
  EngineOptions options_;
  AnnotationCounts counts_;
  // Reference-window predictions by start site index, one per tissue.
  std::unordered_map<size_t, std::vector<double>> reference_scores_;
};

// internal_error unless every catalogue contig is in the reference and every start site inside
// its contig (a catalogue/FASTA mismatch would otherwise score N-only windows). Create runs it;
// the gateway also runs it once at start-up so a mismatch fails fast.
Status CheckReferenceCoversCatalogue(const TssCatalogue& catalogue,
                                     const ReferenceGenome& reference);

// log2((TPM_alt + 1) / (TPM_ref + 1)) from two log(TPM+1) predictions.
double Log2FoldChange(double log_tpm_alt, double log_tpm_ref);

}  // namespace dnaserve::variant
