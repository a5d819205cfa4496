#include "core/admission/ism.h"

#include <utility>
#include <vector>

#include "core/admission/commands.h"
#include "core/admission/interval_commands.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {

StatusOr<AdmittedIsm> AdmitIsm(const CallInput& call, const ModelCatalogue& catalogue) {
  static const std::vector<OutputFormat> json_only = {OutputFormat::kJson};
  auto format = NegotiateFormat("ism", json_only, call.query_format, call.accept);
  if (!format.ok()) return format.status();
  auto input = ValidateIsmBody(call.body);
  if (!input.ok()) return input.status();
  AdmittedIsm admitted;
  admitted.scorer.input = input->options;
  const Task task = input->scorer == "splice"       ? Task::kSplice
                    : input->scorer == "chromatin"  ? Task::kChromatin
                    : input->scorer == "expression" ? Task::kExpression
                                                    : Task::kPromoter;
  auto model = catalogue.Resolve(task, std::nullopt);
  if (!model.ok()) {
    // Said as the scorer's, as variant scoring says it.
    Status status(model.status().code(), "the " + input->scorer + " scorer cannot run: " +
                                             model.status().message() +
                                             " (no worker serves its model here)");
    if (model.status().retry_after_seconds()) {
      status.set_retry_after_seconds(*model.status().retry_after_seconds());
    }
    return status;
  }
  std::string* slot = task == Task::kSplice       ? &admitted.scorer.splice_model
                      : task == Task::kChromatin  ? &admitted.scorer.chromatin_model
                      : task == Task::kExpression ? &admitted.scorer.expression_model
                                                  : &admitted.scorer.promoter_model;
  *slot = model->id();
  admitted.input = std::move(input).value();
  return admitted;
}

int64_t IsmEntryVersion(const AdmittedIsm& admitted) {
  return admitted.input.scorer == "expression" ? 7 : 0;
}

jobs::v1::JobCommand IsmCommandFor(const AdmittedIsm& admitted) {
  jobs::v1::JobCommand command;
  jobs::v1::IsmCommand* ism = command.mutable_ism();
  const ValidatedIsm& in = admitted.input;
  if (in.interval) {
    SetInterval(*in.interval, ism->mutable_interval());
  } else {
    ism->set_sequence(in.sequence);
  }
  ism->set_window_start(in.window_start);
  ism->set_window_end(in.window_end);
  *ism->mutable_scorer() = VariantScoreCommandFor(admitted.scorer).variant_score();
  ism->set_expression_gene(in.expression_gene);
  return command;
}

AdmittedIsm IsmFromCommand(const jobs::v1::IsmCommand& command) {
  AdmittedIsm admitted;
  ValidatedIsm& in = admitted.input;
  if (command.has_interval()) {
    in.interval = IntervalOf(command.interval());
  } else {
    in.sequence = command.sequence();
  }
  in.window_start = command.window_start();
  in.window_end = command.window_end();
  admitted.scorer = VariantScoreFromCommand(command.scorer());
  in.options = admitted.scorer.input;
  in.scorer = in.options.splice       ? "splice"
              : in.options.chromatin  ? "chromatin"
              : in.options.expression ? "expression"
                                      : "promoter";
  in.expression_gene = command.expression_gene();
  return admitted;
}

}  // namespace dnaserve::core
