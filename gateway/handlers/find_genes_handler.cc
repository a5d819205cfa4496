#include "gateway/handlers/find_genes_handler.h"

#include "gateway/handlers/job_start.h"
#include "gateway/validation/find_genes_request.h"
#include "gateway/validation/predict_request.h"

namespace dnaserve::gateway {
namespace {

constexpr std::string_view kOperation = "find-genes-and-predict-expression";

// A stage's model: the task's default, or the id given in options.<option>. Errors are the
// catalogue's (model_not_found with the task's models, task_not_supported_by_model for another
// task's model), with the option named in the message.
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

}  // namespace

// Everything decided before a job exists. A failure here creates no job.
StatusOr<JobStart> AdmitFindGenes(const RouteCall& call, const GatewayServices& services,
                                  bool async) {
  const ModelCatalogue& catalogue = *services.catalogue;
  const HttpRequest& req = call.request;
  // JSON only: ?format=json and JSON-compatible Accept values pass, anything else is 415.
  static const std::vector<OutputFormat> kJsonOnly = {OutputFormat::kJson};
  auto format = NegotiateFormat(kOperation, kJsonOnly, req.Query("format"), req.Header("accept"));
  if (!format.ok()) return format.status();

  auto input = ValidateFindGenesBody(req.body);
  if (!input.ok()) return input.status();

  auto annotation =
      ResolveStageModel(catalogue, Task::kAnnotation, input->annotation_model, "annotation_model");
  if (!annotation.ok()) return annotation.status();
  auto expression =
      ResolveStageModel(catalogue, Task::kExpression, input->expression_model, "expression_model");
  if (!expression.ok()) return expression.status();

  if (!async && input->sequence_length > kFindGenesSyncLimitBp) {
    return Status(ErrorCode::kSyncTooLarge,
                  "find-genes-and-predict-expression requests above " +
                      std::to_string(kFindGenesSyncLimitBp) +
                      " bp must run asynchronously; resend the identical body with 'Prefer: "
                      "respond-async'; got " +
                      std::to_string(input->sequence_length) + " bp",
                  SyncTooLargeDetails{input->sequence_length, kFindGenesSyncLimitBp});
  }
  // Annotation then one expression call per gene: work that can outlive the request, so it
  // runs on a runner (runner/jobs/runner_jobs.h) even when the client waits for it.
  JobStart start;
  start.task = std::string(kFindGenesWorkflow);
  start.async = async;
  start.queued = QueuedFromCall(call, "find_genes");
  start.queued->facts["annotation_model"] = *annotation;
  start.queued->facts["expression_model"] = *expression;
  return start;
}

RouteHandler MakeFindGenesHandler(const GatewayServices& services) {
  GatewayServices s = services;
  return MakeJobRoute(
      s, [s](const RouteCall& call, bool async) { return AdmitFindGenes(call, s, async); });
}

}  // namespace dnaserve::gateway
