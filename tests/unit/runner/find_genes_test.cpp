// The find-genes-and-predict-expression workflow below HTTP: request validation rule by rule,
// the orchestration of its two stages against a fake InferenceBackend, and the rendered body
// (exact fields, counts invariant, summed timings).
#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <cmath>
#include <mutex>

#include "common/sequence.h"
#include "runner/workflows/find_genes_response.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/request_schema.h"
#include "runner/workflows/find_genes.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::runner;

namespace {

namespace pb = dnaserve::worker::v1;

std::string Bases(int64_t n, uint32_t seed = 11) {
  static const char kAcgt[] = "ACGT";
  std::string out;
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(kAcgt[(x >> 24) & 3]);
  }
  return out;
}

std::string Body(const std::string& sequence, const std::string& options,
                 const std::string& extra = "") {
  return "{\"sequence\":\"" + sequence + "\",\"options\":" + options + extra + "}";
}

const std::string kOptions = R"({"description":"adult liver"})";

const std::vector<FieldError>& Errors(const Status& status) {
  static const std::vector<FieldError> kNone;
  const auto* d = std::get_if<ValidationDetails>(&status.details());
  return d ? d->errors : kNone;
}

// The single 422 error, asserted to be at `loc` with `type`.
void OnlyError(const StatusOr<core::ValidatedFindGenes>& result, const std::vector<std::string>& loc,
               const std::string& type) {
  INFO(result.status().ToString());
  REQUIRE_FALSE(result.ok());
  REQUIRE(result.status().code() == ErrorCode::kValidationFailed);
  REQUIRE(Errors(result.status()).size() == 1);
  CHECK(Errors(result.status()).front().loc == loc);
  CHECK(Errors(result.status()).front().type == type);
}

// ------------------------------------------------------------------ fake backend

pb::Transcript MakeTranscript(const std::string& id, const std::string& strand, int64_t tss) {
  pb::Transcript t;
  t.set_id(id);
  t.set_strand(strand);
  t.set_tss_position(tss);
  t.set_start(strand == "+" ? tss : tss - 500);
  t.set_end(strand == "+" ? tss + 500 : tss + 1);
  t.set_transcript_type("mRNA");
  auto* exon = t.add_exons();
  exon->set_start(t.start());
  exon->set_end(t.end());
  return t;
}

class FakeBackend : public core::InferenceBackend {
 public:
  StatusOr<pb::PredictResult> Predict(Task task, const pb::PredictRequest& request,
                                      const core::CallContext& context,
                                      const core::ProgressCallback& on_progress) override {
    std::lock_guard<std::mutex> lock(mu);
    if (task == Task::kAnnotation) {
      annotation_requests.push_back(request);
      if (!annotation_error.ok()) return annotation_error;
      for (int i = 1; i <= 4; ++i) {
        pb::Progress p;
        p.set_windows_done(i);
        p.set_windows_total(4);
        if (on_progress) on_progress(p);
      }
      if (cancel_after_annotation) cancel_after_annotation->store(true);
      pb::PredictResult result;
      result.set_model(request.model());
      result.set_cold_start(true);
      result.set_model_load_time_ms(700);
      result.set_inference_time_ms(300);
      for (const auto& t : transcripts) *result.mutable_annotation()->add_transcripts() = t;
      (*result.mutable_formats())["gff3"] = "##gff-version 3\n";
      return result;
    }
    REQUIRE(task == Task::kExpression);
    expression_requests.push_back(request);
    if (context.cancelled && context.cancelled->load()) return Unavailable("cancelled");
    if (expression_requests.size() == fail_expression_call) return expression_error;
    pb::PredictResult result;
    result.set_model(request.model());
    // The first call loads the model; later ones are warm.
    result.set_cold_start(expression_requests.size() == 1);
    result.set_model_load_time_ms(expression_requests.size() == 1 ? 900 : 55);
    result.set_inference_time_ms(20);
    result.mutable_expression()->set_expression_log_tpm(0.5 * expression_requests.size());
    if (report_match) {
      // What a worker with description contexts says; the "similarity" marks the call.
      auto* match = result.mutable_expression()->mutable_description_match();
      match->set_matched(true);
      auto* context = match->add_contexts();
      context->set_id("E066");
      context->set_name("Liver");
      context->set_similarity(0.8 + 0.01 * expression_requests.size());
    }
    return result;
  }
  StatusOr<std::vector<pb::ModelInfo>> ListModels(Task) override { return Unavailable("n/a"); }

