#include "gateway/mcp/tool_catalogue.h"

#include <rapidjson/document.h>

#include "gateway/mcp/json_rpc.h"
#include "gateway/openapi/openapi.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/ism_request.h"
#include "core/validation/request_schema.h"
#include "core/validation/variant_score_request.h"

namespace dnaserve::gateway::mcp {

// The contract's strand rule of a task, for the tool description (defined at the end).
std::string_view StrandRule(Task task);

namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = Document::AllocatorType;

std::string Bp(int64_t n) { return std::to_string(n) + " bp"; }

const Value* Member(const Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

// A copy of `v` with every {"$ref":"#/components/schemas/X"} replaced by X itself and every
// "x-" extension dropped: MCP hosts take a self-contained JSON Schema.
Value Inline(const Value& v, const Value& schemas, Allocator& a, int depth = 0) {
  if (depth > 16) return Value(rapidjson::kObjectType);  // the table nests three levels deep
  if (v.IsObject()) {
    auto ref = v.FindMember("$ref");
    if (ref != v.MemberEnd() && ref->value.IsString()) {
      std::string target = ref->value.GetString();
      const std::string prefix = "#/components/schemas/";
      auto found = schemas.FindMember(target.substr(prefix.size()).c_str());
      if (target.rfind(prefix, 0) == 0 && found != schemas.MemberEnd()) {
        return Inline(found->value, schemas, a, depth + 1);
      }
    }
    Value out(rapidjson::kObjectType);
    for (const auto& m : v.GetObject()) {
      std::string_view key(m.name.GetString(), m.name.GetStringLength());
      if (key.rfind("x-", 0) == 0) continue;
      out.AddMember(Value(m.name, a), Inline(m.value, schemas, a, depth + 1), a);
    }
    return out;
  }
  if (v.IsArray()) {
    Value out(rapidjson::kArrayType);
    for (const auto& item : v.GetArray()) out.PushBack(Inline(item, schemas, a, depth + 1), a);
    return out;
  }
  return Value(v, a);
}

// The schema of one parameter of an OpenAPI operation, with the parameter's description.
const Value* Parameter(const Document& doc, const char* path, const char* name) {
  if (!doc.IsObject()) return nullptr;
  auto paths = doc.FindMember("paths");
  if (paths == doc.MemberEnd()) return nullptr;
  auto op = paths->value.FindMember(path);
  if (op == paths->value.MemberEnd()) return nullptr;
  auto get = op->value.FindMember("get");
  if (get == op->value.MemberEnd()) return nullptr;
  auto params = get->value.FindMember("parameters");
  if (params == get->value.MemberEnd() || !params->value.IsArray()) return nullptr;
  for (const auto& p : params->value.GetArray()) {
    auto n = p.FindMember("name");
    auto s = p.FindMember("schema");
    if (n != p.MemberEnd() && s != p.MemberEnd() && n->value == name) return &s->value;
  }
  return nullptr;
}

// {type: object, properties: {name: <parameter schema>}, required, additionalProperties: false}
Value ParameterObject(const Document& doc, const char* path, const char* name, bool required,
                      const std::string& description, Allocator& a) {
  Value schema(rapidjson::kObjectType);
  schema.AddMember("type", "object", a);
  Value props(rapidjson::kObjectType);
  const Value* p = Parameter(doc, path, name);
  Value prop = p ? Value(*p, a) : Value(rapidjson::kObjectType);
  prop.AddMember("description", Value(description.c_str(), a), a);
  props.AddMember(Value(name, a), prop, a);
  schema.AddMember("properties", props, a);
  if (required) {
    Value req(rapidjson::kArrayType);
    req.PushBack(Value(name, a), a);
    schema.AddMember("required", req, a);
  }
  schema.AddMember("additionalProperties", false, a);
  return schema;
}

// The named component schema with its $refs inlined; an empty object schema if it is missing
// (a document error the unit tests would catch).
Value Component(const Document& doc, const std::string& title, Allocator& a) {
  static const Value kEmpty(rapidjson::kObjectType);
  const Value* components = doc.IsObject() ? Member(doc, "components") : nullptr;
  const Value* schemas = components ? Member(*components, "schemas") : nullptr;
  const Value* schema = schemas ? Member(*schemas, title.c_str()) : nullptr;
  if (!schema) return Value(rapidjson::kObjectType);
  return Inline(*schema, *schemas, a);
}

Value InputSchema(const Document& doc, const ToolDef& tool, Allocator& a) {
  switch (tool.kind) {
    case ToolKind::kPredict:
      return Component(doc, core::PredictRequestSchema(*tool.task).title, a);
    case ToolKind::kFindGenes:
      return Component(doc, core::FindGenesRequestSchema().title, a);
    case ToolKind::kScoreVariants:
      return Component(doc, "VariantScoreRequest", a);
    case ToolKind::kIsm:
      return Component(doc, "IsmRequest", a);
    case ToolKind::kGetJob:
      return ParameterObject(doc, "/v1/tasks/jobs/{job_id}", "job_id", true,
                             "The job id a job tool returned (also in GET /v1/tasks/jobs).", a);
    case ToolKind::kListJobs:
      return ParameterObject(doc, "/v1/tasks/jobs", "limit", false,
                             "How many of your most recent jobs to list (newest first).", a);
    case ToolKind::kListModels:
      return ParameterObject(doc, "/v1/tasks/{task}/models", "task", false,
                             "The task whose models to list; omitted: all six tasks.", a);
    case ToolKind::kListContexts: {
      Value none(rapidjson::kObjectType);  // no arguments
      none.AddMember("type", "object", a);
      none.AddMember("properties", Value(rapidjson::kObjectType), a);
      none.AddMember("additionalProperties", false, a);
      return none;
    }
  }
  return Value(rapidjson::kObjectType);
}

// ------------------------------------------------------------------ output schemas

// Every structured result has `status`; failures add `error` (the REST error object, verbatim)
// and `http_status`. The rest depends on the tool. Only `status` is required, so an error result
// conforms to the tool's outputSchema too.
constexpr std::string_view kCommonProperties = R"(
  "status": {
    "type": "string", "enum": ["completed", "accepted", "running", "failed"],
    "description":
      "completed: the result is here; accepted/running: poll get_job; failed: see error."},
  "http_status": {
    "type": "integer", "description": "The HTTP status the REST call answered with."},
  "retry_after_seconds": {
    "type": "integer",
    "description":
      "On too_many_requests and other retryable refusals: seconds to wait (REST's Retry-After)."},
  "error": {
    "type": "object",
    "description":
      "On failure: the REST error object {code, message, request_id, details?}; switch on code.",
    "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                   "request_id": {"type": "string"}, "details": {}},
    "required": ["code", "message"]})";

constexpr std::string_view kJobProperties = R"(,
  "job_id": {
    "type": "string", "description": "The job: GET /v1/tasks/jobs/{job_id} (REST) or get_job."},
  "request_id": {"type": "string"},
  "task": {"type": "string"},
  "model": {"type": "string", "description": "Model id that ran."},
  "sequence_length": {"type": "integer", "description": "bp after whitespace stripping."},
  "cold_start": {"type": "boolean"},
  "inference_time_ms": {"type": "integer"},
  "interval": {
    "type": "object",
    "description": "Interval input only: meta.interval of the REST response (assembly, contig, start, end, strand, length); positions are then on the contig."},
  "counts": {"type": "object", "description": "meta.task_specific_counts of the REST response."},
  "summary": {
    "type": "object", "description": "data.summary of the REST response (keys may change)."},
  "prediction": {
    "type": "object",
    "description":
      "expression only: {expression, expression_log_tpm, expression_tpm, unit}, log(TPM+1)."},
  "top_items": {
    "type": "object",
    "description":
      "At most 20 best items of the task's main list, scalar fields only (a list: <name>_count).",
    "properties": {"list": {"type": "string"}, "ranked_by": {"type": "string"},
                   "total": {"type": "integer"}, "returned": {"type": "integer"},
                   "items": {"type": "array", "items": {"type": "object"}}}},
  "progress": {
    "type": "object",
    "description": "While running: {current_percent, message, elapsed_seconds}."},
  "full_result": {
    "type": "object",
    "description": "Where the whole result is: the job over REST, and how to get a text track.",
    "properties": {"job_path": {"type": "string"}, "job_url": {"type": "string"},
                   "text_tracks": {"type": "object"}}})";

