// The JSON bodies of predict and job responses, checked by parsing them back: the exact key sets
// of the contract's {data, meta} envelope per task, the values carried over from the worker's
// result, and that no model output (NaN, infinities, odd strings) can produce invalid JSON.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/render/json_writer.h"
#include "core/render/predict_data.h"
#include "core/render/predict_response.h"
#include "gateway/render/job_response.h"

namespace dnaserve::core {
namespace {

// The job and model renderings are the gateway's (gateway/render/job_response.h).
using namespace ::dnaserve::gateway;

namespace pb = worker::v1;
using Json = rapidjson::Value;

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  INFO(body);
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

std::set<std::string> Keys(const Json& object) {
  REQUIRE(object.IsObject());
  std::set<std::string> keys;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    keys.insert(std::string(it->name.GetString(), it->name.GetStringLength()));
  }
  return keys;
}

std::string Str(const Json& v) {
  REQUIRE(v.IsString());
  return std::string(v.GetString(), v.GetStringLength());
}

core::ValidatedPredict MakeInput(Task task, int64_t sequence_length) {
  core::ValidatedPredict input;
  input.task = task;
  input.sequence_name = "chr7:1000-5000";
  input.sequence_length = sequence_length;
  input.request.set_model("requested-model");
  return input;
}

pb::PredictResult MakeResult(const std::string& model) {
  pb::PredictResult result;
  result.set_model(model);
  result.set_cold_start(false);
  result.set_model_load_time_ms(0);
  result.set_inference_time_ms(42);
  return result;
}

const core::ResponseIds kIds{"0b4f8a52-8d7e-4a57-9c2e-3f1d2a6b7c80", "req-123"};

const std::set<std::string> kMetaKeys = {"job_id",
                                         "request_id",
                                         "task",
                                         "model",
                                         "cold_start",
                                         "model_load_time_ms",
                                         "inference_time_ms",
                                         "sequence_length",
                                         "task_specific_counts"};

void CheckCommonEnvelope(const Json& doc, Task task, const std::string& model,
                         int64_t sequence_length) {
  REQUIRE(Keys(doc) == std::set<std::string>{"data", "meta"});
  const Json& meta = doc["meta"];
  std::set<std::string> expected = kMetaKeys;
  if (task == Task::kExpression) expected.insert("description_match");  // null or an object
  CHECK(Keys(meta) == expected);
  CHECK(Str(meta["job_id"]) == kIds.job_id);
  CHECK(Str(meta["request_id"]) == kIds.request_id);
  CHECK(Str(meta["task"]) == std::string(TaskName(task)));
  CHECK(Str(meta["model"]) == model);
  CHECK(meta["sequence_length"].GetInt64() == sequence_length);
  CHECK(Str(meta["task_specific_counts"]["task"]) == std::string(TaskName(task)));

  const Json& data = doc["data"];
  CHECK(Str(data["task"]) == std::string(TaskName(task)));
  CHECK(Str(data["model"]) == model);
  CHECK(Str(data["input"]["sequence_name"]) == "chr7:1000-5000");
  CHECK(data["summary"].IsObject());
  CHECK((data["formats"].IsObject() || data["formats"].IsNull()));
}

TEST_CASE("promoter envelope carries regions, window details and its counts", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kPromoter, 4321);
  input.request.mutable_promoter()->set_threshold(0.7);
  pb::PredictResult result = MakeResult("promoter-human-2k");
  result.set_cold_start(true);
  result.set_model_load_time_ms(1500);
  auto* promoter = result.mutable_promoter();
  for (int i = 0; i < 3; ++i) {
    auto* w = promoter->add_windows();
    w->set_index(i);
    w->set_start(i * 1000);
    w->set_end(i == 2 ? 4321 : i * 1000 + 2000);
    w->set_padded_bp(i == 2 ? 679 : 0);
    w->set_score(i == 1 ? 0.91 : 0.125);
    w->set_is_promoter(i == 1);
  }
  auto* region = promoter->add_regions();
  region->set_start(1000);
  region->set_end(3000);
  region->set_score(0.91);
  (*result.mutable_formats())["bedgraph"] = "track type=bedGraph\n";
  (*result.mutable_formats())["bed"] = "chr7\t1000\t3000\n";

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kPromoter, "promoter-human-2k", 4321);

  const Json& meta = doc["meta"];
  CHECK(meta["cold_start"].GetBool());
  CHECK(meta["model_load_time_ms"].GetInt64() == 1500);
  CHECK(meta["inference_time_ms"].GetInt64() == 42);
  const Json& counts = meta["task_specific_counts"];
  CHECK(Keys(counts) == std::set<std::string>{"task", "windows_processed", "regions_found"});
  CHECK(counts["windows_processed"].GetInt64() == 3);
  CHECK(counts["regions_found"].GetInt64() == 1);

  const Json& data = doc["data"];
  CHECK(Keys(data) == std::set<std::string>{"task", "model", "input", "summary", "formats",
                                            "regions", "window_details"});
  CHECK(Keys(data["input"]) == std::set<std::string>{"sequence_name"});
  REQUIRE(data["regions"].Size() == 1);
  CHECK(Keys(data["regions"][0]) == std::set<std::string>{"start", "end", "score"});
  CHECK(data["regions"][0]["start"].GetInt64() == 1000);
  CHECK(data["regions"][0]["end"].GetInt64() == 3000);
  CHECK(data["regions"][0]["score"].GetDouble() == 0.91);
  REQUIRE(data["window_details"].Size() == 3);
  const Json& last = data["window_details"][2];
  CHECK(Keys(last) ==
        std::set<std::string>{"index", "start", "end", "padded_bp", "score", "is_promoter"});
  CHECK(last["index"].GetInt() == 2);
  CHECK(last["end"].GetInt64() == 4321);
  CHECK(last["padded_bp"].GetInt64() == 679);
  CHECK(last["score"].GetDouble() == 0.125);
  CHECK_FALSE(last["is_promoter"].GetBool());
  CHECK(data["window_details"][1]["is_promoter"].GetBool());
  CHECK(data["summary"]["threshold"].GetDouble() == 0.7);
  CHECK(data["summary"]["max_score"].GetDouble() == 0.91);
  CHECK(Keys(data["formats"]) == std::set<std::string>{"bed", "bedgraph"});
  CHECK(Str(data["formats"]["bed"]) == "chr7\t1000\t3000\n");
}

