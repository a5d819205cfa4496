// Expression: one forward pass over exactly the trained window plus the description text, and
// the training contexts the description matched (when the package carries them).
#include <algorithm>
#include <optional>

#include "worker/tasks/context_resolve.h"
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
  // The context the description names (by id, CURIE or free text), resolved on the bytes the
  // text tokenizer keeps; the model then reads a text that selects exactly that context.
  std::optional<ResolvedContext> resolved;
  if (manifest.description_contexts) {
    const std::string_view seen(description.data(),
                                std::min(description.size(), static_cast<size_t>(max_tokens)));
    resolved = ResolveContext(*manifest.description_contexts, seen);
  }
  IdTensor text;
  text.data = EncodeTextBytes(resolved ? resolved->model_text : description, max_tokens);
  text.shape = {1, static_cast<int64_t>(text.data.size())};

  auto out = ForwardChecked(model, manifest, {ids, text}, {{1}});
  if (!out.ok()) return out.status();
  ReportProgress(hooks, 1, 1);

  v1::PredictResult result;
  result.set_windows_processed(1);
  result.mutable_expression()->set_expression_log_tpm((*out)[0].data[0]);
  if (resolved) {
    auto* out_match = result.mutable_expression()->mutable_description_match();
    out_match->set_matched(resolved->matched);
    out_match->set_matched_by(resolved->matched_by);
    for (size_t i = 0; i < resolved->contexts.size(); ++i) {
      auto* c = out_match->add_contexts();
      c->set_id(resolved->contexts[i].id);
      c->set_name(resolved->contexts[i].name);
      c->set_similarity(resolved->contexts[i].similarity);
      c->set_curie(resolved->curies[i]);
    }
  }
  return result;
}

}  // namespace dnaserve::worker
