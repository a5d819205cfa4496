#include "gateway/mcp/tool_results.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <limits>

#include "gateway/mcp/json_rpc.h"
#include "gateway/mcp/tool_catalogue.h"

namespace dnaserve::gateway::mcp {
namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = Document::AllocatorType;

const Value* Member(const Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

void CopyMember(Value& out, const Value& from, const char* name, Allocator& a) {
  if (const Value* v = Member(from, name)) out.AddMember(Value(name, a), Value(*v, a), a);
}

double Number(const Value* v) {
  return v && v->IsNumber() ? v->GetDouble() : -std::numeric_limits<double>::infinity();
}

// An item reduced to its scalar fields: a nested list becomes <name>_count, a nested object is
// dropped (exon arrays, tracks).
Value Reduce(const Value& item, Allocator& a) {
  Value out(rapidjson::kObjectType);
  if (!item.IsObject()) return out;
  for (const auto& m : item.GetObject()) {
    if (m.value.IsArray()) {
      std::string key = std::string(m.name.GetString(), m.name.GetStringLength()) + "_count";
      out.AddMember(Value(key.c_str(), a), Value(static_cast<int64_t>(m.value.Size())), a);
    } else if (!m.value.IsObject()) {
      out.AddMember(Value(m.name, a), Value(m.value, a), a);
    }
  }
  return out;
}

struct Ranked {
  std::string list;          // where the full list is in the REST body
  std::string ranked_by;     // how the items are ordered
  std::vector<Value> items;  // reduced, in the body's order
  std::function<double(const Value&)> score;
};

// The task's main list, reduced; nullopt for tasks without one (expression).
std::optional<Ranked> MainList(const std::string& task, const Value& data, Allocator& a) {
  auto simple = [&](const char* list, const char* key) -> std::optional<Ranked> {
    const Value* items = Member(data, list);
    if (!items || !items->IsArray()) return std::nullopt;
    Ranked r{std::string("data.") + list, std::string(key) + " (descending)", {}, nullptr};
    for (const auto& item : items->GetArray()) r.items.push_back(Reduce(item, a));
    std::string k = key;
    r.score = [k](const Value& v) { return Number(Member(v, k.c_str())); };
    return r;
  };
  if (task == "promoter") return simple("regions", "score");
  if (task == "splice") return simple("sites", "score");
  if (task == "annotation") return simple("transcripts", "score");
  if (task == "find_genes_and_predict_expression") {
    return simple("expression_predictions", "expression");
  }
  if (task == "enhancer") {
    auto r = simple("windows", "dev");
    if (r) {
      r->ranked_by = "max(dev, hk) (descending)";
      r->score = [](const Value& v) {
        return std::max(Number(Member(v, "dev")), Number(Member(v, "hk")));
      };
    }
    return r;
  }
  if (task == "ism") {
    // One hit per cell (position, ALT) of the matrix, the largest changes first.
    const Value* positions = Member(data, "positions");
    if (!positions || !positions->IsArray()) return std::nullopt;
    Ranked r{"data.positions", "|delta| (descending)", {}, nullptr};
    for (const auto& p : positions->GetArray()) {
      const Value* alts = Member(p, "alt");
      const Value* deltas = Member(p, "delta");
      const Value* features = Member(p, "feature");
      if (!alts || !deltas || !alts->IsArray() || !deltas->IsArray()) continue;
      for (rapidjson::SizeType i = 0; i < alts->Size() && i < deltas->Size(); ++i) {
        Value cell(rapidjson::kObjectType);
        CopyMember(cell, p, "position", a);
        CopyMember(cell, p, "ref", a);
        cell.AddMember("alt", Value((*alts)[i], a), a);
        cell.AddMember("delta", Value((*deltas)[i], a), a);
        if (features && features->IsArray() && i < features->Size()) {
          cell.AddMember("feature", Value((*features)[i], a), a);
        }
        r.items.push_back(std::move(cell));
      }
    }
    r.score = [](const Value& v) {
      const double delta = Number(Member(v, "delta"));  // -infinity when missing: ranked last
      return std::isinf(delta) ? delta : std::abs(delta);
    };
    return r;
  }
  if (task == "chromatin") {
    // Features are nested per window and category; flattened to one hit per (window, feature).
    const Value* windows = Member(data, "windows");
    if (!windows || !windows->IsArray()) return std::nullopt;
    Ranked r{"data.windows[].features", "probability (descending)", {}, nullptr};
    for (const auto& w : windows->GetArray()) {
      const Value* features = Member(w, "features");
      if (!features || !features->IsObject()) continue;
      for (const auto& category : features->GetObject()) {
        if (!category.value.IsArray()) continue;
        for (const auto& f : category.value.GetArray()) {
          Value hit(rapidjson::kObjectType);
          CopyMember(hit, w, "start", a);
          CopyMember(hit, w, "end", a);
          hit.AddMember("category", Value(category.name, a), a);
          CopyMember(hit, f, "name", a);
          CopyMember(hit, f, "probability", a);
          r.items.push_back(std::move(hit));
        }
      }
    }
    r.score = [](const Value& v) { return Number(Member(v, "probability")); };
    return r;
  }
  return std::nullopt;
}

Value TopItems(Ranked& ranked, Allocator& a) {
  std::vector<size_t> order(ranked.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t keep = std::min(kTopItems, order.size());
  std::vector<double> scores;
  for (const auto& item : ranked.items) scores.push_back(ranked.score(item));
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](size_t x, size_t y) {
    return scores[x] > scores[y] || (scores[x] == scores[y] && x < y);
  });
  Value out(rapidjson::kObjectType);
  out.AddMember("list", Value(ranked.list.c_str(), a), a);
  out.AddMember("ranked_by", Value(ranked.ranked_by.c_str(), a), a);
  out.AddMember("total", Value(static_cast<int64_t>(ranked.items.size())), a);
  out.AddMember("returned", Value(static_cast<int64_t>(keep)), a);
  Value items(rapidjson::kArrayType);
  for (size_t i = 0; i < keep; ++i) items.PushBack(ranked.items[order[i]], a);
  out.AddMember("items", items, a);
  return out;
}

// The text formats REST serves for a task (spec: POST /v1/tasks/{task}/predict, query format).
std::vector<std::string> TextFormats(const std::string& task) {
  if (task == "promoter") return {"bed", "bedgraph"};
  if (task == "splice") return {"bed", "gff3"};
  if (task == "enhancer") return {"bedgraph"};
  if (task == "chromatin") return {"bed"};
  if (task == "annotation") return {"bed", "gff3"};
  return {};
}

Value FullResult(const std::string& job_id, const std::string& task, const Value* data,
                 const ResultStyle& style, Allocator& a) {
  Value out(rapidjson::kObjectType);
  const std::string path = "/v1/tasks/jobs/" + job_id;
  out.AddMember("job_path", Value(path.c_str(), a), a);
  out.AddMember("job_url", Value((style.base_url + path).c_str(), a), a);
  Value tracks(rapidjson::kObjectType);
  Value in_job(rapidjson::kArrayType);
  auto add_formats = [&](const Value* formats, const std::string& prefix) {
    if (!formats || !formats->IsObject()) return;
    for (const auto& f : formats->GetObject()) {
      if (f.value.IsNull()) continue;
      std::string where = prefix + std::string(f.name.GetString(), f.name.GetStringLength());
      in_job.PushBack(Value(where.c_str(), a), a);
    }
  };
  if (data) {
    add_formats(Member(*data, "formats"), "data.formats.");
    if (const Value* annotation = Member(*data, "annotation")) {
      add_formats(Member(*annotation, "formats"), "data.annotation.formats.");
    }
  }
  const auto formats = TextFormats(task);
  std::string how = "The job's JSON (GET job_url with your key) carries the whole result";
  how += in_job.Empty() ? "." : ", including the pre-rendered tracks listed in in_job.";
  if (!formats.empty()) {
    how += " REST renders a track directly: POST /v1/tasks/" + task +
           "/predict?format=<one of rest_formats> with the same body (synchronous only).";
  }
  tracks.AddMember("in_job", in_job, a);
  Value rest(rapidjson::kArrayType);
  for (const auto& f : formats) rest.PushBack(Value(f.c_str(), a), a);
  tracks.AddMember("rest_formats", rest, a);
  tracks.AddMember("how", Value(how.c_str(), a), a);
  out.AddMember("text_tracks", tracks, a);
  return out;
}

std::string CallToolResult(const Value& structured_content, bool is_error,
                           const std::string& job_id, const ResultStyle& style) {
  Document out(rapidjson::kObjectType);
  Allocator& a = out.GetAllocator();
  Value content(rapidjson::kArrayType);
  Value text(rapidjson::kObjectType);
  text.AddMember("type", "text", a);
  text.AddMember("text", Value(ToJson(structured_content).c_str(), a), a);
  content.PushBack(text, a);
  if (style.structured && !job_id.empty()) {
    Value link(rapidjson::kObjectType);
    link.AddMember("type", "resource_link", a);
    link.AddMember("uri", Value((style.base_url + "/v1/tasks/jobs/" + job_id).c_str(), a), a);
    link.AddMember("name", Value(("job " + job_id).c_str(), a), a);
    link.AddMember("description", "The whole job result over REST (GET with the same bearer key).",
                   a);
    link.AddMember("mimeType", "application/json", a);
    content.PushBack(link, a);
  }
  out.AddMember("content", content, a);
  if (style.structured) out.AddMember("structuredContent", Value(structured_content, a), a);
  out.AddMember("isError", is_error, a);
  return ToJson(out);
}

std::string StringOr(const Value* v, const std::string& fallback = "") {
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : fallback;
}

}  // namespace

