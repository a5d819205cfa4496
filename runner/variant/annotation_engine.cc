#include "runner/variant/annotation_engine.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>

#include "runner/variant/allele.h"
#include "runner/variant/tss_window.h"
#include "runner/vcf/gex_header.h"

namespace dnaserve::variant {
namespace {

std::string FormatValue(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.5g", value == 0.0 ? 0.0 : value);  // never "-0"
  return buf;
}

// True when REF disagrees with the reference at a position where both are called bases.
bool RefMismatch(std::string_view vcf_ref, std::string_view reference) {
  for (size_t i = 0; i < vcf_ref.size() && i < reference.size(); ++i) {
    char a = static_cast<char>(std::toupper(static_cast<unsigned char>(vcf_ref[i])));
    char b = reference[i];
    if (a != 'N' && b != 'N' && a != b) return true;
  }
  return false;
}

bool SameBases(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status CheckReferenceCoversCatalogue(const TssCatalogue& catalogue,
                                     const ReferenceGenome& reference) {
  for (const auto& site : catalogue.sites()) {
    auto length = reference.ContigLength(site.contig);
    if (!length) {
      return Internal("start-site catalogue contig " + site.contig +
                      " is not in the reference FASTA: the catalogue and FASTA do not match");
    }
    if (site.tss >= *length) {
      return Internal("start site of " + site.gene_symbol + " lies past the end of " + site.contig +
                      " in the reference FASTA: wrong build?");
    }
  }
  return Status::Ok();
}

double Log2FoldChange(double log_tpm_alt, double log_tpm_ref) {
  const double tpm_alt = std::max(0.0, std::expm1(log_tpm_alt));
  const double tpm_ref = std::max(0.0, std::expm1(log_tpm_ref));
  return std::log2((tpm_alt + kPseudoCountTpm) / (tpm_ref + kPseudoCountTpm));
}

AnnotationEngine::AnnotationEngine(const TssCatalogue* catalogue, const ReferenceGenome* reference,
                                   ExpressionScorer* scorer, EngineOptions options)
    : catalogue_(catalogue), reference_(reference), scorer_(scorer), options_(std::move(options)) {}

StatusOr<std::unique_ptr<AnnotationEngine>> AnnotationEngine::Create(
    const TssCatalogue* catalogue, const ReferenceGenome* reference, ExpressionScorer* scorer,
    EngineOptions options) {
  if (options.window < 1 || options.window > kMaxWindowBp) {
    return Internal("window must be 1-100,000 bp");
  }
  if (options.tissues.empty() || options.tissues.size() > kMaxTissues) {
    return Internal("between 1 and 16 tissues are needed");
  }
  DNASERVE_RETURN_IF_ERROR(CheckReferenceCoversCatalogue(*catalogue, *reference));
  return std::unique_ptr<AnnotationEngine>(
      new AnnotationEngine(catalogue, reference, scorer, std::move(options)));
}

FetchBases AnnotationEngine::FetcherFor(const StartSite& site) const {
  const ReferenceGenome* reference = reference_;
  const std::string* contig = &site.contig;
  return [reference, contig](int64_t start, int64_t end) {
    return reference->Fetch(*contig, start, end);
  };
}

StatusOr<RecordPlan> AnnotationEngine::Plan(const VariantRecord& record) const {
  auto where = [&] {
    return "record " + std::to_string(record.number) + " (" + record.contig + ":" +
           std::to_string(record.pos) + ")";
  };
  if (!IsSequenceAllele(record.ref)) {
    return BadRequest("input VCF " + where() + ": REF must be bases A, C, G, T or N");
  }
  RecordPlan plan;
  for (size_t i = 0; i < record.alts.size(); ++i) {
    switch (ClassifyAlt(record.alts[i])) {
      case AlleleKind::kSequence:
        plan.supported_alts.push_back(i);
        break;
      case AlleleKind::kSymbolic:
      case AlleleKind::kBreakend:
      case AlleleKind::kSpanningDeletion:
        plan.skipped_alts.push_back(record.alts[i]);
        break;
      case AlleleKind::kMissing:
        break;
      case AlleleKind::kInvalid:
        return BadRequest("input VCF " + where() + ": ALT allele " + std::to_string(i + 1) +
                          " is not a valid VCF allele");
    }
  }
  if (!catalogue_->HasContig(record.contig)) {
    plan.not_run_reason = kNoTssOnContig;
    return plan;
  }
  const int64_t start = record.pos - 1;
  const int64_t last = start + static_cast<int64_t>(record.ref.size()) - 1;
  auto nearby =
      catalogue_->SitesBetween(record.contig, start - options_.window, last + options_.window);
  if (nearby.empty()) {
    plan.not_run_reason = kOutsideTssWindow;
    return plan;
  }
  for (const StartSite* site : nearby) {
    if (!options_.panel || options_.panel->Contains(*site)) plan.sites.push_back(site);
  }
  if (plan.sites.empty()) {
    plan.not_run_reason = kNoRequestedGeneInWindow;
    return plan;
  }
  if (plan.supported_alts.empty()) {
    plan.not_run_reason = kNoSupportedAlt;
    return plan;
  }
  const int64_t ref_end = start + static_cast<int64_t>(record.ref.size());
  int64_t changing_alts = 0;
  for (size_t alt : plan.supported_alts) changing_alts += !SameBases(record.alts[alt], record.ref);
  for (const StartSite* site : plan.sites) {
    const PlusStrandSpan window = TssWindowSpan(site->tss, site->strand != Strand::kPlus);
    if (start < window.end && ref_end > window.start) {
      plan.changed_windows += changing_alts;
    }
  }
  return plan;
}

StatusOr<RecordAnnotation> AnnotationEngine::Annotate(const VariantRecord& record,
                                                      const std::atomic<bool>* cancelled) {
  auto planned = Plan(record);
  if (!planned.ok()) return planned.status();
  const RecordPlan& plan = *planned;
  RecordAnnotation out;
  out.skipped_alts = plan.skipped_alts;
  counts_.variants_in += 1;
  counts_.skipped_alleles += static_cast<int64_t>(plan.skipped_alts.size());
  if (!plan.not_run_reason.empty()) {
    out.not_run_reason = plan.not_run_reason;
    counts_.not_run += 1;
    counts_.not_run_reasons[plan.not_run_reason] += 1;
    return out;
  }

  const int64_t start = record.pos - 1;
  auto reference_bases =
      reference_->Fetch(record.contig, start, start + static_cast<int64_t>(record.ref.size()));
  if (!reference_bases.ok()) return reference_bases.status();
  if (RefMismatch(record.ref, *reference_bases)) counts_.reference_mismatches += 1;

  // Windows are built and scored in batches of at most kMaxWindowsPerBatch, so a record with
  // many ALT alleles near many start sites holds a bounded number of 9,198 bp windows (an
  // ordinary record is still one batch). A site's reference window goes into the batch before
  // its alternates, so its scores are known when their entries are written.
  const size_t tissues = options_.tissues.size();
  std::deque<std::string> windows;  // stable storage for the batch's string_views
  std::vector<ScoreRequest> batch;
  auto request = [&](std::string window) {
    windows.push_back(std::move(window));
    for (const auto& tissue : options_.tissues) batch.push_back({windows.back(), tissue});
    return batch.size() - tissues;  // index of this window's first tissue
  };

  struct Pending {
    size_t alt;
    const StartSite* site;
    std::optional<size_t> first;  // nullopt: alternate == reference window, value 0
  };
  std::vector<std::pair<const StartSite*, size_t>> uncached;  // site, first batch index
  std::vector<Pending> pending;
  // Entries in VCF allele order, then start-site order.
  std::vector<std::vector<std::string>> entries(record.alts.size());
  auto flush = [&]() -> Status {
    std::vector<double> values;
    if (!batch.empty()) {
      auto scored = scorer_->Score(batch, cancelled);
      if (!scored.ok()) return scored.status();
      if (scored->size() != batch.size()) {
        return Internal("the expression scorer returned " + std::to_string(scored->size()) +
                        " values for " + std::to_string(batch.size()) + " windows");
      }
      for (double v : *scored) {
        if (!std::isfinite(v)) return Internal("the expression model returned a non-finite value");
      }
      values = std::move(*scored);
      counts_.windows_scored += static_cast<int64_t>(windows.size());
    }
    for (const auto& [site, first] : uncached) {
      reference_scores_[site->index] =
          std::vector<double>(values.begin() + first, values.begin() + first + tissues);
    }
    for (const Pending& p : pending) {
      const StartSite& site = *p.site;
      const std::vector<double>& ref_scores = reference_scores_.at(site.index);
      const int64_t distance = TssDistance(site, start, record.ref.size());
      std::string entry = record.alts[p.alt] + "|" + site.gene_symbol + "|" + site.gene_id + "|" +
                          site.transcript_id + "|" + std::to_string(site.tss + 1) + "|" +
                          StrandChar(site.strand) + "|" + std::to_string(distance);
      for (size_t t = 0; t < tissues; ++t) {
        double change = p.first ? Log2FoldChange(values[*p.first + t], ref_scores[t]) : 0.0;
        entry += "|" + FormatValue(change);
      }
      entry += std::string("|") + GexConsequence(distance);
      entries[p.alt].push_back(std::move(entry));
    }
    windows.clear();
    batch.clear();
    uncached.clear();
    pending.clear();
    return Status::Ok();
  };
  auto make_room = [&]() -> Status {
    return windows.size() >= kMaxWindowsPerBatch ? flush() : Status::Ok();
  };

  for (const StartSite* site : plan.sites) {
    auto ref_window = ReferenceWindow(*site, FetcherFor(*site));
    if (!ref_window.ok()) return ref_window.status();
    if (reference_scores_.count(site->index) == 0) {
      DNASERVE_RETURN_IF_ERROR(make_room());
      uncached.emplace_back(site, request(*ref_window));
    }
    for (size_t alt : plan.supported_alts) {
      AlleleChange change{start, record.ref, record.alts[alt]};
      auto alt_window = AlternateWindow(*site, change, FetcherFor(*site));
      if (!alt_window.ok()) return alt_window.status();
      if (*alt_window == *ref_window) {
        pending.push_back({alt, site, std::nullopt});
      } else {
        DNASERVE_RETURN_IF_ERROR(make_room());
        pending.push_back({alt, site, std::optional<size_t>(request(std::move(*alt_window)))});
      }
    }
  }
  DNASERVE_RETURN_IF_ERROR(flush());
  for (auto& per_alt : entries) {
    for (auto& e : per_alt) out.gex_ann.push_back(std::move(e));
  }
  counts_.annotated += 1;
  counts_.annotated_alleles += static_cast<int64_t>(plan.supported_alts.size());
  counts_.associations += plan.associations();
  return out;
}

}  // namespace dnaserve::variant