std::string OutputSchema(ToolKind kind) {
  std::string props(kCommonProperties);
  switch (kind) {
    case ToolKind::kPredict:
    case ToolKind::kFindGenes:
    case ToolKind::kGetJob:
      props += kJobProperties;
      break;
    case ToolKind::kListJobs:
      props += R"(, "jobs": {"type": "array", "items": {"type": "object"}},
                    "count": {"type": "integer"})";
      break;
    case ToolKind::kListModels:
      props += R"(, "tasks": {"type": "array", "items": {"type": "object", "properties": {
                 "task": {"type": "string"}, "default_model": {"type": ["string", "null"]},
                 "models": {"type": "array", "items": {"type": "object"}}}}})";
      break;
    case ToolKind::kScoreVariants:
      props += kJobProperties;
      props += R"(,
        "scorers": {"type": "object",
                    "description": "data.scorers: each scorer's model, package_digest, options."},
        "backgrounds": {"type": "object",
                        "description": "data.backgrounds: per scorer, the background its results' quantiles are against (snvs, seed, region, distance) or why it has none."},
        "results": {"type": "array", "items": {"type": "object"},
                    "description": "data.results, the first 20 variants (results_total: all)."},
        "results_total": {"type": "integer"})";
      break;
    case ToolKind::kIsm:
      props += kJobProperties;
      props += R"(,
        "scorer": {"type": "string",
                   "description": "data.scorer: splice, chromatin, promoter or expression."},
        "options": {"type": "object", "description": "data.options: the scorer's options."},
        "value": {"type": "string", "description": "data.value: what each delta is."},
        "window": {"type": "object",
                   "description": "data.window: start, end (1-based, inclusive) and length."},
        "expression": {"type": "object",
                       "description": "data.expression (expression only): the gene, the context as matched, the REF level."})";
      break;
    case ToolKind::kListContexts:
      props += R"(, "task": {"type": "string"}, "default_model": {"type": ["string", "null"]},
                    "models": {"type": "array", "items": {"type": "object"},
                      "description": "Per expression model: free_text_threshold and )"
               R"(contexts [{id, name, curie, label, group}]."})";
      break;
  }
  return R"({"type": "object", "properties": {)" + props + R"(}, "required": ["status"]})";
}