std::string ErrorToolResult(const HttpResponse& response, const ResultStyle& style) {
  Document body;
  body.Parse(response.body.c_str());
  Document sc(rapidjson::kObjectType);
  Allocator& a = sc.GetAllocator();
  sc.AddMember("status", "failed", a);
  sc.AddMember("http_status", response.status, a);
  const Value* error = body.HasParseError() ? nullptr : Member(body, "error");
  if (error && error->IsObject()) {
    sc.AddMember("error", Value(*error, a), a);
  } else {
    // A body without the envelope (never expected from the gateway's own routes).
    Value e(rapidjson::kObjectType);
    e.AddMember("code", "internal_error", a);
    e.AddMember("message", "the REST call failed without an error envelope", a);
    sc.AddMember("error", e, a);
  }
  // A refusal's Retry-After (quota, capacity), as a number an agent can wait on.
  if (const std::string* retry = response.FindHeader("Retry-After")) {
    sc.AddMember("retry_after_seconds", Value(static_cast<int64_t>(std::atoll(retry->c_str()))), a);
  }
  std::string job_id;
  if (const std::string* id = response.FindHeader("X-Job-Id")) {
    job_id = *id;
    sc.AddMember("job_id", Value(id->c_str(), a), a);
  }
  return CallToolResult(sc, /*is_error=*/true, job_id, style);
}