  std::mutex mu;
  std::vector<pb::Transcript> transcripts;
  std::vector<pb::PredictRequest> annotation_requests;
  std::vector<pb::PredictRequest> expression_requests;
  Status annotation_error;
  Status expression_error;
  size_t fail_expression_call = 0;  // 1-based; 0 = never
  bool report_match = false;         // expression results carry a description_match
  std::atomic<bool>* cancel_after_annotation = nullptr;
};

struct Run {
  std::atomic<bool> cancelled{false};
  std::vector<std::pair<double, std::string>> progress;
  core::JobContext context;
  Run() {
    context.call = core::CallContext{"req-1", "job-1", &cancelled};
    context.report_progress = [this](double p, const std::string& m) { progress.emplace_back(p, m); };
  }
};

core::ValidatedFindGenes Input(int64_t length, const std::string& options = kOptions,
                         const std::string& extra = "") {
  auto input = core::ValidateFindGenesBody(Body(Bases(length), options, extra));
  INFO(input.status().ToString());
  REQUIRE(input.ok());
  return *input;
}

const FindGenesModels kModels{"annotation-m", "expression-m"};

}  // namespace

// ------------------------------------------------------------------ validation

TEST_CASE("find-genes: a minimal body takes every default from the table", "[find_genes]") {
  auto v = core::ValidateFindGenesBody(Body(Bases(1000), kOptions));
  REQUIRE(v.ok());
  CHECK(v->sequence_length == 1000);
  CHECK(v->sequence_name == "sequence");
  CHECK(v->description == "adult liver");
  CHECK_FALSE(v->annotation_model);
  CHECK_FALSE(v->expression_model);
  CHECK(v->annotation.batch_size() == 8);
  CHECK(v->annotation.reverse_complement());
  CHECK(v->annotation.coordinate_offset() == 0);
  CHECK(v->annotation.seqid() == "sequence");
  CHECK(DefaultInteger(*core::FindGenesOptionsSchema().Find("batch_size")) == 8);
}

TEST_CASE("find-genes: every option is read", "[find_genes]") {
  auto v = core::ValidateFindGenesBody(Body(
      Bases(2000),
      R"({"description":"heart","annotation_model":"a1","expression_model":"e1","batch_size":128,"shift_coordinates":"ucsc"})",
      R"(,"sequence_name":"chr2:1,001-3,000")"));
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  CHECK(*v->annotation_model == "a1");
  CHECK(*v->expression_model == "e1");
  CHECK(v->annotation.batch_size() == 128);
  CHECK(v->annotation.coordinate_offset() == 1000);
  CHECK(v->annotation.seqid() == "chr2");
  CHECK(v->sequence_name == "chr2:1,001-3,000");
  // null models mean the defaults
  auto nulls = core::ValidateFindGenesBody(
      Body(Bases(1000), R"({"description":"x","annotation_model":null,"expression_model":null,"shift_coordinates":null})"));
  REQUIRE(nulls.ok());
  CHECK_FALSE(nulls->annotation_model);
  CHECK(nulls->annotation.coordinate_offset() == 0);
}

TEST_CASE("find-genes: options and options.description are required and non-empty",
          "[find_genes]") {
  OnlyError(core::ValidateFindGenesBody("{\"sequence\":\"" + Bases(1000) + "\"}"), {"body", "options"},
            "missing");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), "null")), {"body", "options"},
            "model_attributes_type");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), "{}")), {"body", "options", "description"},
            "missing");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), R"({"description":""})")),
            {"body", "options", "description"}, "string_too_short");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), R"({"description":null})")),
            {"body", "options", "description"}, "string_type");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), R"({"description":7})")),
            {"body", "options", "description"}, "string_type");
}

