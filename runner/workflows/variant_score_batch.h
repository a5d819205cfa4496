// POST /v1/variants/score as an async batch job: more than 100 variants, or a VCF body (at most
// core::kMaxBatchScoreVariants). The variants are checked against the reference as a whole
// (so a duplicate names its first occurrence anywhere in the job), then scored in chunks of
// kBatchChunkVariants by the sync path's own ScoreVariants (variant_scoring.h): a variant gets
// the same windows, worker calls and rounding alone, in a sync request, or inside a job.
//
// Checkpoints: each chunk's rendered results are a job file ("chunk-<n>", JobStore::PutFile)
// as soon as the chunk is scored. A runner that dies leaves its entry to another runner
// (runner/README.md "The queue"), which re-runs the job: chunks already stored are read, not
// scored again. The outputs are built only from the stored chunks, and every part of them is a
// function of the chunks and the request (no timings, no run ids), so a resumed job writes the
// same bytes as an uninterrupted one.
//
// Outputs:
// - the job's result (GET /v1/tasks/jobs/{id}): the JSON summary {data, meta}, data as the sync
//   answer's (task, assembly, scorers with each model id and package digest, counts, results
//   in request order) plus `errors_by_code` and `files`; meta as the sync answer's (the model
//   calls and times summed over the chunks, as their checkpoints recorded them) plus batch,
//   chunks and chunk_variants.
// - job file "annotated.vcf.gz" (GET /v1/tasks/jobs/{id}/files/annotated.vcf.gz): bgzip VCF,
//   one record per scored input variant (a multi-allelic record split per ALT) in request
//   order, CHROM/POS/REF/ALT as sent, with one SpliceAI-style INFO field per scorer
//   (DNASERVE_SPLICE, DNASERVE_EXPRESSION, DNASERVE_CHROMATIN, DNASERVE_PROMOTER) and
//   DNASERVE_ERROR for a variant not scored; each declared with "Format: a|b|...|Consequence"
//   so `bcftools +split-vep -l -a <field>` lists it (bcftools 1.16 wants a Consequence field:
//   it is `sequence_variant`, the Sequence Ontology's root term, as no scorer classifies).
//   `##dnaserve_scorer=<ID=...,Model=...,PackageDigest=...>` names every scorer's model. A
//   variant whose columns cannot form a VCF record (an unparseable string) is only in the JSON.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "core/admission/admission.h"
#include "core/jobs/job.h"
#include "core/jobs/job_store.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {

// Variants per checkpoint: the sync limit, so a chunk is exactly a sync request's work (at
// most 400 splice worker calls, a few seconds with the bundled model).
inline constexpr int64_t kBatchChunkVariants = 100;
inline constexpr const char* kAnnotatedVcfFile = "annotated.vcf.gz";

struct BatchScoringServices {
  ScoringServices scoring;
  core::JobStore* store = nullptr;  // checkpoints and the annotated VCF
  std::string scratch_dir;          // where htslib writes the bgzip output for a moment
};

StatusOr<core::JobOutput> RunVariantScoreBatch(const core::AdmittedVariantScore& admitted,
                                               const BatchScoringServices& services,
                                               const core::JobContext& context);

// The checkpoint file of chunk `n`.
std::string BatchChunkFile(int64_t n);

}  // namespace dnaserve::runner
