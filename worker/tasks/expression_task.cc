// Expression: one forward pass over exactly the trained window plus the description text, and
// the training contexts the description matched (when the package carries them).
#include <algorithm>

#include "worker/tasks/description_match.h"
#include "worker/tasks/run_support.h"

namespace dnaserve::worker {

StatusOr<v1::PredictResult> RunExpression(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request,
                                          const RunHooks& hooks) {
  const std::string& sequence = request.sequence();
  const int64_t window = manifest.trained_window_bp.value_or(manifest.context_window_bp);
  if (static_cast<int64_t>(sequence.size()) != window) {
    return ValidationFailed({"body"},
                            "expression scores exactly " + std::to_string(window) +
                                " bp; the worker received " + std::to_string(sequence.size()) +
                                " bp",
                            "value_error");
  }
  const std::string& description = request.expression().description();
  if (description.empty()) {
    return ValidationFailed({"body", "options", "description"},
                            "options.description must be a non-empty string", "missing");
  }
  if (ShouldStop(hooks)) return RunCancelledStatus();
  IdTensor ids;
  tokenizer.EncodeIds(sequence, &ids.data);
  ids.shape = {1, static_cast<int64_t>(ids.data.size())};
  const int max_tokens = manifest.text_tokenizer ? manifest.text_tokenizer->max_tokens : 256;
  IdTensor text;
  text.data = EncodeTextBytes(description, max_tokens);
  text.shape = {1, static_cast<int64_t>(text.data.size())};

  auto out = ForwardChecked(model, manifest, {ids, text}, {{1}});
  if (!out.ok()) return out.status();
  ReportProgress(hooks, 1, 1);

  v1::PredictResult result;
  result.set_windows_processed(1);
  result.mutable_expression()->set_expression_log_tpm((*out)[0].data[0]);
  if (manifest.description_contexts) {
    // Matched on the bytes the model saw (the tokenizer truncates to max_tokens).
    const std::string_view seen(description.data(),
                                std::min(description.size(), static_cast<size_t>(max_tokens)));
    const DescriptionMatch match = MatchDescription(*manifest.description_contexts, seen);
    auto* out_match = result.mutable_expression()->mutable_description_match();
    out_match->set_matched(match.matched);
    for (const auto& context : match.contexts) {
      auto* c = out_match->add_contexts();
      c->set_id(context.id);
      c->set_name(context.name);
      c->set_similarity(context.similarity);
    }
  }
  return result;
}

}  // namespace dnaserve::worker
