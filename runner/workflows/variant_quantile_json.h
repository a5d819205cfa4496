// The quantiles' part of the POST /v1/variants/score body (variant_quantiles.h says what they
// are): data.backgrounds, one object per scorer that ran, {available: true, snvs, seed, region,
// distance, statistics} or {available: false, reason}; and per scored result `quantiles`, one
// key per scorer that ran: splice {DS_AG, DS_AL, DS_DG, DS_DL, DS_max}, promoter {delta},
// chromatin [one per reported feature, in its order], expression [per gene, [per context]],
// each null when that scorer has no background (data.backgrounds says why).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/dispatch/inference_backend.h"
#include "core/render/json_writer.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {

// The backgrounds of the scorers `result` prepared, from their workers (cached by digest).
void LoadVariantBackgrounds(core::InferenceBackend& backend, VariantScoreResult* result);

// data.backgrounds.
void WriteVariantBackgrounds(core::JsonWriter& w, const VariantScoreResult& result);

// results[i].quantiles of a scored variant (nothing for one with an error).
void WriteVariantQuantiles(core::JsonWriter& w, const ScoredVariant& scored,
                           const VariantScoreResult& result);

// The entries of that `quantiles` object one by one ("splice" -> its JSON value), in write
// order, for the answer cache: a recalled result writes them back byte for byte.
std::vector<std::pair<std::string, std::string>> RenderQuantileEntries(
    const ScoredVariant& scored, const VariantScoreResult& result);

}  // namespace dnaserve::runner