namespace {

// A variant score's scorers (models and digests) and its first kTopItems results as they are:
// per-variant results are small, and an agent needs the numbers, not a ranking of them.
void AddVariantScores(Value& sc, const Value& data, Allocator& a) {
  CopyMember(sc, data, "scorers", a);
  CopyMember(sc, data, "backgrounds", a);  // what each result's quantiles are against
  const Value* results = Member(data, "results");
  if (results == nullptr || !results->IsArray()) return;
  Value kept(rapidjson::kArrayType);
  for (rapidjson::SizeType i = 0; i < results->Size() && i < kTopItems; ++i) {
    kept.PushBack(Value((*results)[i], a), a);
  }
  sc.AddMember("results", kept, a);
  sc.AddMember("results_total", static_cast<int64_t>(results->Size()), a);
}

}  // namespace

std::string JobToolResult(const HttpResponse& response, const ResultStyle& style) {
  if (response.status >= 300) return ErrorToolResult(response, style);
  Document body;
  body.Parse(response.body.c_str());
  const Value* data = body.HasParseError() ? nullptr : Member(body, "data");
  const Value* meta = body.HasParseError() ? nullptr : Member(body, "meta");
  if (!data || !meta) {
    HttpResponse odd = response;
    odd.status = 500;
    return ErrorToolResult(odd, style);
  }
  Document sc(rapidjson::kObjectType);
  Allocator& a = sc.GetAllocator();
  const std::string task = StringOr(Member(*meta, "task"), StringOr(Member(*data, "task")));
  std::string job_id = StringOr(Member(*meta, "job_id"), StringOr(Member(*data, "job_id")));

  if (response.status == 202) {  // accepted (async submit) or still running (poll)
    sc.AddMember("status", Value(StringOr(Member(*data, "status"), "running").c_str(), a), a);
    sc.AddMember("job_id", Value(job_id.c_str(), a), a);
    sc.AddMember("task", Value(task.c_str(), a), a);
    CopyMember(sc, *data, "progress", a);
    sc.AddMember("full_result", FullResult(job_id, task, nullptr, style, a), a);
    return CallToolResult(sc, false, job_id, style);
  }

  sc.AddMember("status", "completed", a);
  sc.AddMember("job_id", Value(job_id.c_str(), a), a);
  for (const char* key :
       {"request_id", "task", "model", "sequence_length", "cold_start", "inference_time_ms",
        "interval"}) {
    CopyMember(sc, *meta, key, a);
  }
  if (const Value* counts = Member(*meta, "task_specific_counts")) {
    sc.AddMember("counts", Value(*counts, a), a);
  } else if (const Value* counts = Member(*data, "counts")) {  // the variant workflow
    sc.AddMember("counts", Value(*counts, a), a);
  }
  CopyMember(sc, *data, "summary", a);
  CopyMember(sc, *data, "prediction", a);
  CopyMember(sc, *data, "output", a);
  if (auto ranked = MainList(task, *data, a)) sc.AddMember("top_items", TopItems(*ranked, a), a);
  if (task == "variant_score") AddVariantScores(sc, *data, a);
  if (task == "ism") {
    // What the cells are: the scorer, its options, what a delta is, the window mutated.
    for (const char* key : {"scorer", "options", "value", "window", "expression"}) {
      CopyMember(sc, *data, key, a);  // expression: the gene and context of expression cells
    }
  }
  sc.AddMember("full_result", FullResult(job_id, task, data, style, a), a);
  return CallToolResult(sc, false, job_id, style);
}

