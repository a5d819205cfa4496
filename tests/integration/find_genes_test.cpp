// The find-genes-and-predict-expression workflow end to end: real gateway, real annotation and
// expression workers (the bundled tiny models), real Redis, over HTTP. The tiny untrained
// annotation model calls transcripts in random DNA (several per kb), which is what these tests
// rely on to have genes to score; its weights are fixed, so the regions below are stable.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

const std::string kPath = "/v1/workflows/find-genes-and-predict-expression";

std::string Str(const rapidjson::Value& v, const char* key) {
  INFO("key " << key);
  REQUIRE(v.HasMember(key));
  REQUIRE(v[key].IsString());
  return v[key].GetString();
}

std::string Body(const std::string& sequence, const std::string& options,
                 const std::string& extra = "") {
  return "{\"sequence\": \"" + sequence + "\", \"options\": " + options + extra + "}";
}

const std::string kLiver = R"({"description": "adult liver tissue"})";

std::string Code(const HttpResult& r) {
  auto doc = ParseJson(r.body);
  REQUIRE(doc->HasMember("error"));
  return (*doc)["error"]["code"].GetString();
}

HttpResult PollUntilDone(const Service& svc, const std::string& job_id, const std::string& key,
                         int* running_polls = nullptr) {
  HttpResult r;
  for (int i = 0; i < 1200; ++i) {
    r = svc.Get("/v1/tasks/jobs/" + job_id, key);
    if (r.status != 202) return r;
    if (running_polls) ++*running_polls;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

std::string DefaultModel(const Service& svc, const std::string& task) {
  auto doc = ParseJson(svc.Get("/v1/tasks/" + task + "/models").body);
  return (*doc)["default_model"].GetString();
}

// The window the contract describes, written out independently of the gateway's code: the
// gene's sense strand, [tss-4599, tss+4599) in sense coordinates, N beyond the region.
std::string ExpectedWindow(const std::string& region, int64_t tss, const std::string& strand) {
  const int64_t length = static_cast<int64_t>(region.size());
  std::string window;
  if (strand == "+") {
    for (int64_t i = tss - 4599; i < tss + 4599; ++i) {
      window += (i >= 0 && i < length) ? region[static_cast<size_t>(i)] : 'N';
    }
    return window;
  }
  // '-': walk the plus strand downwards from tss+4599 (sense upstream) to tss-4598, complemented.
  for (int64_t i = tss + 4599; i > tss - 4599; --i) {
    char c = (i >= 0 && i < length) ? region[static_cast<size_t>(i)] : 'N';
    switch (c) {
      case 'A': c = 'T'; break;
      case 'C': c = 'G'; break;
      case 'G': c = 'C'; break;
      case 'T': c = 'A'; break;
      default: break;
    }
    window += c;
  }
  return window;
}

// The expression task's own prediction for `window` (exactly 9,198 bp: tss_index defaults).
double ExpressionOf(const Service& svc, const std::string& key, const std::string& window) {
  auto r = svc.Post("/v1/tasks/expression/predict",
                    "{\"sequence\": \"" + window + "\", \"options\": " + kLiver + "}", key);
  INFO(r.body.substr(0, 500));
  REQUIRE(r.status == 200);
  return (*ParseJson(r.body))["data"]["prediction"]["expression"].GetDouble();
}

}  // namespace

TEST_CASE("find-genes workflow end to end", "[integration][find_genes]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;

  SECTION("sync: both stages run, each gene is scored on its sense-strand TSS window") {
    const std::string region = RandomDna(12000, 21);
    auto r = svc->Post(kPath, Body(region, kLiver, R"(, "sequence_name": "region-21")"), key);
    INFO(r.body.substr(0, 1500));
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    const auto& data = (*doc)["data"];
    const auto& meta = (*doc)["meta"];

    const std::string annotation_model = DefaultModel(*svc, "annotation");
    const std::string expression_model = DefaultModel(*svc, "expression");
    CHECK(Str(data, "task") == "find_genes_and_predict_expression");
    CHECK(Str(data, "annotation_model") == annotation_model);
    CHECK(Str(data, "expression_model") == expression_model);
    CHECK(Str(data["input"], "sequence_name") == "region-21");
    CHECK(Str(data["input"], "description") == "adult liver tissue");
    CHECK(data["summary"].IsObject());
    CHECK(Str(data["annotation"], "task") == "annotation");
    CHECK(Str(data["annotation"], "model") == annotation_model);
    CHECK(Str(data["annotation"]["formats"], "gff3").rfind("##gff-version 3", 0) == 0);

    CHECK(Str(meta, "task") == "find_genes_and_predict_expression");
    CHECK(Str(meta, "model") == annotation_model + "+" + expression_model);
    CHECK(Str(meta, "annotation_model") == annotation_model);
    CHECK(Str(meta, "expression_model") == expression_model);
    CHECK(meta["sequence_length"].GetInt() == 12000);
    const auto& a = meta["annotation"];
    const auto& e = meta["expression"];
    CHECK(meta["cold_start"].GetBool() == (a["cold_start"].GetBool() || e["cold_start"].GetBool()));
    CHECK(meta["model_load_time_ms"].GetInt64() ==
          a["model_load_time_ms"].GetInt64() + e["model_load_time_ms"].GetInt64());
    CHECK(meta["inference_time_ms"].GetInt64() ==
          a["inference_time_ms"].GetInt64() + e["inference_time_ms"].GetInt64());
    REQUIRE(r.Header("x-job-id"));
    CHECK(*r.Header("x-job-id") == Str(meta, "job_id"));
    CHECK(*r.Header("x-request-id") == Str(meta, "request_id"));
    CHECK(r.Header("ratelimit-limit"));

    const auto& counts = meta["task_specific_counts"];
    const auto& transcripts = data["annotation"]["transcripts"];
    const auto& genes = data["expression_predictions"];
    INFO("the bundled annotation model is expected to call transcripts in random DNA");
    REQUIRE(counts["genes_found"].GetInt() >= 2);
    CHECK(counts["genes_found"].GetInt() == static_cast<int>(transcripts.Size()));
    CHECK(counts["genes_found"].GetInt() == static_cast<int>(genes.Size()));
    CHECK(counts["genes_predicted"].GetInt() + counts["genes_skipped"].GetInt() ==
          counts["genes_found"].GetInt());
    CHECK(counts["genes_skipped"].GetInt() == 0);  // 12 kb holds every TSS window
    // The training context "adult liver tissue" was matched to, as the expression calls said.
    const auto& match = meta["description_match"];
    REQUIRE(match.IsObject());
    CHECK(match["matched"].GetBool());
    REQUIRE(match["contexts"].Size() >= 1);
    CHECK(Str(match["contexts"][0], "id") == "E066");
    CHECK(match["contexts"][0]["similarity"].GetDouble() >= 0.4);

    // Each entry mirrors its transcript; every window holds 9,198 bp.
    int checked_plus = 0, checked_minus = 0, checked_padded = 0;
    for (rapidjson::SizeType i = 0; i < genes.Size(); ++i) {
      const auto& g = genes[i];
      CHECK(g["gene_index"].GetInt() == static_cast<int>(i));
      CHECK(Str(g, "gene_name") == Str(transcripts[i], "id"));
      CHECK(Str(g, "strand") == Str(transcripts[i], "strand"));
      CHECK(g["tss_position"].GetInt64() == transcripts[i]["tss_position"].GetInt64());
      CHECK(g["centered_sequence_length"].GetInt64() + g["padded_bp"].GetInt64() == 9198);
      CHECK_FALSE(g["skipped"].GetBool());
      CHECK(g["skip_reason"].IsNull());
      REQUIRE(g["expression"].IsNumber());
      CHECK(g["expression_tpm"].GetDouble() ==
            Approx(std::max(0.0, std::expm1(g["expression"].GetDouble()))));
      // Cross-check a few genes against the expression task on the contract's window: one
      // unpadded per strand and up to two padded (in 12 kb most TSS windows run off an end).
      const std::string strand = Str(g, "strand");
      const bool padded = g["padded_bp"].GetInt64() > 0;
      bool pick = false;
      if (padded && checked_padded < 2) pick = true, ++checked_padded;
      if (!padded && strand == "+" && checked_plus < 1) pick = true, ++checked_plus;
      if (!padded && strand == "-" && checked_minus < 1) pick = true, ++checked_minus;
      if (pick) {
        INFO("gene " << i << " strand " << strand << " tss " << g["tss_position"].GetInt64());
        const std::string window = ExpectedWindow(region, g["tss_position"].GetInt64(), strand);
        CHECK(g["expression"].GetDouble() ==
              Approx(ExpressionOf(*svc, key, window)).epsilon(1e-4));
      }
    }
    CHECK(checked_plus + checked_minus + checked_padded >= 2);

    // A sync call is a job too: the poll returns the same body.
    auto poll = svc->Get("/v1/tasks/jobs/" + Str(meta, "job_id"), key);
    CHECK(poll.status == 200);
    CHECK(poll.body == r.body);
  }

  SECTION("shift_coordinates: genome coordinates out, the same windows scored") {
    const std::string region = RandomDna(12000, 21);
    auto plain = ParseJson(svc->Post(kPath, Body(region, kLiver), key).body);
    auto r = svc->Post(kPath,
                       Body(region,
                            R"({"description": "adult liver tissue", "shift_coordinates": "UCSC"})",
                            R"(, "sequence_name": "chr20:1,000,001-1,012,000")"),
                       key);
    INFO(r.body.substr(0, 1000));
    REQUIRE(r.status == 200);
    auto shifted = ParseJson(r.body);
    const auto& a = (*plain)["data"]["expression_predictions"];
    const auto& b = (*shifted)["data"]["expression_predictions"];
    REQUIRE(a.Size() == b.Size());
    REQUIRE(a.Size() > 0);
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
      CHECK(b[i]["tss_position"].GetInt64() == a[i]["tss_position"].GetInt64() + 1000000);
      CHECK(b[i]["tss_position"].GetInt64() ==
            (*shifted)["data"]["annotation"]["transcripts"][i]["tss_position"].GetInt64());
      CHECK(b[i]["expression"].GetDouble() == Approx(a[i]["expression"].GetDouble()).epsilon(1e-4));
    }
    const std::string gff3 = Str((*shifted)["data"]["annotation"]["formats"], "gff3");
    CHECK(gff3.find("\nchr20\t") != std::string::npos);
  }

  SECTION("a region shorter than 4,599 bp: every gene is listed as skipped") {
    auto r = svc->Post(kPath, Body(RandomDna(4000, 22), kLiver), key);
    INFO(r.body.substr(0, 1000));
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    const auto& counts = (*doc)["meta"]["task_specific_counts"];
    REQUIRE(counts["genes_found"].GetInt() >= 1);
    CHECK(counts["genes_skipped"].GetInt() == counts["genes_found"].GetInt());
    CHECK(counts["genes_predicted"].GetInt() == 0);
    for (const auto& g : (*doc)["data"]["expression_predictions"].GetArray()) {
      CHECK(g["skipped"].GetBool());
      CHECK(g["expression"].IsNull());
      CHECK(g["expression_tpm"].IsNull());
      CHECK(std::string(g["skip_reason"].GetString()).find("5198 bp of N padding") !=
            std::string::npos);
      CHECK(g["centered_sequence_length"].GetInt() == 4000);
    }
    // The expression stage never ran.
    CHECK_FALSE((*doc)["meta"]["expression"]["cold_start"].GetBool());
    CHECK((*doc)["meta"]["expression"]["inference_time_ms"].GetInt() == 0);
  }

  SECTION("above 50,000 bp: 413 sync_too_large; the identical body runs as a job") {
    const std::string body = Body(RandomDna(52000, 23), kLiver);
    auto sync = svc->Post(kPath, body, key);
    REQUIRE(sync.status == 413);
    auto err = ParseJson(sync.body);
    CHECK(Str((*err)["error"], "code") == "sync_too_large");
    CHECK((*err)["error"]["details"]["sequence_length"].GetInt() == 52000);
    CHECK((*err)["error"]["details"]["threshold"].GetInt() == 50000);

    auto submit = svc->Post(kPath, body, key, {"Prefer: respond-async"});
    REQUIRE(submit.status == 202);
    auto accepted = ParseJson(submit.body);
    const std::string job_id = Str((*accepted)["data"], "job_id");
    CHECK(Str((*accepted)["data"], "status") == "accepted");
    CHECK(Str((*accepted)["meta"], "task") == "find_genes_and_predict_expression");
    CHECK(Str((*accepted)["meta"], "mode") == "async");
    CHECK(*submit.Header("content-location") == "/v1/tasks/jobs/" + job_id);

    // While it runs, polls carry progress.
    auto running = svc->Get("/v1/tasks/jobs/" + job_id, key);
    if (running.status == 202) {
      auto progress = ParseJson(running.body);
      CHECK((*progress)["data"]["progress"]["current_percent"].IsNumber());
      CHECK((*progress)["data"]["progress"]["message"].IsString());
      CHECK(Str((*progress)["meta"], "task") == "find_genes_and_predict_expression");
    }
    CHECK(svc->Get("/v1/tasks/jobs/" + job_id, svc->keys().bob).status == 404);
    auto done = PollUntilDone(*svc, job_id, key);
    INFO(done.body.substr(0, 1000));
    REQUIRE(done.status == 200);
    auto result = ParseJson(done.body);
    CHECK(Str((*result)["meta"], "job_id") == job_id);
    CHECK((*result)["meta"]["sequence_length"].GetInt() == 52000);
    const auto& counts = (*result)["meta"]["task_specific_counts"];
    CHECK(counts["genes_found"].GetInt() > 0);
    CHECK(counts["genes_predicted"].GetInt() + counts["genes_skipped"].GetInt() ==
          counts["genes_found"].GetInt());
  }

  SECTION("admission errors: 422, 415, model errors") {
    const std::string region = RandomDna(1500, 24);
    auto missing = svc->Post(kPath, Body(region, "{}"), key);
    REQUIRE(missing.status == 422);
    auto doc = ParseJson(missing.body);
    CHECK(Str((*doc)["error"], "code") == "validation_failed");
    CHECK(Str((*doc)["error"]["details"]["errors"][0], "type") == "missing");
    CHECK((*doc)["error"]["details"]["errors"][0]["loc"].Size() == 3);
    CHECK(std::string((*doc)["error"]["details"]["errors"][0]["loc"][2].GetString()) ==
          "description");

    auto empty = svc->Post(kPath, Body(region, R"({"description": ""})"), key);
    CHECK(empty.status == 422);
    CHECK(Code(empty) == "validation_failed");
    auto no_options = svc->Post(kPath, "{\"sequence\": \"" + region + "\"}", key);
    CHECK(no_options.status == 422);

    auto unknown_top = svc->Post(kPath, Body(region, kLiver, R"(, "model": "x")"), key);
    REQUIRE(unknown_top.status == 422);
    auto unknown_doc = ParseJson(unknown_top.body);
    CHECK(Str((*unknown_doc)["error"]["details"]["errors"][0], "type") == "extra_forbidden");
    auto unknown_option = svc->Post(
        kPath, Body(region, R"({"description": "x", "reverse_complement": false})"), key);
    REQUIRE(unknown_option.status == 422);
    auto option_doc = ParseJson(unknown_option.body);
    CHECK(std::string((*option_doc)["error"]["details"]["errors"][0]["loc"][2].GetString()) ==
          "reverse_complement");
    CHECK(svc->Post(kPath, Body(RandomDna(999), kLiver), key).status == 422);

    auto gff3 = svc->Post(kPath + "?format=gff3", Body(region, kLiver), key);
    CHECK(gff3.status == 415);
    CHECK(Code(gff3) == "unsupported_format");
    CHECK(svc->Post(kPath, Body(region, kLiver), key, {"Accept: text/x-bed"}).status == 415);

    auto unknown_model = svc->Post(
        kPath, Body(region, R"({"description": "x", "expression_model": "nope"})"), key);
    REQUIRE(unknown_model.status == 404);
    auto model_doc = ParseJson(unknown_model.body);
    CHECK(Str((*model_doc)["error"], "code") == "model_not_found");
    CHECK(std::string((*model_doc)["error"]["details"]["available_models"][0].GetString()) ==
          DefaultModel(*svc, "expression"));
    auto crossed = svc->Post(kPath,
                             Body(region, "{\"description\": \"x\", \"annotation_model\": \"" +
                                              DefaultModel(*svc, "expression") + "\"}"),
                             key);
    REQUIRE(crossed.status == 422);
    auto crossed_doc = ParseJson(crossed.body);
    CHECK(Str((*crossed_doc)["error"], "code") == "task_not_supported_by_model");
    CHECK(Str((*crossed_doc)["error"]["details"], "task") == "annotation");
    CHECK(std::string((*crossed_doc)["error"]["details"]["supported_tasks"][0].GetString()) ==
          "expression");
    CHECK(svc->Post(kPath, Body(region, kLiver)).status == 401);
  }
}

TEST_CASE("find-genes: a dead worker of either stage is 503, never a hang",
          "[integration][find_genes]") {
  DNASERVE_REQUIRE_SERVICE(svc);
  const std::string key = svc->keys().alice;
  const std::string body = Body(RandomDna(12000, 21), kLiver);

  for (std::string task : {"expression", "annotation"}) {
    DYNAMIC_SECTION(task + " worker down") {
      svc->KillWorker(task);
      auto started = std::chrono::steady_clock::now();
      auto r = svc->Post(kPath, body, key);
      CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
      INFO(r.body);
      REQUIRE(r.status == 503);
      CHECK(Code(r) == "service_unavailable");
      CHECK(Str((*ParseJson(r.body))["error"], "message").find(task + " stage") !=
            std::string::npos);
      // The failed job polls as the same envelope.
      auto poll = svc->Get("/v1/tasks/jobs/" + *r.Header("x-job-id"), key);
      CHECK(poll.status == 503);
      CHECK(poll.body == r.body);

      svc->RestartWorker(task);
      long status = 0;
      for (int i = 0; i < 100 && status != 200; ++i) {
        status = svc->Post(kPath, body, key).status;
        if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
      CHECK(status == 200);
    }
  }
}