TEST_CASE("find-genes: the body and options are closed", "[find_genes]") {
  // A top-level model (the tasks' field) is unknown here: models are chosen in options.
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), kOptions, R"(,"model":"m")")),
            {"body", "model"}, "extra_forbidden");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), kOptions, R"(,"strand":"+")")),
            {"body", "strand"}, "extra_forbidden");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), kOptions, R"(,"tss_index":4599)")),
            {"body", "tss_index"}, "extra_forbidden");
  // The annotation task's reverse_complement is not a workflow option.
  OnlyError(
      core::ValidateFindGenesBody(Body(Bases(1000), R"({"description":"x","reverse_complement":false})")),
      {"body", "options", "reverse_complement"}, "extra_forbidden");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), R"({"description":"x","model":"m"})")),
            {"body", "options", "model"}, "extra_forbidden");
}

TEST_CASE("find-genes: sequence bounds are 1,000-500,000 bp after whitespace stripping",
          "[find_genes]") {
  OnlyError(core::ValidateFindGenesBody(Body(Bases(999), kOptions)), {"body", "sequence"},
            "string_too_short");
  auto too_short = core::ValidateFindGenesBody(Body(Bases(999), kOptions));
  CHECK(Errors(too_short.status()).front().msg.find("1000") != std::string::npos);
  CHECK(core::ValidateFindGenesBody(Body(Bases(1000), kOptions)).ok());
  CHECK(core::ValidateFindGenesBody(Body(Bases(500000), kOptions)).ok());
  OnlyError(core::ValidateFindGenesBody(Body(Bases(500001), kOptions)), {"body", "sequence"},
            "string_too_long");
  // 1,200 characters of which 400 are whitespace: 800 bp.
  std::string spaced;
  for (char c : Bases(800)) {
    spaced += c;
    if (spaced.size() % 3 == 2) spaced += "\\n";
  }
  OnlyError(core::ValidateFindGenesBody(Body(spaced, kOptions)), {"body", "sequence"},
            "string_too_short");
  std::string lower_wrapped = Bases(1000);
  for (char& c : lower_wrapped) c = static_cast<char>(c - 'A' + 'a');
  auto ok = core::ValidateFindGenesBody(Body(lower_wrapped.substr(0, 500) + "\\n " +
                                           lower_wrapped.substr(500), kOptions));
  REQUIRE(ok.ok());
  CHECK(ok->sequence == Bases(1000));
  OnlyError(core::ValidateFindGenesBody(Body(">chr1\\n" + Bases(1000), kOptions)), {"body", "sequence"},
            "string_pattern_mismatch");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(999) + "X", kOptions)), {"body", "sequence"},
            "string_pattern_mismatch");
}

TEST_CASE("find-genes: batch_size, model ids, sequence_name and shift_coordinates rules",
          "[find_genes]") {
  auto options = [](const std::string& extra) {
    return std::string(R"({"description":"x",)") + extra + "}";
  };
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("batch_size":0)"))),
            {"body", "options", "batch_size"}, "greater_than_equal");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("batch_size":129)"))),
            {"body", "options", "batch_size"}, "less_than_equal");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("batch_size":2.5)"))),
            {"body", "options", "batch_size"}, "int_from_float");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("batch_size":"8")"))),
            {"body", "options", "batch_size"}, "int_type");
  const std::string long_id(129, 'm');
  OnlyError(core::ValidateFindGenesBody(
                Body(Bases(1000), options("\"annotation_model\":\"" + long_id + "\""))),
            {"body", "options", "annotation_model"}, "string_too_long");
  OnlyError(core::ValidateFindGenesBody(
                Body(Bases(1000), options("\"expression_model\":\"" + long_id + "\""))),
            {"body", "options", "expression_model"}, "string_too_long");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), kOptions,
                                       ",\"sequence_name\":\"" + std::string(129, 's') + "\"")),
            {"body", "sequence_name"}, "string_too_long");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("shift_coordinates":"hg19")"))),
            {"body", "options", "shift_coordinates"}, "literal_error");
  // shift_coordinates needs a region label in sequence_name.
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("shift_coordinates":"UCSC")"))),
            {"body", "sequence_name"}, "value_error");
  OnlyError(core::ValidateFindGenesBody(Body(Bases(1000), options(R"("shift_coordinates":"UCSC")"),
                                       R"(,"sequence_name":"chr1:500-100")")),
            {"body", "sequence_name"}, "value_error");
}