// ------------------------------------------------------------------ descriptions

// What the task's operation does, whatever model serves it. Everything about the model (what
// it scores, where a value sits, its labels, its training data) comes from the package the
// worker reported (DefaultModelLine), never from here: hand-written model facts went stale.
std::string TaskWhat(Task task) {
  switch (task) {
    case Task::kPromoter:
      return "Detects promoter regions: a promoter score per scanned window and the regions "
             "above options.threshold (default 0.5).";
    case Task::kSplice:
      return "Finds donor/acceptor splice sites: sites whose score is above options.threshold "
             "(default 0.5). More than 20,000 sites is a validation error: raise the threshold.";
    case Task::kEnhancer:
      return "Scores enhancer activity: a developmental (dev) and a housekeeping (hk) score per "
             "window.";
    case Task::kChromatin:
      return "Predicts chromatin features per window; only features above options.threshold "
             "(default 0.5) are reported.";
    case Task::kAnnotation:
      return "Finds genes: transcripts on both strands with TSS/polyA positions, type "
             "(mRNA / lnc_RNA) and exon/intron/CDS structure, plus a GFF3 track.";
    case Task::kExpression:
      return "Predicts expression on a log(TPM+1) scale for one TSS-centred window in the "
             "training context options.description names: a context id (E066), an ontology "
             "CURIE (UBERON:0002107) or free text (list_contexts lists them). Free text that "
             "matches no context gets meta.description_match.matched = false and the mean over "
             "contexts. Needs tss_index unless the sequence is exactly 9,198 bp; with interval, "
             "tss_genome_position (1-based on the contig) may name the TSS instead.";
  }
  return "";
}