TEST_CASE("model_load_time_ms is 0 unless the model was cold", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kEnhancer, 500);
  pb::PredictResult result = MakeResult("enhancer-fly");
  result.set_cold_start(false);
  result.set_model_load_time_ms(777);  // a worker's stale figure must not leak into a warm call
  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CHECK_FALSE(doc["meta"]["cold_start"].GetBool());
  CHECK(doc["meta"]["model_load_time_ms"].GetInt64() == 0);

  result.set_cold_start(true);
  auto cold = Parse(core::RenderPredictJson(input, result, kIds));
  CHECK(cold["meta"]["cold_start"].GetBool());
  CHECK(cold["meta"]["model_load_time_ms"].GetInt64() == 777);
}

TEST_CASE("the model id falls back to the request's when the worker leaves it empty", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kEnhancer, 500);
  auto doc = Parse(core::RenderPredictJson(input, MakeResult(""), kIds));
  CHECK(Str(doc["meta"]["model"]) == "requested-model");
  CHECK(Str(doc["data"]["model"]) == "requested-model");
}

TEST_CASE("splice envelope names site types and carries tracks and windows", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kSplice, 20000);
  input.request.mutable_splice()->set_threshold(0.5);
  input.request.mutable_splice()->add_site_types(pb::SPLICE_SITE_TYPE_DONOR);
  input.request.mutable_splice()->add_site_types(pb::SPLICE_SITE_TYPE_ACCEPTOR);
  pb::PredictResult result = MakeResult("splice-human");
  auto* splice = result.mutable_splice();
  auto* donor = splice->add_sites();
  donor->set_type(pb::SPLICE_SITE_TYPE_DONOR);
  donor->set_start(120);
  donor->set_end(126);
  donor->set_token_index(17);
  donor->set_score(0.93);
  donor->set_donor_score(0.93);
  donor->set_acceptor_score(0.01);
  donor->set_window_index(0);
  auto* acceptor = splice->add_sites();
  acceptor->set_type(pb::SPLICE_SITE_TYPE_ACCEPTOR);
  acceptor->set_start(15300);
  acceptor->set_end(15304);
  acceptor->set_token_index(3);
  acceptor->set_score(0.8);
  acceptor->set_donor_score(0.02);
  acceptor->set_acceptor_score(0.8);
  acceptor->set_window_index(1);
  for (int i = 0; i < 2; ++i) {
    auto* w = splice->add_windows();
    w->set_index(i);
    w->set_start(i * 15000);
    w->set_end(i == 0 ? 15000 : 20000);
    w->set_padded_bp(i == 0 ? 0 : 10000);
    w->set_tokens(2500);
    w->set_sites(1);
  }
  (*result.mutable_tracks())["donor"] = "donor-track";
  (*result.mutable_tracks())["acceptor"] = "acceptor-track";

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kSplice, "splice-human", 20000);
  const Json& counts = doc["meta"]["task_specific_counts"];
  CHECK(Keys(counts) == std::set<std::string>{"task", "windows_processed", "sites_found"});
  CHECK(counts["windows_processed"].GetInt64() == 2);
  CHECK(counts["sites_found"].GetInt64() == 2);

  const Json& data = doc["data"];
  CHECK(Keys(data) == std::set<std::string>{"task", "model", "input", "summary", "formats", "sites",
                                            "tracks", "window_details"});
  CHECK(data["formats"].IsNull());
  REQUIRE(data["sites"].Size() == 2);
  const Json& d = data["sites"][0];
  CHECK(Keys(d) == std::set<std::string>{"type", "start", "end", "token_index", "score",
                                         "donor_score", "acceptor_score", "window_index"});
  CHECK(Str(d["type"]) == "donor");
  CHECK(d["start"].GetInt64() == 120);
  CHECK(d["end"].GetInt64() == 126);
  CHECK(d["token_index"].GetInt64() == 17);
  CHECK(d["donor_score"].GetDouble() == 0.93);
  CHECK(d["acceptor_score"].GetDouble() == 0.01);
  CHECK(Str(data["sites"][1]["type"]) == "acceptor");
  CHECK(data["sites"][1]["window_index"].GetInt() == 1);
  CHECK(Str(data["tracks"]["donor"]) == "donor-track");
  CHECK(Str(data["tracks"]["acceptor"]) == "acceptor-track");
  REQUIRE(data["window_details"].Size() == 2);
  CHECK(data["window_details"][1]["padded_bp"].GetInt64() == 10000);
  CHECK(data["summary"]["donor_sites"].GetInt64() == 1);
  CHECK(data["summary"]["acceptor_sites"].GetInt64() == 1);
}