TEST_CASE("find-genes: malformed JSON is 400, a non-object body 422, errors are all reported",
          "[find_genes]") {
  for (std::string body : {"", "{", "{\"sequence\": }", "nul"}) {
    auto r = core::ValidateFindGenesBody(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kBadRequest);
  }
  OnlyError(core::ValidateFindGenesBody("[]"), {"body"}, "model_attributes_type");
  auto many = core::ValidateFindGenesBody(
      R"({"sequence":"ACGT","options":{"description":"","batch_size":0},"colour":1})");
  REQUIRE_FALSE(many.ok());
  CHECK(Errors(many.status()).size() == 4);
  CHECK(many.status().message().find("(and 3 more errors)") != std::string::npos);
}

// ------------------------------------------------------------------ orchestration

TEST_CASE("find-genes: annotation, then one expression call per gene on its sense-strand window",
          "[find_genes]") {
  FakeBackend backend;
  backend.transcripts = {MakeTranscript("tx_1", "+", 6000), MakeTranscript("tx_2", "-", 9000)};
  core::ValidatedFindGenes input = Input(20000, R"({"description":"adult liver","batch_size":4})");
  Run run;
  auto result = RunFindGenes(input, kModels, backend, run.context);
  INFO(result.status().ToString());
  REQUIRE(result.ok());

  REQUIRE(backend.annotation_requests.size() == 1);
  const pb::PredictRequest& annotation = backend.annotation_requests[0];
  CHECK(annotation.model() == "annotation-m");
  CHECK(annotation.sequence() == input.sequence);
  CHECK(annotation.annotation().batch_size() == 4);
  CHECK(annotation.annotation().reverse_complement());
  // The response embeds the annotation's JSON data (formats included); expression sends numbers.
  CHECK(annotation.result_format() == pb::RESULT_FORMAT_JSON);

  REQUIRE(backend.expression_requests.size() == 2);
  for (const auto& r : backend.expression_requests) {
    CHECK(r.model() == "expression-m");
    CHECK(r.result_format() == pb::RESULT_FORMAT_JSON);
    CHECK(r.expression().description() == "adult liver");
    CHECK(static_cast<int64_t>(r.sequence().size()) == kExpressionWindowBp);
  }
  CHECK(backend.expression_requests[0].sequence() == input.sequence.substr(6000 - 4599, 9198));
  CHECK(backend.expression_requests[1].sequence() ==
        ReverseComplement(input.sequence.substr(9000 - 4598, 9198)));
  CHECK(backend.expression_requests[0].sequence_name() == "tx_1");

  REQUIRE(result->genes.size() == 2);
  CHECK(result->genes[0].gene_index == 0);
  CHECK(result->genes[0].gene_name == "tx_1");
  CHECK(result->genes[0].strand == "+");
  CHECK(result->genes[0].tss_position == 6000);
  CHECK(result->genes[0].expression_log_tpm == 0.5);
  CHECK(result->genes[1].gene_name == "tx_2");
  CHECK(result->genes[1].expression_log_tpm == 1.0);
  CHECK(result->genes_predicted() == 2);
  CHECK(result->genes_skipped() == 0);

  // Timings: the annotation's own, and the expression calls summed (loads only when cold).
  CHECK(result->annotation_timings.cold_start);
  CHECK(result->annotation_timings.model_load_time_ms == 700);
  CHECK(result->annotation_timings.inference_time_ms == 300);
  CHECK(result->expression_timings.cold_start);
  CHECK(result->expression_timings.model_load_time_ms == 900);
  CHECK(result->expression_timings.inference_time_ms == 40);
  CHECK(result->models.annotation == "annotation-m");
  CHECK(result->models.expression == "expression-m");

  // Progress runs through both stages, never backwards, and ends at 100.
  REQUIRE_FALSE(run.progress.empty());
  for (size_t i = 1; i < run.progress.size(); ++i) {
    CHECK(run.progress[i].first >= run.progress[i - 1].first);
  }
  CHECK(run.progress.back().first == 100.0);
  bool saw_annotation = false, saw_expression = false;
  for (const auto& [percent, message] : run.progress) {
    if (message.rfind("annotation:", 0) == 0) saw_annotation = percent <= 50.0;
    if (message.rfind("expression:", 0) == 0 && percent > 50.0) saw_expression = true;
  }
  CHECK(saw_annotation);
  CHECK(saw_expression);
}

