#include "core/admission/admission.h"

#include <utility>
#include <vector>

namespace dnaserve::core {
namespace {

std::string TaskList() {
  std::string out;
  for (Task t : kAllTasks) {
    if (!out.empty()) out += ", ";
    out += TaskName(t);
  }
  return out;
}

// A workflow stage's model: the task's default, or the id given in options.<option>. Errors are
// the catalogue's (model_not_found with the task's models, task_not_supported_by_model for
// another task's model), with the option named in the message.
StatusOr<std::string> ResolveStageModel(const ModelCatalogue& catalogue, Task task,
                                        const std::optional<std::string>& requested,
                                        const std::string& option) {
  auto model = catalogue.Resolve(task, requested);
  if (model.ok()) return model->id();
  if (!requested) return model.status();
  const Status& s = model.status();
  Status named(s.code(), "options." + option + ": " + s.message(), s.details());
  if (s.retry_after_seconds()) named.set_retry_after_seconds(*s.retry_after_seconds());
  return named;
}

const std::vector<OutputFormat>& JsonOnly() {
  static const std::vector<OutputFormat> formats = {OutputFormat::kJson};
  return formats;
}

}  // namespace

StatusOr<AdmittedPredict> AdmitPredict(std::string_view task_name, const CallInput& call,
                                       const ModelCatalogue& catalogue) {
  auto task = TaskFromName(task_name);
  if (!task) {
    return NotFound("unknown task '" + std::string(task_name) + "'; tasks are: " + TaskList());
  }
  auto format = NegotiateFormat(*task, call.query_format, call.accept);
  if (!format.ok()) return format.status();
  if (call.async && *format != OutputFormat::kJson) {
    return BadRequest("text formats are synchronous only: drop 'Prefer: respond-async' or ask "
                      "for format=json");
  }
  auto input = ValidatePredictBody(*task, call.body);
  if (!input.ok()) return input.status();

  auto model = catalogue.Resolve(*task, input->requested_model);
  if (!model.ok()) return model.status();
  input->request.set_model(model->id());

  if (*task == Task::kAnnotation && *format == OutputFormat::kJson && !call.async &&
      input->sequence_length > kAnnotationSyncLimitBp) {
    return Status(ErrorCode::kSyncTooLarge,
                  "annotation JSON responses above " + std::to_string(kAnnotationSyncLimitBp) +
                      " bp must run asynchronously; resend with 'Prefer: respond-async' (or ask "
                      "for format=gff3 or bed, which stay synchronous); got " +
                      std::to_string(input->sequence_length) + " bp",
                  SyncTooLargeDetails{input->sequence_length, kAnnotationSyncLimitBp});
  }
  return AdmittedPredict{std::move(input).value(), *format};
}

StatusOr<AdmittedFindGenes> AdmitFindGenes(const CallInput& call, const ModelCatalogue& catalogue) {
  auto format = NegotiateFormat("find-genes-and-predict-expression", JsonOnly(),
                                call.query_format, call.accept);
  if (!format.ok()) return format.status();

  auto input = ValidateFindGenesBody(call.body);
  if (!input.ok()) return input.status();

  auto annotation =
      ResolveStageModel(catalogue, Task::kAnnotation, input->annotation_model, "annotation_model");
  if (!annotation.ok()) return annotation.status();
  auto expression =
      ResolveStageModel(catalogue, Task::kExpression, input->expression_model, "expression_model");
  if (!expression.ok()) return expression.status();

  if (!call.async && input->sequence_length > kFindGenesSyncLimitBp) {
    return Status(ErrorCode::kSyncTooLarge,
                  "find-genes-and-predict-expression requests above " +
                      std::to_string(kFindGenesSyncLimitBp) +
                      " bp must run asynchronously; resend the identical body with 'Prefer: "
                      "respond-async'; got " +
                      std::to_string(input->sequence_length) + " bp",
                  SyncTooLargeDetails{input->sequence_length, kFindGenesSyncLimitBp});
  }
  return AdmittedFindGenes{std::move(input).value(), std::move(annotation).value(),
                           std::move(expression).value()};
}

StatusOr<ValidatedVariant> AdmitVariant(const CallInput& call) {
  if (!call.async) {
    return BadRequest(
        "genomic-variant-interpretation runs only asynchronously: send the request with the "
        "header 'Prefer: respond-async' and poll the job");
  }
  auto format = NegotiateFormat("genomic-variant-interpretation", JsonOnly(), call.query_format,
                                call.accept);
  if (!format.ok()) return format.status();
  return ValidateVariantBody(call.body);
}

namespace {

// The catalogue's refusal, said as the scorer's: which scorer cannot run, and why.
Status ScorerUnavailable(const char* scorer, const Status& why) {
  Status status(why.code(), "the " + std::string(scorer) + " scorer cannot run: " +
                                why.message() + " (no worker serves its model here)");
  if (why.retry_after_seconds()) status.set_retry_after_seconds(*why.retry_after_seconds());
  return status;
}

// Each requested scorer's model resolved to its task's default.
StatusOr<AdmittedVariantScore> ResolveScorers(ValidatedVariantScore validated, bool batch,
                                              const ModelCatalogue& catalogue) {
  AdmittedVariantScore admitted;
  admitted.batch = batch;
  const struct {
    bool asked;
    Task task;
    const char* scorer;
    std::string* model;
  } scorers[] = {{validated.splice, Task::kSplice, "splice", &admitted.splice_model},
                 {validated.expression, Task::kExpression, "expression",
                  &admitted.expression_model},
                 {validated.chromatin, Task::kChromatin, "chromatin", &admitted.chromatin_model},
                 {validated.promoter, Task::kPromoter, "promoter", &admitted.promoter_model}};
  for (const auto& s : scorers) {
    if (!s.asked) continue;
    auto model = catalogue.Resolve(s.task, std::nullopt);
    if (!model.ok()) return ScorerUnavailable(s.scorer, model.status());
    *s.model = model->id();
  }
  admitted.input = std::move(validated);
  return admitted;
}

}  // namespace

StatusOr<AdmittedVariantScore> AdmitVariantScore(const CallInput& call,
                                                 const ModelCatalogue& catalogue) {
  auto format = NegotiateFormat("variants/score", JsonOnly(), call.query_format, call.accept);
  if (!format.ok()) return format.status();
  auto input = ValidateVariantScoreBody(call.body);
  if (!input.ok()) return input.status();
  const bool batch = static_cast<int64_t>(input->variants.size()) > kMaxSyncScoreVariants;
  if (call.async && !batch) {
    return BadRequest("variant scoring answers up to " + std::to_string(kMaxSyncScoreVariants) +
                      " variants synchronously: drop 'Prefer: respond-async' (more variants, "
                      "or a VCF body, run as a job)");
  }
  return ResolveScorers(std::move(input).value(), batch, catalogue);
}

StatusOr<AdmittedVariantScore> AdmitVariantScoreVcf(const VcfScoreCall& call,
                                                    const ModelCatalogue& catalogue) {
  auto input = ValidateVariantScoreVcf(call);
  if (!input.ok()) return input.status();
  return ResolveScorers(std::move(input).value(), true, catalogue);
}

}  // namespace dnaserve::core