// The default model as its package describes it: id, the manifest's description (what it
// scores and its training data), where one value sits and its labels (worker/manifest/
// model_facts.h). Fields an older worker does not send are left out.
std::string DefaultModelLine(const core::ModelCatalogue& catalogue, Task task) {
  auto id = catalogue.DefaultModel(task);
  if (!id) return " No model is loaded for this task right now (calls fail with model_not_found).";
  std::string line = " Default model: " + *id + ".";
  for (const auto& m : catalogue.Models(task)) {
    if (m.id() != *id) continue;
    if (!m.description().empty()) line += " " + m.description();
    if (!m.resolution().empty()) line += " Resolution: " + m.resolution() + ".";
    if (!m.outputs().empty()) line += " Outputs: " + m.outputs() + ".";
  }
  return line + " list_models shows the others and their quality notes.";
}

// One scorer's model for the score_variants description: its id and its package's own
// description (what it scores, its training data).
std::string ScorerModelLine(const core::ModelCatalogue& catalogue, Task task) {
  auto id = catalogue.DefaultModel(task);
  if (!id) return "no model served right now (the scorer answers service_unavailable)";
  std::string line = *id;
  for (const auto& m : catalogue.Models(task)) {
    if (m.id() == *id && !m.description().empty()) line += " (" + m.description() + ")";
  }
  return line;
}

std::string ScoreVariantsDescription(const core::ModelCatalogue& catalogue) {
  return "Scores up to " + std::to_string(core::kMaxSyncScoreVariants) +
         " variants at once (more, up to " + std::to_string(core::kMaxBatchScoreVariants) +
         ": a job, polled with get_job) (\"chr20:5753600:A:G\" or {contig, position, ref, alt}; SNVs and indels up "
         "to 50 bp) against the reference genome the service holds (GRCh37 chr20), REF checked. "
         "scorers (each optional; none named: splice): splice {distance} SpliceAI delta scores "
         "DS_AG/AL/DG/DL and positions, model " +
         ScorerModelLine(catalogue, Task::kSplice) +
         "; expression {contexts (ids such as E066, CURIEs such as UBERON:0002107 or free text; "
         "list_contexts), window}: for each gene with a TSS within window bp, REF and ALT "
         "log(TPM+1) and log2 fold change, model " +
         ScorerModelLine(catalogue, Task::kExpression) +
         "; chromatin {top}: the features with the largest |ALT - REF|, model " +
         ScorerModelLine(catalogue, Task::kChromatin) +
         "; promoter {distance}: the largest REF and ALT window score near the variant and the "
         "delta, model " +
         ScorerModelLine(catalogue, Task::kPromoter) +
         ". A bad variant is an error in its own result. Each result's quantiles place its "
         "deltas among the scorer's background of random held-out SNVs (backgrounds: its size, "
         "or why a scorer has none, then null). Returns each scorer's model and "
         "package digest, the backgrounds and the first 20 results; the full answer stays in the job "
         "(full_result.job_url, or get_job).";
}

// The ism tool: what it scores, with which model, and what comes back.
std::string IsmDescription(const core::ModelCatalogue& catalogue) {
  return "In-silico mutagenesis: scores every SNV (the 3 other bases at each position) of a "
         "window of at most " +
         Bp(core::kMaxIsmWindowBp) +
         " with one variant scorer of score_variants and its options: splice (DS_max, model " +
         ScorerModelLine(catalogue, Task::kSplice) +
         "), chromatin (the delta of the feature with the largest |ALT - REF|, model " +
         ScorerModelLine(catalogue, Task::kChromatin) + "), promoter (the delta, model " +
         ScorerModelLine(catalogue, Task::kPromoter) +
         ") or expression (options {contexts: [one context: id, CURIE or free text], gene: "
         "optional symbol or Ensembl id, interval only}; each cell the log2 fold change, ALT vs "
         "REF, of that context's predicted expression of the gene whose 9,198 bp TSS window holds "
         "the window, the named one or the nearest start site, as score_variants computes it; a "
         "sequence must be the 9,198 bp expression window, TSS at 4,600; no gene's window holding "
         "the window is a validation error; model " +
         ScorerModelLine(catalogue, Task::kExpression) +
         "); none named: splice. Context: sequence (window positions in it) or interval (a "
         "stretch of GRCh37 chr20, window positions on the contig; strand '-' reads the context "
         "reverse-complemented, positions and REF/ALT bases still reported on the plus strand "
         "as in a VCF). Each cell equals what score_variants reports for that SNV when the "
         "context covers the scorer's reach. Returns the scorer, window and the 20 cells with "
         "the largest |delta| (top_items); the whole matrix stays in the job "
         "(full_result.job_url, or get_job).";
}

