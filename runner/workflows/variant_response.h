// The JSON body of a completed genomic-variant-interpretation job (the poll's 200): {data, meta}
// exactly as the contract's Variant-interpretation workflow section lists them.
#pragma once

#include <string>

#include "runner/genome/tss_catalogue.h"
#include "core/render/predict_response.h"
#include "runner/workflows/variant_interpretation.h"

namespace dnaserve::runner {

// data: task, status "ok", output {type, uri}, client_ref (echo or null), counts {variants_in,
// annotated, not_run, annotated_alleles, associations, not_run_reasons (zero counts omitted),
// skipped_alleles}.
// meta: job_id, request_id, task, genome_build, input {type, uri}, gene_annotation {build, md5,
// start_sites, transcripts}, options_applied {window, tissues, genes (resolved ids or null)},
// and model only when a model actually scored (the output then carries ##GEXModel).
std::string RenderVariantJson(const VariantCase& c, const VariantRunResult& result,
                              const variant::CatalogueInfo& catalogue, const core::ResponseIds& ids);

}  // namespace dnaserve::runner