TEST_CASE("enhancer envelope has windows with dev and hk, tracks and a null formats", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kEnhancer, 498);
  pb::PredictResult result = MakeResult("enhancer-fly");
  for (int i = 0; i < 2; ++i) {
    auto* w = result.mutable_enhancer()->add_windows();
    w->set_index(i);
    w->set_start(i * 249);
    w->set_end(i * 249 + 249);
    w->set_dev(1.5 - i);
    w->set_hk(-0.25 * i);
  }
  (*result.mutable_tracks())["dev"] = "dev-bedgraph";
  (*result.mutable_tracks())["hk"] = "hk-bedgraph";

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kEnhancer, "enhancer-fly", 498);
  CHECK(Keys(doc["meta"]["task_specific_counts"]) ==
        std::set<std::string>{"task", "windows_processed"});
  CHECK(doc["meta"]["task_specific_counts"]["windows_processed"].GetInt64() == 2);
  const Json& data = doc["data"];
  CHECK(Keys(data) ==
        std::set<std::string>{"task", "model", "input", "summary", "formats", "windows", "tracks"});
  CHECK(data["formats"].IsNull());
  REQUIRE(data["windows"].Size() == 2);
  CHECK(Keys(data["windows"][1]) ==
        std::set<std::string>{"index", "start", "end", "padded_bp", "dev", "hk"});
  CHECK(data["windows"][1]["dev"].GetDouble() == 0.5);
  CHECK(data["windows"][1]["hk"].GetDouble() == -0.25);
  CHECK(data["windows"][1]["start"].GetInt64() == 249);
  CHECK(Str(data["tracks"]["hk"]) == "hk-bedgraph");
  CHECK(data["summary"]["max_dev"].GetDouble() == 1.5);
}

// A chromatin-human result of 919 features in all, with the model's category list, no windows.
pb::PredictResult ChromatinResult(std::initializer_list<const char*> categories) {
  pb::PredictResult result = MakeResult("chromatin-human");
  result.mutable_chromatin()->set_features_total(919);
  for (const char* category : categories) result.mutable_chromatin()->add_categories(category);
  return result;
}

TEST_CASE("chromatin groups above-threshold features by category in every window", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kChromatin, 1200);
  input.request.mutable_chromatin()->set_threshold(0.3);
  pb::PredictResult result = ChromatinResult({"DNase", "CTCF", "Pol2"});
  auto* chromatin = result.mutable_chromatin();
  auto add_feature = [](pb::ChromatinWindow* w, int index, const std::string& name,
                        const std::string& category, double p) {
    auto* f = w->add_features();
    f->set_index(index);
    f->set_name(name);
    f->set_category(category);
    f->set_probability(p);
  };
  auto* w0 = chromatin->add_windows();
  w0->set_index(0);
  w0->set_start(0);
  w0->set_end(1000);
  add_feature(w0, 5, "GM12878|DNase|None", "DNase", 0.9);
  add_feature(w0, 300, "K562|CTCF|None", "CTCF", 0.4);
  add_feature(w0, 7, "HeLa|DNase|None", "DNase", 0.35);
  auto* w1 = chromatin->add_windows();
  w1->set_index(1);
  w1->set_start(200);
  w1->set_end(1200);
  // A category the model's list lacks still gets reported, after the listed ones.
  add_feature(w1, 900, "K562|H3K9me3|None", "Other", 0.6);

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kChromatin, "chromatin-human", 1200);
  const Json& counts = doc["meta"]["task_specific_counts"];
  CHECK(Keys(counts) == std::set<std::string>{"task", "windows_processed", "features_reported"});
  CHECK(counts["windows_processed"].GetInt64() == 2);
  CHECK(counts["features_reported"].GetInt64() == 4);

  const Json& data = doc["data"];
  CHECK(Keys(data) ==
        std::set<std::string>{"task", "model", "input", "summary", "formats", "windows", "tracks"});
  REQUIRE(data["windows"].Size() == 2);
  const Json& first = data["windows"][0];
  CHECK(Keys(first) == std::set<std::string>{"index", "start", "end", "padded_bp", "features"});
  const Json& features = first["features"];
  // Every category appears in every window, in the model's order, empty when nothing passed.
  std::vector<std::string> order;
  for (auto it = features.MemberBegin(); it != features.MemberEnd(); ++it) {
    order.emplace_back(it->name.GetString());
  }
  CHECK(order == std::vector<std::string>{"DNase", "CTCF", "Pol2", "Other"});
  REQUIRE(features["DNase"].Size() == 2);
  CHECK(Keys(features["DNase"][0]) == std::set<std::string>{"index", "name", "probability"});
  CHECK(features["DNase"][0]["index"].GetInt() == 5);
  CHECK(Str(features["DNase"][1]["name"]) == "HeLa|DNase|None");
  CHECK(features["DNase"][1]["probability"].GetDouble() == 0.35);
  REQUIRE(features["CTCF"].Size() == 1);
  CHECK(features["Pol2"].Size() == 0);
  CHECK(features["Other"].Size() == 0);
  const Json& second = data["windows"][1]["features"];
  CHECK(second["DNase"].Size() == 0);
  REQUIRE(second["Other"].Size() == 1);
  CHECK(second["Other"][0]["index"].GetInt() == 900);
  CHECK(data["summary"]["features_total"].GetInt() == 919);
  CHECK(data["summary"]["threshold"].GetDouble() == 0.3);
  CHECK(data["summary"]["features_reported_by_category"]["DNase"].GetInt64() == 2);
}

// The chromatin reply of the test above, as a worker asked for ChromatinOptions.labels_once
// sends it: each output index named once in ChromatinResult.labels, the features bare.
pb::PredictResult WithLabelsOnce(pb::PredictResult result) {
  auto* chromatin = result.mutable_chromatin();
  std::map<int, std::pair<std::string, std::string>> labels;
  for (auto& window : *chromatin->mutable_windows()) {
    for (auto& feature : *window.mutable_features()) {
      labels[feature.index()] = {feature.name(), feature.category()};
      feature.clear_name();
      feature.clear_category();
    }
  }
  for (const auto& [index, label] : labels) {
    auto* entry = chromatin->add_labels();
    entry->set_index(index);
    entry->set_name(label.first);
    entry->set_category(label.second);
  }
  return result;
}

