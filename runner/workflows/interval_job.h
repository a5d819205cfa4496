// The job of a queued interval request (IntervalCommand, queue entry version 4): the checks
// that need the reference (assembly, contig and its aliases, the interval on the contig), the
// bases read from it (reverse-complemented for strand '-') with the model's context of real
// flank on each side (interval_edges.h), the prediction or find-genes run on them exactly as for
// a sequence and cut back to the interval, and every output position mapped to the contig
// (interval_coordinates.h) with the interval echoed in meta.interval.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "core/dispatch/inference_backend.h"
#include "core/jobs/job.h"
#include "core/render/json_writer.h"
#include "core/dispatch/model_catalogue.h"
#include "core/validation/genome_interval.h"
#include "dnaserve/jobs/v1/command.pb.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/answer_cache.h"
#include "runner/workflows/find_genes.h"
#include "runner/workflows/interval_answers.h"
#include "runner/workflows/variant_resources.h"

namespace dnaserve::runner {

// An interval resolved against a reference: what the echo reports and the bases were read from.
struct ResolvedInterval {
  core::GenomeInterval interval;  // as requested (contig as the client named it)
  std::string assembly;           // the held assembly's own spelling, "GRCh37"
  std::string reference_contig;   // the FASTA's name, "20"
  int64_t contig_length = 0;
};

// 422 validation_failed at [body, interval, assembly | contig | end] for an assembly no runner
// holds, a contig the assembly lacks (aliases resolved: chr20, 20, NC_000020.10), or an
// interval past the contig's end; 503 when this runner holds no reference at all.
StatusOr<ResolvedInterval> ResolveInterval(const core::GenomeInterval& interval,
                                           const VariantResources* resources);
// The interval's bases as the job analyses them: upper-case, N where the reference has no base
// or an IUPAC code, reverse-complemented for strand '-'.
StatusOr<std::string> IntervalBases(const ResolvedInterval& resolved,
                                    const variant::ReferenceGenome& reference);
// The analysed span [a, b) of the interval (a < 0 and b > length reach past its edges) read
// from the reference in the analysed orientation: N only past the contig's ends.
StatusOr<std::string> AnalysedSpanBases(const ResolvedInterval& resolved,
                                        const variant::ReferenceGenome& reference, int64_t a,
                                        int64_t b);
// find-genes by interval: the interval's analysed bases with the reference's flanks around
// them, wide enough for every TSS window of a gene inside the interval (clipped at the contig's
// ends, so the windows pad only what lies past them).
StatusOr<RegionFlanks> IntervalFlanks(const ResolvedInterval& resolved,
                                      const variant::ReferenceGenome& reference);
// The same with `flank_bp` on each side (clipped at the contig's ends): the prediction tasks'
// flanks, their model's context window (interval_edges.h).
StatusOr<RegionFlanks> IntervalFlanks(const ResolvedInterval& resolved,
                                      const variant::ReferenceGenome& reference, int64_t flank_bp);
// meta.interval: assembly, contig, reference_contig, start, end (1-based inclusive), strand,
// length; as JSON text, or written into `w` as an object.
std::string IntervalEcho(const ResolvedInterval& resolved);
void WriteIntervalEcho(core::JsonWriter& w, const ResolvedInterval& resolved);

// The answer cache of interval jobs (interval_answers.h) and the catalogue naming each model's
// package digest; either null: nothing is cached.
struct IntervalAnswerServices {
  AnswerCache* cache = nullptr;
  const core::ModelCatalogue* catalogue = nullptr;
  int64_t max_answer_bytes = kDefaultIntervalAnswerMaxBytes;  // larger answers are not kept
};

// A JSON answer carries meta.cached: true when every worker call was served from the cache.
StatusOr<std::unique_ptr<core::Job>> BuildIntervalJob(jobs::v1::IntervalCommand command,
                                                      core::InferenceBackend* backend,
                                                      const VariantResources* resources,
                                                      IntervalAnswerServices answers = {});

}  // namespace dnaserve::runner
