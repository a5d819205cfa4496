#include "worker/tasks/task_runner.h"

#include "worker/tasks/reply_parts.h"
#include "worker/tasks/run_support.h"

namespace dnaserve::worker {
namespace {

constexpr char kCancelledMessage[] = "the request was cancelled before it finished";

// The options case a request for `task` must carry (or leave unset).
v1::PredictRequest::OptionsCase OptionsCaseFor(Task task) {
  switch (task) {
    case Task::kPromoter:
      return v1::PredictRequest::kPromoter;
    case Task::kSplice:
      return v1::PredictRequest::kSplice;
    case Task::kEnhancer:
      return v1::PredictRequest::kEnhancer;
    case Task::kChromatin:
      return v1::PredictRequest::kChromatin;
    case Task::kAnnotation:
      return v1::PredictRequest::kAnnotation;
    case Task::kExpression:
      return v1::PredictRequest::kExpression;
  }
  return v1::PredictRequest::OPTIONS_NOT_SET;
}

StatusOr<v1::PredictResult> RunTask(Model& model, const ModelManifest& manifest,
                                    const Tokenizer& tokenizer, const v1::PredictRequest& request,
                                    const RunHooks& hooks) {
  switch (manifest.task) {
    case Task::kPromoter:
      return RunPromoter(model, manifest, tokenizer, request, hooks);
    case Task::kSplice:
      return RunSplice(model, manifest, tokenizer, request, hooks);
    case Task::kEnhancer:
      return RunEnhancer(model, manifest, tokenizer, request, hooks);
    case Task::kChromatin:
      return RunChromatin(model, manifest, tokenizer, request, hooks);
    case Task::kAnnotation:
      return RunAnnotation(model, manifest, tokenizer, request, hooks);
    case Task::kExpression:
      return RunExpression(model, manifest, tokenizer, request, hooks);
  }
  return Internal("unknown task");
}

}  // namespace

Status RunCancelledStatus() { return Cancelled(kCancelledMessage); }

bool IsRunCancelled(const Status& status) { return status.code() == ErrorCode::kCancelled; }

StatusOr<v1::PredictResult> RunPrediction(Model& model, const ModelManifest& manifest,
                                          const v1::PredictRequest& request,
                                          const RunHooks& hooks) {
  auto tokenizer = LoadTokenizer(manifest);
  if (!tokenizer.ok()) {
    return Status(ErrorCode::kModelLoading, "model '" + manifest.id + "' could not be loaded: " +
                                                tokenizer.status().message());
  }
  return RunPrediction(model, manifest, **tokenizer, request, hooks);
}

StatusOr<v1::PredictResult> RunPrediction(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request,
                                          const RunHooks& hooks) {
  if (request.options_case() != v1::PredictRequest::OPTIONS_NOT_SET &&
      request.options_case() != OptionsCaseFor(manifest.task)) {
    TaskNotSupportedDetails details;
    details.supported_tasks.emplace_back(TaskName(manifest.task));
    return Status(ErrorCode::kTaskNotSupportedByModel,
                  "model '" + manifest.id + "' serves the " + std::string(TaskName(manifest.task)) +
                      " task; the request carries options of another task",
                  details);
  }
  DNASERVE_RETURN_IF_ERROR(CheckSequence(request.sequence()));
  DNASERVE_RETURN_IF_ERROR(CheckResultFormat(manifest.task, request));
  auto result = RunTask(model, manifest, tokenizer, request, hooks);
  // A text format's reply is that text: the structured result would send the scores again.
  if (result.ok() && !ReplyParts::For(request).Structured()) result->clear_result();
  return result;
}

}  // namespace dnaserve::worker