TEST_CASE("chromatin features named once per reply render the same bytes as named features",
          "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kChromatin, 1200);
  input.request.mutable_chromatin()->set_threshold(0.3);
  pb::PredictResult named = ChromatinResult({"DNase", "CTCF"});
  auto* chromatin = named.mutable_chromatin();
  for (int w = 0; w < 3; ++w) {
    auto* window = chromatin->add_windows();
    window->set_index(w);
    window->set_start(w * 400);
    window->set_end(w * 400 + 1000);
    for (int index : {5, 300, 7 + w, 900}) {
      auto* f = window->add_features();
      f->set_index(index);
      f->set_name("cell" + std::to_string(index) + "|assay|None");
      f->set_category(index == 900 ? "Other" : (index == 300 ? "CTCF" : "DNase"));
      f->set_probability(0.3 + 0.01 * index / 10.0);
    }
  }
  const pb::PredictResult once = WithLabelsOnce(named);
  REQUIRE(once.chromatin().labels_size() == 6);  // 5, 7, 8, 9, 300, 900
  REQUIRE(once.chromatin().windows(0).features(0).name().empty());
  const std::string expected = core::RenderPredictJson(input, named, kIds);
  CHECK(core::RenderPredictJson(input, once, kIds) == expected);
  CHECK(expected.find("cell900|assay|None") != std::string::npos);

  // A malformed label (an index no feature can have) is ignored, and a feature left without any
  // name renders an empty one instead of failing.
  pb::PredictResult broken = once;
  auto* bogus = broken.mutable_chromatin()->add_labels();
  bogus->set_index(-3);
  bogus->set_name("never");
  broken.mutable_chromatin()->mutable_labels()->DeleteSubrange(0, 1);  // index 5 loses its label
  auto doc = Parse(core::RenderPredictJson(input, broken, kIds));
  CHECK(Str(doc["data"]["windows"][0]["features"][""][0]["name"]) == "");
  CHECK(doc["data"]["windows"][0]["features"][""][0]["index"].GetInt() == 5);
}

// A chromatin reply's bytes, pinned (kPinnedChromatin*, as the renderer wrote them before it
// worked out the labels and categories once per render): two windows, a category the model's
// list lacks ("Other") and one nothing falls in ("Pol2").
pb::PredictResult PinnedChromatinResult() {
  pb::PredictResult result = ChromatinResult({"DNase", "CTCF", "Pol2"});
  auto* chromatin = result.mutable_chromatin();
  const std::pair<int, int> spans[] = {{0, 1000}, {200, 1200}};
  for (int w = 0; w < 2; ++w) {
    auto* window = chromatin->add_windows();
    window->set_index(w);
    window->set_start(spans[w].first);
    window->set_end(spans[w].second);
    window->set_padded_bp(w * 100);
    for (int index : {5, 300, 7 + w, 900}) {
      if (w == 0 && index == 900) continue;
      auto* f = window->add_features();
      f->set_index(index);
      f->set_name("cell" + std::to_string(index) + "|assay|None");
      f->set_category(index == 900 ? "Other" : (index == 300 ? "CTCF" : "DNase"));
      f->set_probability(0.3 + index / 2000.0);
    }
  }
  (*result.mutable_tracks())["bed"] = "chr7\t1000\t2200\n";
  return result;
}

const char kPinnedChromatinData[] =
    R"json({"task":"chromatin","model":"chromatin-human",)json"
    R"json("input":{"sequence_name":"chr7:1000-2200"},"summary":{"windows_scanned":2,)json"
    R"json("features_total":919,"features_reported":7,"threshold":0.3,)json"
    R"json("features_reported_by_category":{"DNase":4,"CTCF":2,"Pol2":0,"Other":1}},)json"
    R"json("windows":[{"index":0,"start":0,"end":1000,"padded_bp":0,)json"
    R"json("features":{"DNase":[{"index":5,"name":"cell5|assay|None","probability":0.3025},)json"
    R"json({"index":7,"name":"cell7|assay|None","probability":0.3035}],"CTCF":[{"index":300,)json"
    R"json("name":"cell300|assay|None","probability":0.44999999999999998}],"Pol2":[],)json"
    R"json("Other":[]}},{"index":1,"start":200,"end":1200,"padded_bp":100,)json"
    R"json("features":{"DNase":[{"index":5,"name":"cell5|assay|None","probability":0.3025},)json"
    R"json({"index":8,"name":"cell8|assay|None","probability":0.304}],"CTCF":[{"index":300,)json"
    R"json("name":"cell300|assay|None","probability":0.44999999999999998}],"Pol2":[],)json"
    R"json("Other":[{"index":900,"name":"cell900|assay|None","probability":0.75}]}}],)json"
    R"json("tracks":{"bed":"chr7\t1000\t2200\n"},"formats":null})json";
const char kPinnedChromatinMeta[] =
    R"json({"job_id":"0b4f8a52-8d7e-4a57-9c2e-3f1d2a6b7c80","request_id":"req-123",)json"
    R"json("task":"chromatin","model":"chromatin-human","cold_start":false,)json"
    R"json("model_load_time_ms":0,"inference_time_ms":42,"sequence_length":1200,)json"
    R"json("task_specific_counts":{"task":"chromatin","windows_processed":2,)json"
    R"json("features_reported":7}})json";

