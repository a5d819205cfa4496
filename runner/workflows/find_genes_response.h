// The JSON body of a completed find-genes-and-predict-expression call (sync 200, or a completed
// poll): {data, meta} exactly as the contract's Find-genes workflow section lists them.
#pragma once

#include <string>

#include "core/render/predict_response.h"
#include "core/validation/find_genes_request.h"
#include "runner/workflows/find_genes.h"

namespace dnaserve::runner {

// data: task, annotation_model, expression_model, input {sequence_name, description}, summary,
// annotation (the annotation task's data payload), expression_predictions (one entry per gene:
// gene_index, gene_name, strand, tss_position, centered_sequence_length, padded_bp, expression,
// expression_tpm, skipped, skip_reason; expression values null when skipped).
// meta: ids, task, model "<annotation>+<expression>", summed cold_start/load/inference, the
// per-stage timings, sequence_length and task_specific_counts {genes_found, genes_predicted,
// genes_skipped}.
std::string RenderFindGenesJson(const core::ValidatedFindGenes& input, const FindGenesResult& result,
                                const core::ResponseIds& ids);

}  // namespace dnaserve::runner