// Interval input (core/validation/genome_interval.h), the same for every prediction tool.
constexpr std::string_view kIntervalInput =
    "interval: a stretch of the service's reference genome, {\"region\": "
    "\"chr20:5,750,001-5,760,000\"} or {contig, start, end, strand}, 1-based inclusive "
    "(assembly defaults to GRCh37; chr20, 20 and NC_000020.10 name one contig): every position "
    "in the result is then on the contig. ";

std::string Description(const core::ModelCatalogue& catalogue, const ToolDef& tool) {
  constexpr std::string_view kResultNote =
      " Returns the summary, counts and the top 20 items; the full result stays in the job "
      "(full_result.job_url, or get_job). Errors come back as a result with isError and the REST "
      "error object (error.code, message, details).";
  switch (tool.kind) {
    case ToolKind::kPredict: {
      const Task task = *tool.task;
      std::string d = TaskWhat(task) + " Input: sequence (A/C/G/T/N, whitespace ignored), " +
                      Bp(MinSequenceBp(task)) + " to " + Bp(kMaxSequenceBp) + ", or instead " +
                      std::string(kIntervalInput) + std::string(StrandRule(task));
      if (auto t = AsyncThresholdBp(tool)) {
        d += " Above " + Bp(*t) +
             " the call runs as a background job and returns its job_id "
             "(status accepted): poll get_job.";
      }
      return d + DefaultModelLine(catalogue, task) + std::string(kResultNote);
    }
    case ToolKind::kFindGenes:
      return "Workflow: finds genes in a plus-strand region (annotation) and predicts each "
             "gene's expression (log(TPM+1)) in the context given by options.description. "
             "Input: sequence of " +
             Bp(core::kFindGenesMinSequenceBp) + " to " + Bp(kMaxSequenceBp) + ", or instead " +
             std::string(kIntervalInput) + "Above " +
             Bp(core::kFindGenesSyncLimitBp) +
             " it runs as a background job and returns its job_id (poll get_job)." +
             DefaultModelLine(catalogue, Task::kAnnotation) + std::string(kResultNote);
    case ToolKind::kScoreVariants:
      return ScoreVariantsDescription(catalogue);
    case ToolKind::kIsm:
      return IsmDescription(catalogue);
    case ToolKind::kGetJob:
      return "Reads a job of yours (any job from the REST interface or a tool): while it runs, "
             "its progress; when done, the same summary a job tool returns; if it failed, the "
             "error. Jobs are kept 24 h from last activity (then job_expired).";
    case ToolKind::kListJobs:
      return "Lists your most recent jobs (REST and tool calls alike), newest first: id, task, "
             "state, times. Does not cost quota.";
    case ToolKind::kListModels:
      return "Lists the models served for a task (or all six): id, description, which is the "
             "default, and the sequence windows each model sees. Does not cost quota.";
    case ToolKind::kListContexts:
      return "Lists the training contexts of the expression models (Roadmap epigenomes): id "
             "(E066), name, ontology CURIE (UBERON/CL/EFO), label and group, and the free-text "
             "threshold. predict_expression's options.description may name one by id or CURIE. "
             "Does not cost quota.";
  }
  return "";
}

std::string Title(const ToolDef& tool) {
  switch (tool.kind) {
    case ToolKind::kPredict:
      return "Predict: " + std::string(TaskName(*tool.task));
    case ToolKind::kFindGenes:
      return "Find genes and predict their expression";
    case ToolKind::kScoreVariants:
      return "Score variants";
    case ToolKind::kIsm:
      return "In-silico mutagenesis of a window";
    case ToolKind::kGetJob:
      return "Get a job";
    case ToolKind::kListJobs:
      return "List my jobs";
    case ToolKind::kListModels:
      return "List models";
    case ToolKind::kListContexts:
      return "List expression contexts";
  }
  return tool.name;
}

}  // namespace