TEST_CASE("a chromatin reply renders the pinned bytes with its features named on each or once",
          "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kChromatin, 1200);
  input.sequence_name = "chr7:1000-2200";
  input.request.set_model("chromatin-human");
  input.request.mutable_chromatin()->set_threshold(0.3);
  const pb::PredictResult named = PinnedChromatinResult();
  const pb::PredictResult once = WithLabelsOnce(named);
  REQUIRE(once.chromatin().labels_size() == 5);  // 5, 7, 8, 300, 900
  REQUIRE(once.chromatin().windows(1).features(0).name().empty());
  const std::string expected = std::string("{\"data\":") + kPinnedChromatinData +
                               ",\"meta\":" + kPinnedChromatinMeta + "}";
  CHECK(core::RenderPredictJson(input, named, kIds) == expected);
  CHECK(core::RenderPredictJson(input, once, kIds) == expected);
  // The data object alone, as other renderings embed it (WritePredictData).
  for (const pb::PredictResult* result : {&named, &once}) {
    core::JsonWriter w;
    core::WritePredictData(w, input, *result);
    CHECK(w.Take() == kPinnedChromatinData);
  }
}

pb::Transcript MakeTranscript() {
  pb::Transcript t;
  t.set_id("transcript_1");
  t.set_strand("-");
  t.set_start(1200);
  t.set_end(4800);
  t.set_tss_position(4799);
  t.set_polya_position(1200);
  t.set_transcript_type("lnc_RNA");
  t.set_transcript_type_score(0.66);
  t.set_score(0.8);
  auto add = [](google::protobuf::RepeatedPtrField<pb::Interval>* list, int64_t s, int64_t e) {
    auto* iv = list->Add();
    iv->set_start(s);
    iv->set_end(e);
  };
  add(t.mutable_exons(), 1200, 1500);
  add(t.mutable_exons(), 4000, 4800);
  add(t.mutable_introns(), 1500, 4000);
  return t;
}

TEST_CASE("annotation envelope has structured transcripts and always formats.gff3", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kAnnotation, 6000);
  pb::PredictResult result = MakeResult("annotation-human");
  result.set_windows_processed(9);
  *result.mutable_annotation()->add_transcripts() = MakeTranscript();
  result.mutable_annotation()->set_windows_processed(3);
  const std::string gff3 = "##gff-version 3\nchr7\tpipeline\tgene\t1201\t4800\t.\t-\t.\tID=g1\n";
  (*result.mutable_formats())["gff3"] = gff3;
  (*result.mutable_formats())["bed"] = "bed-text";

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kAnnotation, "annotation-human", 6000);
  const Json& counts = doc["meta"]["task_specific_counts"];
  CHECK(Keys(counts) == std::set<std::string>{"task", "windows_processed", "transcripts_found"});
  CHECK(counts["windows_processed"].GetInt64() == 3);  // the annotation result's own count
  CHECK(counts["transcripts_found"].GetInt64() == 1);

  const Json& data = doc["data"];
  CHECK(Keys(data) ==
        std::set<std::string>{"task", "model", "input", "summary", "formats", "transcripts"});
  CHECK(Str(data["formats"]["gff3"]) == gff3);  // verbatim
  CHECK(Str(data["formats"]["bed"]) == "bed-text");
  REQUIRE(data["transcripts"].Size() == 1);
  const Json& t = data["transcripts"][0];
  CHECK(Keys(t) == std::set<std::string>{"id", "strand", "start", "end", "tss_position",
                                         "polya_position", "transcript_type",
                                         "transcript_type_score", "score", "exons", "introns",
                                         "cds"});
  CHECK(Str(t["strand"]) == "-");
  CHECK(t["tss_position"].GetInt64() == 4799);
  CHECK(t["polya_position"].GetInt64() == 1200);
  CHECK(Str(t["transcript_type"]) == "lnc_RNA");
  CHECK(t["transcript_type_score"].GetDouble() == 0.66);
  REQUIRE(t["exons"].Size() == 2);
  CHECK(Keys(t["exons"][1]) == std::set<std::string>{"start", "end"});
  CHECK(t["exons"][1]["start"].GetInt64() == 4000);
  CHECK(t["exons"][1]["end"].GetInt64() == 4800);
  REQUIRE(t["introns"].Size() == 1);
  CHECK(t["introns"][0]["end"].GetInt64() == 4000);
  CHECK(t["cds"].IsArray());
  CHECK(t["cds"].Size() == 0);
}

TEST_CASE("annotation keeps the gff3 key even when the worker sent no rendering", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kAnnotation, 6000);
  pb::PredictResult result = MakeResult("annotation-human");
  result.set_windows_processed(4);  // used when the annotation result has no count of its own
  result.mutable_annotation();
  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  REQUIRE(doc["data"]["formats"].IsObject());
  REQUIRE(doc["data"]["formats"].HasMember("gff3"));
  CHECK(doc["data"]["formats"]["gff3"].IsNull());
  CHECK(doc["meta"]["task_specific_counts"]["windows_processed"].GetInt64() == 4);
  CHECK(doc["data"]["transcripts"].Size() == 0);
}

core::ValidatedPredict MakeExpressionInput() {
  core::ValidatedPredict input = MakeInput(Task::kExpression, 12000);
  input.tss_index = 6000;
  input.scored_start = 1401;
  input.scored_end = 10599;
  input.request.mutable_expression()->set_description("liver tissue");
  return input;
}

