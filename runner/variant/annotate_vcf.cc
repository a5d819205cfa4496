#include "runner/variant/annotate_vcf.h"

#include "common/text.h"

#include <algorithm>
#include <unordered_set>

#include "runner/variant/tss_window.h"
#include "runner/vcf/gex_header.h"
#include "runner/vcf/vcf_rewriter.h"

namespace dnaserve::variant {
namespace {

constexpr double kCheckingShare = 5.0;  // percent of the run given to the first pass

Status Cancelled() { return Unavailable("the job was cancelled"); }

bool IsCancelled(const std::atomic<bool>* flag) { return flag && flag->load(); }

}  // namespace

StatusOr<AnnotateResult> AnnotateVcf(const AnnotateRequest& request) {
  auto engine = AnnotationEngine::Create(request.catalogue, request.reference, request.scorer,
                                         request.options);
  if (!engine.ok()) return engine.status();
  auto rewriter = VcfRewriter::Open(request.input_path, request.vcf_limits);
  if (!rewriter.ok()) return rewriter.status();
  auto report = [&](const AnnotationProgress& progress) {
    if (request.on_progress) request.on_progress(progress);
  };

  // Pass 1: every record parsed and planned (nothing scored), so bad input fails before any
  // model call and the work ahead is known.
  int64_t planned = 0;
  int64_t alternate_windows = 0;
  std::unordered_set<size_t> reference_sites;  // at most the catalogue's start sites
  Status checked = (*rewriter)->Check(
      [&](const VariantRecord& record) -> Status {
        if (IsCancelled(request.cancelled)) return Cancelled();
        auto plan = (*engine)->Plan(record);
        if (!plan.ok()) return plan.status();
        planned += plan->associations();
        if (plan->not_run_reason.empty()) {
          alternate_windows += plan->changed_windows;
          for (const StartSite* site : plan->sites) reference_sites.insert(site->index);
        }
        return Status::Ok();
      },
      [&](int64_t bytes_read, int64_t bytes_total) {
        AnnotationProgress p;
        p.bytes_read = bytes_read;
        p.bytes_total = bytes_total;
        // A gzip reader's offset is approximate: never report past the checking share.
        p.percent = bytes_total > 0
                        ? kCheckingShare * std::min(1.0, static_cast<double>(bytes_read) /
                                                             static_cast<double>(bytes_total))
                        : 0;
        report(p);
      });
  DNASERVE_RETURN_IF_ERROR(checked);
  // The model-call bound, before the first call: every window the file will send, once per
  // tissue (the scorer still enforces the allowance exactly, call by call).
  const int64_t allowance = request.scorer->CallAllowance();
  const int64_t needed = (alternate_windows + static_cast<int64_t>(reference_sites.size())) *
                         static_cast<int64_t>(request.options.tissues.size());
  if (allowance > 0 && needed > allowance) {
    return BadRequest("the job needs about " + GroupedThousands(needed) + " model calls (" +
                      GroupedThousands(alternate_windows) + " allele windows and " +
                      GroupedThousands(static_cast<int64_t>(reference_sites.size())) +
                      " reference windows, each once per tissue); at most " + GroupedThousands(allowance) +
                      " are allowed per job (this service's limit): narrow it with options.genes, "
                      "a smaller options.window, fewer tissues or a smaller VCF");
  }

  AnnotateResult result;
  if (planned > 0) {
    auto model = request.scorer->ModelId();
    if (!model.ok()) return model.status();
    result.model = *model;
  }
  GexHeader header;
  header.tissues = request.options.tissues;
  header.window = request.options.window;
  header.build = request.catalogue->info().build;
  header.annotation_release = request.catalogue->info().annotation_release;
  header.transcripts = request.catalogue->info().transcripts;
  header.catalogue_md5 = request.catalogue->info().md5;
  if (request.options.panel) header.requested_genes = request.options.panel->gene_ids;
  header.model = result.model;
  header.distance_convention = kDistanceConvention;
  header.fold_change = kFoldChangeDefinition;
  if (planned > 0) {
    // One extra model call per tissue, so the header can name the context each was matched to.
    for (const auto& tissue : request.options.tissues) {
      auto match = request.scorer->MatchTissue(tissue, request.cancelled);
      if (!match.ok()) return match.status();
      header.tissue_matches.push_back(std::move(match).value());
    }
  }
  DNASERVE_RETURN_IF_ERROR((*rewriter)->Begin(request.output_path, GexHeaderLines(header)));

  // Pass 2: score and write every record in order.
  const int64_t total = (*rewriter)->record_count();
  VariantRecord record;
  int64_t done = 0;
  while (true) {
    if (IsCancelled(request.cancelled)) return Cancelled();
    auto more = (*rewriter)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    auto annotation = (*engine)->Annotate(record, request.cancelled);
    if (!annotation.ok()) return annotation.status();
    DNASERVE_RETURN_IF_ERROR((*rewriter)->Write(*annotation));
    ++done;
    AnnotationProgress p;
    p.phase = AnnotationProgress::Phase::kScoring;
    p.records_done = done;
    p.records_total = total;
    // Records cost what they score; unscored ones are nearly free.
    const double work = planned > 0 ? static_cast<double>((*engine)->counts().associations) /
                                          static_cast<double>(planned)
                                    : static_cast<double>(done) / static_cast<double>(total);
    p.percent = kCheckingShare + (100.0 - kCheckingShare) * work;
    report(p);
  }
  DNASERVE_RETURN_IF_ERROR((*rewriter)->Finish());
  result.counts = (*engine)->counts();
  return result;
}

}  // namespace dnaserve::variant