const std::vector<ToolDef>& Tools() {
  static const std::vector<ToolDef> tools = [] {
    std::vector<ToolDef> t;
    for (Task task : kAllTasks) {
      t.push_back({"predict_" + std::string(TaskName(task)), ToolKind::kPredict, task});
    }
    t.push_back({"find_genes_and_predict_expression", ToolKind::kFindGenes, std::nullopt});
    t.push_back({"score_variants", ToolKind::kScoreVariants, std::nullopt});
    t.push_back({"ism", ToolKind::kIsm, std::nullopt});
    t.push_back({"get_job", ToolKind::kGetJob, std::nullopt});
    t.push_back({"list_jobs", ToolKind::kListJobs, std::nullopt});
    t.push_back({"list_models", ToolKind::kListModels, std::nullopt});
    t.push_back({"list_contexts", ToolKind::kListContexts, std::nullopt});
    return t;
  }();
  return tools;
}

const ToolDef* FindTool(std::string_view name) {
  for (const auto& t : Tools()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::optional<int64_t> AsyncThresholdBp(const ToolDef& tool) {
  if (tool.kind == ToolKind::kFindGenes) return core::kFindGenesSyncLimitBp;
  if (tool.kind != ToolKind::kPredict) return std::nullopt;
  switch (*tool.task) {
    case Task::kPromoter:
    case Task::kEnhancer:
    case Task::kChromatin:
      return 100000;
    case Task::kSplice:
      return 250000;
    case Task::kAnnotation:
      return 30000;
    case Task::kExpression:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string InputSchemaJson(const core::ModelCatalogue& catalogue, const ToolDef& tool) {
  Document doc;
  doc.Parse(BuildOpenApiDocument(catalogue, "mcp").c_str());
  Document out;
  Value schema = InputSchema(doc, tool, out.GetAllocator());
  return ToJson(schema);
}

std::string ToolsListJson(const core::ModelCatalogue& catalogue, bool structured) {
  Document doc;
  doc.Parse(BuildOpenApiDocument(catalogue, "mcp").c_str());
  Document out(rapidjson::kObjectType);
  Allocator& a = out.GetAllocator();
  Value tools(rapidjson::kArrayType);
  for (const ToolDef& tool : Tools()) {
    Value t(rapidjson::kObjectType);
    t.AddMember("name", Value(tool.name.c_str(), a), a);
    if (structured) t.AddMember("title", Value(Title(tool).c_str(), a), a);
    t.AddMember("description", Value(Description(catalogue, tool).c_str(), a), a);
    t.AddMember("inputSchema", InputSchema(doc, tool, a), a);
    if (structured) {
      Document output;
      output.Parse(OutputSchema(tool.kind).c_str());
      t.AddMember("outputSchema", Value(output, a), a);
    }
    Value annotations(rapidjson::kObjectType);
    const bool read_only = tool.kind == ToolKind::kGetJob || tool.kind == ToolKind::kListJobs ||
                           tool.kind == ToolKind::kListModels ||
                           tool.kind == ToolKind::kListContexts;
    annotations.AddMember("readOnlyHint", read_only, a);
    annotations.AddMember("destructiveHint", false, a);
    annotations.AddMember("openWorldHint", false, a);
    t.AddMember("annotations", annotations, a);
    tools.PushBack(t, a);
  }
  out.AddMember("tools", tools, a);
  return ToJson(out);
}

std::string_view StrandRule(Task task) {
  switch (task) {
    case Task::kPromoter:
      return "Strand: submit the gene's coding (sense) strand, 5'->3'.";
    case Task::kSplice:
      return "Strand: submit the transcript's orientation; a wrong strand does not fail but "
             "returns sites at other positions, often with high scores.";
    case Task::kEnhancer:
      return "Strand: the dev/hk channels are strand-sensitive; submit the coding strand.";
    case Task::kChromatin:
      return "Strand: not strand-sensitive.";
    case Task::kAnnotation:
      return "Strand: submit the plus-strand region; transcripts on both strands are found.";
    case Task::kExpression:
      return "Strand: submit the gene-sense strand; the service neither finds the TSS nor "
             "reverse-complements.";
  }
  return "";
}

}  // namespace dnaserve::gateway::mcp
