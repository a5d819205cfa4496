// Pieces of the predict rendering that other renderings embed (the find-genes workflow carries
// the annotation task's data payload verbatim). Internal to gateway/render/.
#pragma once

#include "dnaserve/worker/v1/worker.pb.h"
#include "core/render/json_writer.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {

// The `data` object of a task's JSON response, exactly as RenderPredictJson writes it.
void WritePredictData(JsonWriter& w, const ValidatedPredict& input,
                      const worker::v1::PredictResult& result);

// log(TPM+1) (natural log) back to TPM, never negative; non-finite input passes through (and is
// written as null).
double ExpressionTpm(double log_tpm);

// `description_match` of an expression result: {"matched": bool, "contexts": [{"id", "name",
// "similarity"}, ...]} (best first), or null when the worker reported none (a package without
// contexts, or no expression call at all).
void WriteDescriptionMatch(JsonWriter& w, const worker::v1::DescriptionMatch* match);

}  // namespace dnaserve::core
