// The JSON body of POST /v1/variants/score (sync 200, or a completed poll): {data, meta}.
//
// data: task "variant_score", assembly (the request's default), scorers {splice: {model,
// package_digest, distance, flank_bp, strands "both"}}, counts {variants, scored, errors},
// results (one per variant, in request order): {index, input, variant {assembly, contig,
// position, ref, alt}} and either error {code, message} or splice {strand, DS_AG, DS_AL, DS_DG,
// DS_DL, DP_AG, DP_AL, DP_DG, DP_DL, DS_max, plus, minus}; `strand` is the strand whose largest
// delta is larger ("+" on a tie) and the flat DS/DP fields are that strand's; `plus` and `minus`
// each hold {acceptor_gain, acceptor_loss, donor_gain, donor_loss} as {score, position, ref,
// alt} (ref and alt: the two scores at that position, SpliceAI's levels beside the delta).
// Scores are rounded to 4 decimals.
// The other scorers, each when asked for: scorers.expression {model, package_digest, window_bp,
// window, gene_annotation_md5, fold_change, contexts [{requested, matched, id, name}]} and per
// result `expression`: [{gene_symbol, gene_id, transcript_id, tss (1-based), strand,
// tss_distance, contexts [{context, ref_log_tpm, alt_log_tpm, ref_tpm, alt_tpm,
// log2_fold_change}]}] at 5 significant digits (WorkflowPrecision); scorers.chromatin {model,
// package_digest, window_bp, top, features_total} and `chromatin`: [{index, name, category,
// ref, alt, delta}]; scorers.promoter {model, package_digest, window_bp, distance, step} and
// `promoter`: {ref, alt, delta, ref_offset, alt_offset, windows}.
// data.backgrounds and each result's `quantiles`: variant_quantile_json.h.
// meta: job_id, request_id, task, model, package_digest (splice's, else the first other
// scorer's), cold_start, model_load_time_ms, inference_time_ms, model_calls (every worker call;
// the timings leave out the expression scorer's, which its scorer does not report),
// cached_results (indices of the results served from the answer cache, variant_answers.h) and
// cached (every scored result was).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/render/predict_response.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {

std::string RenderVariantScoreJson(const core::ValidatedVariantScore& request,
                                   const VariantScoreResult& result, const std::string& assembly,
                                   const core::ResponseIds& ids);

// Each scorer's entry of one scored variant's result, as RenderVariantScoreJson writes it:
// ("splice", its JSON object), ... in write order; what the answer cache keeps, so an answer
// served from it is the same bytes.
std::vector<std::pair<std::string, std::string>> RenderScorerResults(
    const ScoredVariant& scored, const VariantScoreResult& result);

// The published precision: round half away from zero to 4 decimals, -0 as 0.
double RoundScore(double value);
// The expression scorer's precision: 5 significant digits, the number the variant workflow
// writes into GEX_ANN ("%.5g") read back, so both publish the same value for the same variant.
double WorkflowPrecision(double value);

}  // namespace dnaserve::runner