TEST_CASE("find-genes: windows past the region's ends are N-padded, never dropped",
          "[find_genes]") {
  FakeBackend backend;
  // 8,000 bp region, shorter than the window: a '+' TSS at 3,999 covers plus [-600, 8598).
  backend.transcripts = {MakeTranscript("tx_1", "+", 3999), MakeTranscript("tx_2", "+", 100),
                         MakeTranscript("tx_3", "-", 7999)};
  core::ValidatedFindGenes input = Input(8000);
  Run run;
  auto result = RunFindGenes(input, kModels, backend, run.context);
  REQUIRE(result.ok());
  REQUIRE(result->genes.size() == 3);
  for (const auto& gene : result->genes) CHECK_FALSE(gene.skipped);
  CHECK(result->genes[0].window.padded_bp() == 1198);
  CHECK(result->genes[1].window.padded_bp() == 4499);
  CHECK(result->genes[2].window.padded_bp() == 4599);
  REQUIRE(backend.expression_requests.size() == 3);
  const std::string& padded = backend.expression_requests[0].sequence();
  CHECK(static_cast<int64_t>(padded.size()) == kExpressionWindowBp);
  CHECK(padded.substr(0, 600) == std::string(600, 'N'));
  CHECK(padded.substr(600, 8000) == input.sequence);
  CHECK(padded.substr(8600) == std::string(598, 'N'));
  // The '-' gene at the region's last base: its upstream (5') side runs past the end.
  const std::string& minus = backend.expression_requests[2].sequence();
  CHECK(minus.substr(0, 4599) == std::string(4599, 'N'));
}

TEST_CASE("find-genes: in a region shorter than 4,599 bp every gene is skipped with a reason",
          "[find_genes]") {
  FakeBackend backend;
  backend.transcripts = {MakeTranscript("tx_1", "+", 1500), MakeTranscript("tx_2", "-", 2500)};
  Run run;
  auto result = RunFindGenes(Input(3000), kModels, backend, run.context);
  REQUIRE(result.ok());
  REQUIRE(result->genes.size() == 2);
  for (const auto& gene : result->genes) {
    CHECK(gene.skipped);
    CHECK(gene.skip_reason.find("6198 bp of N padding") != std::string::npos);
  }
  CHECK(result->genes_skipped() == 2);
  CHECK(result->genes_predicted() == 0);
  CHECK(backend.expression_requests.empty());
  CHECK(run.progress.back().first == 100.0);
}

TEST_CASE("find-genes: shift_coordinates rebases the reported TSS before cutting",
          "[find_genes]") {
  FakeBackend backend;
  backend.transcripts = {MakeTranscript("tx_1", "-", 2'000'000 + 9000)};
  core::ValidatedFindGenes input = Input(20000, R"({"description":"x","shift_coordinates":"UCSC"})",
                                   R"(,"sequence_name":"chr7:2,000,001-2,020,000")");
  REQUIRE(input.annotation.coordinate_offset() == 2'000'000);
  Run run;
  auto result = RunFindGenes(input, kModels, backend, run.context);
  REQUIRE(result.ok());
  CHECK(backend.annotation_requests[0].annotation().coordinate_offset() == 2'000'000);
  CHECK(backend.annotation_requests[0].annotation().seqid() == "chr7");
  REQUIRE(backend.expression_requests.size() == 1);
  CHECK(backend.expression_requests[0].sequence() ==
        ReverseComplement(input.sequence.substr(9000 - 4598, 9198)));
  CHECK(result->genes[0].tss_position == 2'009'000);  // reported as the annotation reports it
}