TEST_CASE("expression envelope: log(TPM+1) prediction, back-transformed TPM, scored window",
          "[render]") {
  core::ValidatedPredict input = MakeExpressionInput();
  pb::PredictResult result = MakeResult("expression-human");
  result.mutable_expression()->set_expression_log_tpm(2.5);

  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  CheckCommonEnvelope(doc, Task::kExpression, "expression-human", 12000);
  const Json& counts = doc["meta"]["task_specific_counts"];
  CHECK(Keys(counts) == std::set<std::string>{"task", "tss_index", "scored_window"});
  CHECK(counts["tss_index"].GetInt64() == 6000);
  REQUIRE(counts["scored_window"].Size() == 2);
  CHECK(counts["scored_window"][0].GetInt64() == 1401);
  CHECK(counts["scored_window"][1].GetInt64() == 10599);

  const Json& data = doc["data"];
  CHECK(Keys(data) ==
        std::set<std::string>{"task", "model", "input", "summary", "formats", "prediction"});
  CHECK(data["formats"].IsNull());
  // Revision 13: input.sequence_length no longer exists.
  CHECK(Keys(data["input"]) == std::set<std::string>{"sequence_name", "tss_index", "scored_window",
                                                     "submitted_sequence_length"});
  CHECK(data["input"]["submitted_sequence_length"].GetInt64() == 12000);
  CHECK(data["input"]["tss_index"].GetInt64() == 6000);
  CHECK(data["input"]["scored_window"][1].GetInt64() -
            data["input"]["scored_window"][0].GetInt64() ==
        kExpressionWindowBp);

  const Json& p = data["prediction"];
  CHECK(Keys(p) ==
        std::set<std::string>{"expression", "expression_log_tpm", "expression_tpm", "unit"});
  CHECK(p["expression"].GetDouble() == 2.5);
  CHECK(p["expression_log_tpm"].GetDouble() == 2.5);
  CHECK(p["expression_tpm"].GetDouble() == Approx(std::exp(2.5) - 1.0).epsilon(1e-12));
  CHECK(Str(p["unit"]) == "log(TPM+1)");
}

TEST_CASE("expression meta.description_match: the worker's match, best first, or null",
          "[render]") {
  core::ValidatedPredict input = MakeExpressionInput();
  pb::PredictResult result = MakeResult("expression-human");
  result.mutable_expression()->set_expression_log_tpm(1.0);
  // A worker without description contexts: null.
  CHECK(Parse(core::RenderPredictJson(input, result, kIds))["meta"]["description_match"].IsNull());

  auto* match = result.mutable_expression()->mutable_description_match();
  match->set_matched(false);
  for (auto [id, name, similarity] :
       {std::tuple{"E066", "Liver", 0.25}, std::tuple{"E118", "HepG2 \"cells\"", 0.125}}) {
    auto* c = match->add_contexts();
    c->set_id(id);
    c->set_name(name);
    c->set_similarity(similarity);
  }
  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  const Json& m = doc["meta"]["description_match"];
  REQUIRE(m.IsObject());
  CHECK(Keys(m) == std::set<std::string>{"matched", "contexts"});
  CHECK_FALSE(m["matched"].GetBool());
  REQUIRE(m["contexts"].Size() == 2);
  CHECK(Keys(m["contexts"][0]) == std::set<std::string>{"id", "name", "similarity"});
  CHECK(Str(m["contexts"][0]["id"]) == "E066");
  CHECK(Str(m["contexts"][1]["name"]) == "HepG2 \"cells\"");
  CHECK(m["contexts"][1]["similarity"].GetDouble() == 0.125);
  // Other tasks never carry it.
  core::ValidatedPredict promoter = MakeInput(Task::kPromoter, 1200);
  CHECK_FALSE(Parse(core::RenderPredictJson(promoter, MakeResult("promoter-human"), kIds))["meta"]
                  .HasMember("description_match"));
}

TEST_CASE("expression TPM is clamped at zero for a negative log(TPM+1)", "[render]") {
  core::ValidatedPredict input = MakeExpressionInput();
  pb::PredictResult result = MakeResult("expression-human");
  result.mutable_expression()->set_expression_log_tpm(-0.3);
  auto doc = Parse(core::RenderPredictJson(input, result, kIds));
  const Json& p = doc["data"]["prediction"];
  CHECK(p["expression"].GetDouble() == -0.3);
  CHECK(p["expression_tpm"].GetDouble() == 0.0);
}

TEST_CASE("non-finite model outputs are written as null and the body stays valid JSON",
          "[render]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  SECTION("expression") {
    core::ValidatedPredict input = MakeExpressionInput();
    pb::PredictResult result = MakeResult("expression-human");
    result.mutable_expression()->set_expression_log_tpm(nan);
    auto doc = Parse(core::RenderPredictJson(input, result, kIds));
    CHECK(doc["data"]["prediction"]["expression"].IsNull());
    CHECK(doc["data"]["prediction"]["expression_tpm"].IsNull());
    result.mutable_expression()->set_expression_log_tpm(inf);
    auto doc2 = Parse(core::RenderPredictJson(input, result, kIds));
    CHECK(doc2["data"]["prediction"]["expression_log_tpm"].IsNull());
    CHECK(doc2["data"]["prediction"]["expression_tpm"].IsNull());
  }
  SECTION("enhancer and promoter windows") {
    core::ValidatedPredict input = MakeInput(Task::kEnhancer, 300);
    pb::PredictResult result = MakeResult("enhancer-fly");
    auto* w = result.mutable_enhancer()->add_windows();
    w->set_dev(-inf);
    w->set_hk(nan);
    auto doc = Parse(core::RenderPredictJson(input, result, kIds));
    CHECK(doc["data"]["windows"][0]["dev"].IsNull());
    CHECK(doc["data"]["windows"][0]["hk"].IsNull());
    CHECK(doc["data"]["summary"]["max_dev"].IsNull());

    core::ValidatedPredict pin = MakeInput(Task::kPromoter, 300);
    pb::PredictResult pres = MakeResult("promoter-human");
    pres.mutable_promoter()->add_windows()->set_score(nan);
    pres.mutable_promoter()->add_windows()->set_score(0.25);
    auto pdoc = Parse(core::RenderPredictJson(pin, pres, kIds));
    CHECK(pdoc["data"]["window_details"][0]["score"].IsNull());
    CHECK(pdoc["data"]["summary"]["max_score"].GetDouble() == 0.25);
  }
}

