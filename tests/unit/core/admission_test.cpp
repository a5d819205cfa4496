// The core's admission (core/admission): a call becomes an admitted job, the queue's command
// and back without loss; the runner's verdicts on admissions, in this release's format and the
// release before's.
#include <catch2/catch.hpp>

#include <string>

#include "core/admission/admission.h"
#include "core/admission/commands.h"
#include "core/jobs/admission_verdict.h"

namespace dnaserve::core {
namespace {

void AddDefault(ModelCatalogue* catalogue, Task task, const std::string& id, worker::v1::Task wire) {
  worker::v1::ModelInfo m;
  m.set_id(id);
  m.set_task(wire);
  m.set_is_default(true);
  catalogue->SetModels(task, {m});
}

TEST_CASE("admission: a prediction survives the queue's command unchanged", "[admission]") {
  ModelCatalogue catalogue;
  AddDefault(&catalogue, Task::kPromoter, "promoter-test", worker::v1::TASK_PROMOTER);
  const std::string body = "{\"sequence\": \"" + std::string(600, 'A') + "ACGT\", " +
                           "\"sequence_name\": \"chr20_x\", \"options\": {\"threshold\": 0.7}}";
  CallInput call;
  call.body = body;
  call.query_format = "bedgraph";
  auto admitted = AdmitPredict("promoter", call, catalogue);
  REQUIRE(admitted.ok());
  CHECK(admitted->format == OutputFormat::kBedGraph);
  CHECK(admitted->input.request.model() == "promoter-test");
  const AdmittedPredict before = *admitted;

  jobs::v1::JobCommand command = PredictCommandFor(std::move(admitted).value());
  jobs::v1::JobCommand wire;
  REQUIRE(wire.ParseFromString(command.SerializeAsString()));
  auto after = PredictFromCommand(wire.predict());
  REQUIRE(after.ok());
  CHECK(after->format == before.format);
  CHECK(after->input.task == before.input.task);
  CHECK(after->input.sequence_name == "chr20_x");
  CHECK(after->input.sequence_length == before.input.sequence_length);
  CHECK(after->input.requested_model == before.input.requested_model);
  CHECK(after->input.request.SerializeAsString() == before.input.request.SerializeAsString());
}

TEST_CASE("admission: refusals are the contract's, and a command of an unknown task is one",
          "[admission]") {
  ModelCatalogue catalogue;
  AddDefault(&catalogue, Task::kPromoter, "promoter-test", worker::v1::TASK_PROMOTER);
  CallInput call;
  call.body = "{\"sequence\": \"ACGT\"}";
  CHECK(AdmitPredict("nonsense", call, catalogue).status().code() == ErrorCode::kNotFound);
  call.body = "{\"sequence\": \"" + std::string(600, 'A') + "\"}";
  call.async = true;
  call.query_format = "bed";
  CHECK(AdmitPredict("promoter", call, catalogue).status().code() == ErrorCode::kBadRequest);

  jobs::v1::PredictCommand unknown;
  unknown.set_task("telepathy");
  unknown.set_format("json");
  auto decoded = PredictFromCommand(unknown);
  REQUIRE_FALSE(decoded.ok());
  CHECK(decoded.status().code() == ErrorCode::kBadRequest);
}

TEST_CASE("admission: find-genes and variant requests survive their commands", "[admission]") {
  ModelCatalogue catalogue;
  AddDefault(&catalogue, Task::kAnnotation, "annotation-test", worker::v1::TASK_ANNOTATION);
  AddDefault(&catalogue, Task::kExpression, "expression-test", worker::v1::TASK_EXPRESSION);
  const std::string body = "{\"sequence\": \"" + std::string(1200, 'C') + "\", " +
                           "\"options\": {\"description\": \"liver\"}}";
  CallInput call;
  call.body = body;
  call.async = true;
  auto admitted = AdmitFindGenes(call, catalogue);
  INFO(admitted.status().ToString());
  REQUIRE(admitted.ok());
  AdmittedFindGenes back = FindGenesFromCommand(
      FindGenesCommandFor(std::move(admitted).value()).find_genes());
  CHECK(back.input.sequence == std::string(1200, 'C'));
  CHECK(back.input.description == "liver");
  CHECK(back.annotation_model == "annotation-test");
  CHECK(back.expression_model == "expression-test");
  CHECK_FALSE(back.input.annotation_model.has_value());

  ValidatedVariant request;
  request.uri = "s3://in/a.vcf.gz";
  request.genome_build = "GRCh37";
  request.window = 2000;
  request.tissues = {"liver", "liver"};
  ValidatedVariant all_genes = VariantFromCommand(VariantCommandFor(request).variant());
  CHECK(all_genes.uri == request.uri);
  CHECK(all_genes.tissues == request.tissues);
  CHECK(all_genes.window == 2000);
  CHECK_FALSE(all_genes.genes.has_value());
  request.genes = std::vector<std::string>{};  // given, and empty: not the same as omitted
  CHECK(VariantFromCommand(VariantCommandFor(request).variant()).genes.has_value());
}

TEST_CASE("admission verdicts: this release's and the release before's are read", "[admission]") {
  AdmissionVerdict accepted = ParseAdmissionVerdict(AcceptedVerdict("job-1"));
  CHECK(accepted.accepted);
  CHECK(accepted.job_id == "job-1");

  AdmissionVerdict refused =
      ParseAdmissionVerdict(RefusedVerdict("job-2", BadRequest("no such object"), "req-2"));
  CHECK_FALSE(refused.accepted);
  CHECK(refused.code == ErrorCode::kBadRequest);
  CHECK_FALSE(refused.legacy_http_status.has_value());
  CHECK(refused.body.find("no such object") != std::string::npos);
  CHECK(refused.body.find("req-2") != std::string::npos);

  AdmissionVerdict old_accept = ParseAdmissionVerdict("202 job-3\n");
  CHECK(old_accept.accepted);
  CHECK(old_accept.job_id == "job-3");
  AdmissionVerdict old_refusal = ParseAdmissionVerdict("404 job-4\n{\"error\":{}}");
  CHECK_FALSE(old_refusal.accepted);
  REQUIRE(old_refusal.legacy_http_status.has_value());
  CHECK(*old_refusal.legacy_http_status == 404);
  CHECK(old_refusal.body == "{\"error\":{}}");

  AdmissionVerdict garbage = ParseAdmissionVerdict("garbage");
  CHECK_FALSE(garbage.accepted);
  CHECK(garbage.code == ErrorCode::kInternal);
}

}  // namespace
}  // namespace dnaserve::core