TEST_CASE("find-genes: a region without genes makes no expression call", "[find_genes]") {
  FakeBackend backend;
  Run run;
  auto result = RunFindGenes(Input(5000), kModels, backend, run.context);
  REQUIRE(result.ok());
  CHECK(result->genes.empty());
  CHECK(backend.expression_requests.empty());
  CHECK_FALSE(result->expression_timings.cold_start);
  CHECK(result->expression_timings.inference_time_ms == 0);
}

TEST_CASE("find-genes: either stage's error fails the run with its own code", "[find_genes]") {
  FakeBackend backend;
  backend.transcripts = {MakeTranscript("tx_1", "+", 6000), MakeTranscript("tx_2", "+", 9000)};
  Run run;
  SECTION("annotation worker down") {
    backend.annotation_error =
        Status(ErrorCode::kServiceUnavailable, "no worker").set_retry_after_seconds(5);
    auto result = RunFindGenes(Input(20000), kModels, backend, run.context);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == ErrorCode::kServiceUnavailable);
    CHECK(result.status().message() == "annotation stage: no worker");
    CHECK(result.status().retry_after_seconds() == 5);
    CHECK(backend.expression_requests.empty());
  }
  SECTION("expression model still loading on the second gene") {
    backend.expression_error = Status(ErrorCode::kModelLoading, "loading");
    backend.fail_expression_call = 2;
    auto result = RunFindGenes(Input(20000), kModels, backend, run.context);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == ErrorCode::kModelLoading);
    CHECK(result.status().message().find("tx_2") != std::string::npos);
    CHECK(backend.expression_requests.size() == 2);
  }
}

TEST_CASE("find-genes: cancellation stops before the next worker call", "[find_genes]") {
  FakeBackend backend;
  backend.transcripts = {MakeTranscript("tx_1", "+", 6000), MakeTranscript("tx_2", "+", 9000)};
  Run run;
  backend.cancel_after_annotation = &run.cancelled;
  auto result = RunFindGenes(Input(20000), kModels, backend, run.context);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == ErrorCode::kServiceUnavailable);
  CHECK(backend.expression_requests.empty());

  FakeBackend untouched;
  Run early;
  early.cancelled = true;
  CHECK_FALSE(RunFindGenes(Input(20000), kModels, untouched, early.context).ok());
  CHECK(untouched.annotation_requests.empty());
}

// ------------------------------------------------------------------ rendering

TEST_CASE("find-genes: meta.description_match is the expression worker's, from the first scored "
          "gene", "[find_genes][render]") {
  FakeBackend backend;
  backend.report_match = true;
  backend.transcripts = {MakeTranscript("tx_1", "+", 6000), MakeTranscript("tx_3", "-", 9000)};
  core::ValidatedFindGenes input = Input(20000, R"({"description":"adult liver"})");
  Run run;
  auto result = RunFindGenes(input, kModels, backend, run.context);
  REQUIRE(result.ok());
  REQUIRE(backend.expression_requests.size() == 2);
  const std::string body = RenderFindGenesJson(input, *result, {"job-9", "req-9"});
  rapidjson::Document d;
  d.Parse(body.c_str());
  INFO(body.substr(0, 3000));
  REQUIRE_FALSE(d.HasParseError());
  const auto& match = d["meta"]["description_match"];
  REQUIRE(match.IsObject());
  CHECK(match["matched"].GetBool());
  REQUIRE(match["contexts"].Size() == 1);
  CHECK(std::string(match["contexts"][0]["id"].GetString()) == "E066");
  CHECK(std::string(match["contexts"][0]["name"].GetString()) == "Liver");
  CHECK(match["contexts"][0]["similarity"].GetDouble() == Approx(0.81));  // the first call's

  // No gene scored: no expression call, so nothing to report.
  FakeBackend empty;
  empty.report_match = true;
  auto none = RunFindGenes(input, kModels, empty, run.context);
  REQUIRE(none.ok());
  rapidjson::Document e;
  e.Parse(RenderFindGenesJson(input, *none, {"job-9", "req-9"}).c_str());
  REQUIRE_FALSE(e.HasParseError());
  CHECK(e["meta"]["description_match"].IsNull());
}