TEST_CASE("strings are escaped and the rendering is byte-stable", "[render]") {
  core::ValidatedPredict input = MakeInput(Task::kEnhancer, 300);
  input.sequence_name = "a \"quoted\"\nname\\with\ttabs";
  pb::PredictResult result = MakeResult("enhancer-fly");
  for (const char* track : {"zeta", "alpha", "mid", "beta"}) {
    (*result.mutable_tracks())[track] = std::string("t-") + track;
  }
  const std::string body = core::RenderPredictJson(input, result, kIds);
  auto doc = Parse(body);
  CHECK(Str(doc["data"]["input"]["sequence_name"]) == input.sequence_name);
  std::vector<std::string> order;
  const Json& tracks = doc["data"]["tracks"];
  for (auto it = tracks.MemberBegin(); it != tracks.MemberEnd(); ++it) {
    order.emplace_back(it->name.GetString());
  }
  CHECK(order == std::vector<std::string>{"alpha", "beta", "mid", "zeta"});
  // A completed poll must return exactly what the sync call returned.
  pb::PredictResult copy;
  REQUIRE(copy.ParseFromString(result.SerializeAsString()));
  CHECK(core::RenderPredictJson(input, copy, kIds) == body);
}

TEST_CASE("RenderPredictText returns the worker's rendering or an internal error", "[render]") {
  pb::PredictResult result = MakeResult("promoter-human");
  (*result.mutable_formats())["bedgraph"] = "track type=bedGraph\nchr1\t0\t10\t0.5\n";
  auto text = core::RenderPredictText(OutputFormat::kBedGraph, result);
  REQUIRE(text.ok());
  CHECK(*text == "track type=bedGraph\nchr1\t0\t10\t0.5\n");

  auto missing = core::RenderPredictText(OutputFormat::kBed, result);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kInternal);
  CHECK_FALSE(core::RenderPredictText(OutputFormat::kJson, result).ok());
}

TEST_CASE("job submitted body links to the poll path", "[render][jobs]") {
  auto doc = Parse(RenderJobSubmitted("5f0c2b1e-0d2f-4a43-8f5e-6a1c9e7d2b10", "splice"));
  REQUIRE(Keys(doc) == std::set<std::string>{"data", "meta"});
  CHECK(Keys(doc["data"]) == std::set<std::string>{"job_id", "status", "links"});
  CHECK(Str(doc["data"]["job_id"]) == "5f0c2b1e-0d2f-4a43-8f5e-6a1c9e7d2b10");
  CHECK(Str(doc["data"]["status"]) == "accepted");
  CHECK(Str(doc["data"]["links"]["result"]) ==
        "/v1/tasks/jobs/5f0c2b1e-0d2f-4a43-8f5e-6a1c9e7d2b10");
  CHECK(Keys(doc["meta"]) == std::set<std::string>{"job_id", "task", "mode"});
  CHECK(Str(doc["meta"]["task"]) == "splice");
  CHECK(Str(doc["meta"]["mode"]) == "async");
}

core::JobRecord MakeJob(core::JobState state) {
  core::JobRecord job;
  job.job_id = "9d7e3f2a-1b4c-4d5e-8f6a-7b8c9d0e1f2a";
  job.owner = "acme";
  job.task = "chromatin";
  job.mode = "async";
  job.state = state;
  job.created_at_ms = 1700000000123;  // 2023-11-14T22:13:20.123Z
  job.updated_at_ms = 1700000005000;
  return job;
}

TEST_CASE("job progress body reports rounded percent, message and elapsed time", "[render][jobs]") {
  core::JobRecord job = MakeJob(core::JobState::kRunning);
  job.progress_percent = 33.3333;
  job.progress_message = "window 2 of 6";
  auto doc = Parse(RenderJobProgress(job, job.created_at_ms + 12345));
  REQUIRE(Keys(doc) == std::set<std::string>{"data", "meta"});
  const Json& data = doc["data"];
  CHECK(Keys(data) == std::set<std::string>{"job_id", "status", "progress"});
  CHECK(Str(data["status"]) == "running");
  const Json& progress = data["progress"];
  CHECK(Keys(progress) == std::set<std::string>{"current_percent", "message", "elapsed_seconds"});
  CHECK(progress["current_percent"].GetDouble() == Approx(33.3).margin(1e-9));
  CHECK(Str(progress["message"]) == "window 2 of 6");
  CHECK(progress["elapsed_seconds"].GetDouble() == Approx(12.3).margin(1e-9));
  CHECK(Str(doc["meta"]["job_id"]) == job.job_id);
  CHECK(Str(doc["meta"]["task"]) == "chromatin");
  CHECK(Str(doc["meta"]["mode"]) == "async");

  SECTION("accepted, out-of-range percent and clock skew") {
    core::JobRecord accepted = MakeJob(core::JobState::kAccepted);
    accepted.progress_percent = 250;
    auto a = Parse(RenderJobProgress(accepted, accepted.created_at_ms - 5000));
    CHECK(Str(a["data"]["status"]) == "accepted");
    CHECK(a["data"]["progress"]["current_percent"].GetDouble() == 100.0);
    CHECK(a["data"]["progress"]["elapsed_seconds"].GetDouble() == 0.0);
    accepted.progress_percent = std::numeric_limits<double>::quiet_NaN();
    auto b = Parse(RenderJobProgress(accepted, accepted.created_at_ms));
    CHECK(b["data"]["progress"]["current_percent"].GetDouble() == 0.0);
  }
}

