#include "core/admission/commands.h"

#include <utility>

namespace dnaserve::core {

jobs::v1::JobCommand PredictCommandFor(AdmittedPredict admitted) {
  jobs::v1::JobCommand command;
  ValidatedPredict& input = admitted.input;
  jobs::v1::PredictCommand* predict = command.mutable_predict();
  predict->set_task(std::string(TaskName(input.task)));
  *predict->mutable_request() = std::move(input.request);
  predict->set_format(std::string(FormatName(admitted.format)));
  if (input.requested_model) predict->set_requested_model(*input.requested_model);
  predict->set_sequence_name(std::move(input.sequence_name));
  predict->set_sequence_length(input.sequence_length);
  predict->set_tss_index(input.tss_index);
  predict->set_scored_start(input.scored_start);
  predict->set_scored_end(input.scored_end);
  return command;
}

StatusOr<AdmittedPredict> PredictFromCommand(jobs::v1::PredictCommand command) {
  auto task = TaskFromName(command.task());
  auto format = FormatFromName(command.format());
  if (!task || !format) {
    return BadRequest("the queued prediction names a task or format this release does not know (" +
                      command.task() + ", " + command.format() + ")");
  }
  AdmittedPredict admitted;
  admitted.format = *format;
  ValidatedPredict& input = admitted.input;
  input.task = *task;
  input.request = std::move(*command.mutable_request());
  if (command.has_requested_model()) input.requested_model = command.requested_model();
  input.sequence_name = std::move(*command.mutable_sequence_name());
  input.sequence_length = command.sequence_length();
  input.tss_index = command.tss_index();
  input.scored_start = command.scored_start();
  input.scored_end = command.scored_end();
  return admitted;
}

jobs::v1::JobCommand FindGenesCommandFor(AdmittedFindGenes admitted) {
  jobs::v1::JobCommand command;
  ValidatedFindGenes& input = admitted.input;
  jobs::v1::FindGenesCommand* find = command.mutable_find_genes();
  find->set_sequence(std::move(input.sequence));
  find->set_sequence_name(std::move(input.sequence_name));
  find->set_sequence_length(input.sequence_length);
  find->set_description(std::move(input.description));
  if (input.annotation_model) find->set_requested_annotation_model(*input.annotation_model);
  if (input.expression_model) find->set_requested_expression_model(*input.expression_model);
  find->set_annotation_model(std::move(admitted.annotation_model));
  find->set_expression_model(std::move(admitted.expression_model));
  *find->mutable_annotation() = std::move(input.annotation);
  return command;
}

AdmittedFindGenes FindGenesFromCommand(jobs::v1::FindGenesCommand command) {
  AdmittedFindGenes admitted;
  ValidatedFindGenes& input = admitted.input;
  input.sequence = std::move(*command.mutable_sequence());
  input.sequence_name = std::move(*command.mutable_sequence_name());
  input.sequence_length = command.sequence_length();
  input.description = std::move(*command.mutable_description());
  if (command.has_requested_annotation_model()) {
    input.annotation_model = command.requested_annotation_model();
  }
  if (command.has_requested_expression_model()) {
    input.expression_model = command.requested_expression_model();
  }
  input.annotation = std::move(*command.mutable_annotation());
  admitted.annotation_model = std::move(*command.mutable_annotation_model());
  admitted.expression_model = std::move(*command.mutable_expression_model());
  return admitted;
}

jobs::v1::JobCommand VariantCommandFor(const ValidatedVariant& request) {
  jobs::v1::JobCommand command;
  jobs::v1::VariantCommand* variant = command.mutable_variant();
  variant->set_uri(request.uri);
  if (request.client_ref) variant->set_client_ref(*request.client_ref);
  variant->set_genome_build(request.genome_build);
  variant->set_window(request.window);
  for (const auto& tissue : request.tissues) variant->add_tissues(tissue);
  variant->set_has_genes(request.genes.has_value());
  if (request.genes) {
    for (const auto& gene : *request.genes) variant->add_genes(gene);
  }
  return command;
}

ValidatedVariant VariantFromCommand(const jobs::v1::VariantCommand& command) {
  ValidatedVariant request;
  request.uri = command.uri();
  if (command.has_client_ref()) request.client_ref = command.client_ref();
  request.genome_build = command.genome_build();
  request.window = command.window();
  request.tissues.assign(command.tissues().begin(), command.tissues().end());
  if (command.has_genes()) request.genes.emplace(command.genes().begin(), command.genes().end());
  return request;
}

int64_t VariantScoreEntryVersion(const AdmittedVariantScore& admitted) {
  const ValidatedVariantScore& in = admitted.input;
  if (admitted.batch) return 5;
  return in.expression || in.chromatin || in.promoter ? 4 : 3;
}

jobs::v1::JobCommand VariantScoreCommandFor(const AdmittedVariantScore& admitted) {
  jobs::v1::JobCommand command;
  jobs::v1::VariantScoreCommand* score = command.mutable_variant_score();
  for (const RequestedVariant& v : admitted.input.variants) {
    auto* out = score->add_variants();
    out->set_input(v.input);
    out->set_assembly(v.assembly);
    out->set_contig(v.contig);
    out->set_position(v.position);
    out->set_ref(v.ref);
    out->set_alt(v.alt);
    if (v.problem) {
      out->set_error_code(v.problem->code);
      out->set_error_message(v.problem->message);
    }
  }
  if (admitted.input.splice) {
    score->mutable_splice()->set_distance(admitted.input.splice_distance);
    score->mutable_splice()->set_model(admitted.splice_model);
  }
  const ValidatedVariantScore& in = admitted.input;
  if (in.expression) {
    auto* expression = score->mutable_expression();
    for (const auto& c : in.expression_contexts) expression->add_contexts(c);
    expression->set_window(in.expression_window);
    expression->set_model(admitted.expression_model);
  }
  if (in.chromatin) {
    score->mutable_chromatin()->set_top(in.chromatin_top);
    score->mutable_chromatin()->set_model(admitted.chromatin_model);
  }
  if (in.promoter) {
    score->mutable_promoter()->set_distance(in.promoter_distance);
    score->mutable_promoter()->set_model(admitted.promoter_model);
  }
  score->set_batch(admitted.batch);
  return command;
}

AdmittedVariantScore VariantScoreFromCommand(const jobs::v1::VariantScoreCommand& command) {
  AdmittedVariantScore admitted;
  for (const auto& in : command.variants()) {
    RequestedVariant v;
    v.input = in.input();
    v.assembly = in.assembly();
    v.contig = in.contig();
    v.position = in.position();
    v.ref = in.ref();
    v.alt = in.alt();
    if (!in.error_code().empty()) v.problem = VariantProblem{in.error_code(), in.error_message()};
    admitted.input.variants.push_back(std::move(v));
  }
  admitted.input.splice = command.has_splice();
  if (command.has_splice()) {
    admitted.input.splice_distance = command.splice().distance();
    admitted.splice_model = command.splice().model();
  }
  ValidatedVariantScore& in = admitted.input;
  in.expression = command.has_expression();
  if (in.expression) {
    in.expression_contexts.assign(command.expression().contexts().begin(),
                                  command.expression().contexts().end());
    in.expression_window = command.expression().window();
    admitted.expression_model = command.expression().model();
  }
  in.chromatin = command.has_chromatin();
  if (in.chromatin) {
    in.chromatin_top = command.chromatin().top();
    admitted.chromatin_model = command.chromatin().model();
  }
  in.promoter = command.has_promoter();
  if (in.promoter) {
    in.promoter_distance = command.promoter().distance();
    admitted.promoter_model = command.promoter().model();
  }
  admitted.batch = command.batch();
  return admitted;
}

}  // namespace dnaserve::core