TEST_CASE("find-genes: the rendered body has the contract's fields and invariants",
          "[find_genes][render]") {
  FakeBackend backend;
  // tx_2's TSS lies outside the region (a defensive case): skipped, with its reason.
  backend.transcripts = {MakeTranscript("tx_1", "+", 6000), MakeTranscript("tx_2", "+", 20100),
                         MakeTranscript("tx_3", "-", 9000)};
  core::ValidatedFindGenes input = Input(20000, R"({"description":"adult liver"})",
                                   R"(,"sequence_name":"region-7")");
  Run run;
  auto result = RunFindGenes(input, kModels, backend, run.context);
  REQUIRE(result.ok());
  const std::string body = RenderFindGenesJson(input, *result, {"job-9", "req-9"});
  rapidjson::Document d;
  d.Parse(body.c_str());
  INFO(body.substr(0, 3000));
  REQUIRE_FALSE(d.HasParseError());

  auto keys = [](const rapidjson::Value& v) {
    std::vector<std::string> out;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) out.push_back(m->name.GetString());
    return out;
  };
  // Exactly the contract's fields, in its order.
  CHECK(keys(d) == std::vector<std::string>{"data", "meta"});
  CHECK(keys(d["data"]) ==
        std::vector<std::string>{"task", "annotation_model", "expression_model", "input", "summary",
                                 "annotation", "expression_predictions"});
  CHECK(keys(d["meta"]) == std::vector<std::string>{
                               "job_id", "request_id", "task", "model", "cold_start",
                               "model_load_time_ms", "inference_time_ms", "sequence_length",
                               "annotation_model", "expression_model", "annotation", "expression",
                               "task_specific_counts", "description_match"});
  // The fake worker reports no match (a package without contexts): null, not left out.
  CHECK(d["meta"]["description_match"].IsNull());
  for (const char* stage : {"annotation", "expression"}) {
    CHECK(keys(d["meta"][stage]) ==
          std::vector<std::string>{"cold_start", "model_load_time_ms", "inference_time_ms"});
  }
  CHECK(keys(d["meta"]["task_specific_counts"]) ==
        std::vector<std::string>{"genes_found", "genes_predicted", "genes_skipped"});
  const auto& data = d["data"];
  CHECK(std::string(data["task"].GetString()) == "find_genes_and_predict_expression");
  CHECK(std::string(data["annotation_model"].GetString()) == "annotation-m");
  CHECK(std::string(data["expression_model"].GetString()) == "expression-m");
  CHECK(std::string(data["input"]["sequence_name"].GetString()) == "region-7");
  CHECK(std::string(data["input"]["description"].GetString()) == "adult liver");
  CHECK(data["input"].MemberCount() == 2);
  CHECK(data["summary"].IsObject());
  CHECK_FALSE(data.HasMember("model"));
  // The annotation payload in the annotation task's own shape.
  const auto& annotation = data["annotation"];
  CHECK(std::string(annotation["task"].GetString()) == "annotation");
  CHECK(std::string(annotation["model"].GetString()) == "annotation-m");
  CHECK(std::string(annotation["input"]["sequence_name"].GetString()) == "region-7");
  CHECK(annotation["transcripts"].Size() == 3);
  CHECK(std::string(annotation["formats"]["gff3"].GetString()) == "##gff-version 3\n");
  CHECK(annotation.HasMember("summary"));

  const auto& genes = data["expression_predictions"];
  REQUIRE(genes.Size() == 3);
  for (rapidjson::SizeType i = 0; i < genes.Size(); ++i) {
    const auto& g = genes[i];
    for (const char* key : {"gene_index", "gene_name", "strand", "tss_position",
                            "centered_sequence_length", "expression", "expression_tpm", "skipped",
                            "skip_reason"}) {
      INFO(key);
      CHECK(g.HasMember(key));
    }
    CHECK(g["gene_index"].GetInt() == static_cast<int>(i));
    CHECK(std::string(g["gene_name"].GetString()) ==
          annotation["transcripts"][i]["id"].GetString());
  }
  const auto& inside = genes[0];
  CHECK_FALSE(inside["skipped"].GetBool());
  CHECK(inside["skip_reason"].IsNull());
  CHECK(inside["centered_sequence_length"].GetInt() == 9198);
  CHECK(inside["padded_bp"].GetInt() == 0);
  CHECK(inside["expression"].GetDouble() == 0.5);
  CHECK(inside["expression_tpm"].GetDouble() == Approx(std::expm1(0.5)));
  const auto& skipped = genes[1];
  CHECK(skipped["skipped"].GetBool());
  CHECK(skipped["expression"].IsNull());
  CHECK(skipped["expression_tpm"].IsNull());
  CHECK(std::string(skipped["skip_reason"].GetString()).find("outside") != std::string::npos);
  CHECK(skipped["centered_sequence_length"].GetInt() == 0);
  CHECK(skipped["tss_position"].GetInt() == 20100);
  CHECK(std::string(genes[2]["strand"].GetString()) == "-");

  const auto& meta = d["meta"];
  CHECK(std::string(meta["job_id"].GetString()) == "job-9");
  CHECK(std::string(meta["request_id"].GetString()) == "req-9");
  CHECK(std::string(meta["task"].GetString()) == "find_genes_and_predict_expression");
  CHECK(std::string(meta["model"].GetString()) == "annotation-m+expression-m");
  CHECK(std::string(meta["annotation_model"].GetString()) == "annotation-m");
  CHECK(std::string(meta["expression_model"].GetString()) == "expression-m");
  CHECK(meta["sequence_length"].GetInt() == 20000);
  CHECK(meta["cold_start"].GetBool());
  CHECK(meta["model_load_time_ms"].GetInt() == 700 + 900);
  CHECK(meta["inference_time_ms"].GetInt() == 300 + 2 * 20);
  CHECK(meta["annotation"]["cold_start"].GetBool());
  CHECK(meta["annotation"]["model_load_time_ms"].GetInt() == 700);
  CHECK(meta["annotation"]["inference_time_ms"].GetInt() == 300);
  CHECK(meta["expression"]["model_load_time_ms"].GetInt() == 900);
  CHECK(meta["expression"]["inference_time_ms"].GetInt() == 40);
  const auto& counts = meta["task_specific_counts"];
  CHECK(counts.MemberCount() == 3);
  CHECK(counts["genes_found"].GetInt() == 3);
  CHECK(counts["genes_predicted"].GetInt() == 2);
  CHECK(counts["genes_skipped"].GetInt() == 1);
  CHECK(counts["genes_predicted"].GetInt() + counts["genes_skipped"].GetInt() ==
        counts["genes_found"].GetInt());
  CHECK(data["summary"]["genes_found"].GetInt() == 3);
}

TEST_CASE("find-genes: warm stages report no load time and a false cold_start",
          "[find_genes][render]") {
  FindGenesResult result;
  result.models = kModels;
  result.annotation_input.task = Task::kAnnotation;
  result.annotation.set_cold_start(false);
  result.annotation.set_model_load_time_ms(1234);  // a worker's stale figure must not leak
  result.annotation_timings.Add(result.annotation);
  core::ValidatedFindGenes input = Input(1000);
  rapidjson::Document d;
  d.Parse(RenderFindGenesJson(input, result, {"j", "r"}).c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK_FALSE(d["meta"]["cold_start"].GetBool());
  CHECK(d["meta"]["model_load_time_ms"].GetInt() == 0);
  CHECK(d["meta"]["annotation"]["model_load_time_ms"].GetInt() == 0);
  CHECK(d["meta"]["task_specific_counts"]["genes_found"].GetInt() == 0);
  CHECK(d["data"]["expression_predictions"].Size() == 0);
  CHECK(d["data"]["summary"]["max_expression"].IsNull());
}