TEST_CASE("job list items carry ISO-8601 times and a null http_status while running",
          "[render][jobs]") {
  core::JobRecord running = MakeJob(core::JobState::kRunning);
  core::JobRecord done = MakeJob(core::JobState::kCompleted);
  done.job_id = "11111111-2222-4333-8444-555555555555";
  done.mode = "sync";
  done.code = ErrorCode::kOk;
  done.updated_at_ms = 1700000060000;
  core::JobRecord failed = MakeJob(core::JobState::kFailed);
  failed.code = ErrorCode::kValidationFailed;

  auto doc = Parse(RenderJobList({running, done, failed}));
  REQUIRE(Keys(doc) == std::set<std::string>{"jobs", "count"});
  CHECK(doc["count"].GetInt64() == 3);
  REQUIRE(doc["jobs"].Size() == 3);
  const Json& first = doc["jobs"][0];
  CHECK(Keys(first) == std::set<std::string>{"job_id", "task", "mode", "status", "created_at",
                                             "updated_at", "http_status"});
  CHECK(Str(first["status"]) == "running");
  CHECK(first["http_status"].IsNull());
  CHECK(Str(first["created_at"]) == "2023-11-14T22:13:20.123Z");
  CHECK(Str(first["updated_at"]) == "2023-11-14T22:13:25.000Z");
  const Json& second = doc["jobs"][1];
  CHECK(Str(second["job_id"]) == "11111111-2222-4333-8444-555555555555");
  CHECK(Str(second["status"]) == "completed");
  CHECK(Str(second["mode"]) == "sync");
  CHECK(second["http_status"].GetInt() == 200);
  CHECK(Str(second["updated_at"]) == "2023-11-14T22:14:20.000Z");
  CHECK(Str(doc["jobs"][2]["status"]) == "failed");
  CHECK(doc["jobs"][2]["http_status"].GetInt() == 422);

  auto empty = Parse(RenderJobList({}));
  CHECK(empty["count"].GetInt64() == 0);
  CHECK(empty["jobs"].IsArray());
  CHECK(empty["jobs"].Size() == 0);
}

pb::ModelInfo MakeModel(const std::string& id, bool is_default, int64_t context,
                        int64_t trained_window) {
  pb::ModelInfo m;
  m.set_id(id);
  m.set_description("test model " + id);
  m.set_is_default(is_default);
  m.set_context_window_bp(context);
  m.set_trained_window_bp(trained_window);
  m.set_tokenizer("bpe");
  m.set_trained(false);
  return m;
}

TEST_CASE("model list publishes the default and bio_spec", "[render][models]") {
  auto doc = Parse(RenderModelList(Task::kPromoter, {MakeModel("promoter-fly", false, 2000, 0),
                                                     MakeModel("promoter-human", true, 2000, 0)}));
  REQUIRE(Keys(doc) == std::set<std::string>{"task", "default_model", "models"});
  CHECK(Str(doc["task"]) == "promoter");
  CHECK(Str(doc["default_model"]) == "promoter-human");
  REQUIRE(doc["models"].Size() == 2);
  const Json& fly = doc["models"][0];
  CHECK(Keys(fly) == std::set<std::string>{"name", "description", "is_default", "bio_spec",
                                           "tokenizer", "trained", "card"});
  CHECK(Str(fly["name"]) == "promoter-fly");
  // Inside /v1/models/{id}/card/, so the card's relative PNG links resolve to that route.
  CHECK(Str(fly["card"]) == "/v1/models/promoter-fly/card/MODEL_CARD.md");
  CHECK(Str(doc["models"][1]["card"]) == "/v1/models/promoter-human/card/MODEL_CARD.md");
  CHECK_FALSE(fly["is_default"].GetBool());
  CHECK(doc["models"][1]["is_default"].GetBool());
  CHECK(Str(fly["tokenizer"]) == "bpe");
  CHECK_FALSE(fly["trained"].GetBool());
  const Json& spec = fly["bio_spec"];
  CHECK(Keys(spec) ==
        std::set<std::string>{"request_max_bp", "context_window_bp", "trained_window_bp"});
  CHECK(spec["request_max_bp"].GetInt64() == 500000);
  CHECK(spec["context_window_bp"].GetInt64() == 2000);
  CHECK(spec["trained_window_bp"].IsNull());

  auto expr =
      Parse(RenderModelList(Task::kExpression, {MakeModel("expression-human", true, 9198, 9198)}));
  CHECK(expr["models"][0]["bio_spec"]["trained_window_bp"].GetInt64() == 9198);
}

TEST_CASE("model list without a flagged default uses the first, empty roster is null",
          "[render][models]") {
  auto doc = Parse(RenderModelList(Task::kChromatin, {MakeModel("chromatin-a", false, 1000, 0),
                                                      MakeModel("chromatin-b", false, 1000, 0)}));
  CHECK(Str(doc["default_model"]) == "chromatin-a");
  CHECK(doc["models"][0]["is_default"].GetBool());
  CHECK_FALSE(doc["models"][1]["is_default"].GetBool());

  auto empty = Parse(RenderModelList(Task::kChromatin, {}));
  CHECK(empty["default_model"].IsNull());
  CHECK(empty["models"].Size() == 0);
}

}  // namespace
}  // namespace dnaserve::core