namespace {

// A listing route's answer as structured content: "completed" and the named members of its body.
std::string ListingToolResult(const HttpResponse& response, const ResultStyle& style,
                              std::initializer_list<const char*> members) {
  if (response.status >= 300) return ErrorToolResult(response, style);
  Document body;
  body.Parse(response.body.c_str());
  Document sc(rapidjson::kObjectType);
  Allocator& a = sc.GetAllocator();
  sc.AddMember("status", "completed", a);
  if (!body.HasParseError()) {
    for (const char* member : members) CopyMember(sc, body, member, a);
  }
  return CallToolResult(sc, false, "", style);
}

}  // namespace

std::string ListJobsToolResult(const HttpResponse& response, const ResultStyle& style) {
  return ListingToolResult(response, style, {"jobs", "count"});
}

std::string ListContextsToolResult(const HttpResponse& response, const ResultStyle& style) {
  return ListingToolResult(response, style, {"task", "default_model", "models"});
}

std::string ListModelsToolResult(const std::vector<HttpResponse>& responses,
                                 const ResultStyle& style) {
  Document sc(rapidjson::kObjectType);
  Allocator& a = sc.GetAllocator();
  sc.AddMember("status", "completed", a);
  Value tasks(rapidjson::kArrayType);
  for (const auto& r : responses) {
    if (r.status >= 300) return ErrorToolResult(r, style);
    Document body;
    body.Parse(r.body.c_str());
    if (!body.HasParseError() && body.IsObject()) tasks.PushBack(Value(body, a), a);
  }
  sc.AddMember("tasks", tasks, a);
  return CallToolResult(sc, false, "", style);
}

}  // namespace dnaserve::gateway::mcp
