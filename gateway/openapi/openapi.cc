#include "gateway/openapi/openapi.h"

#include <cctype>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "gateway/http/json_writer.h"
#include "gateway/mcp/mcp_endpoint.h"
#include "gateway/mcp/tool_catalogue.h"
#include "gateway/ratelimit/quota.h"
#include "gateway/validation/find_genes_request.h"
#include "gateway/validation/request_schema.h"
#include "gateway/validation/variant_request.h"

namespace dnaserve::gateway {
namespace {

// JsonWriter with the handful of shorthands this document needs.
class Json : public JsonWriter {
 public:
  void Obj() { StartObject(); }
  void EndObj() { EndObject(); }
  void Arr() { StartArray(); }
  void EndArr() { EndArray(); }
  void Str(std::string_view s) { String(s); }
  void Num(double d) { Double(d); }

  void KStr(std::string_view k, std::string_view s) { Field(k, s); }
  void KInt(std::string_view k, int64_t i) { Field(k, i); }
  void KBool(std::string_view k, bool b) { Field(k, b); }
  void KObj(std::string_view k) {
    Key(k);
    Obj();
  }
  void KArr(std::string_view k) {
    Key(k);
    Arr();
  }
  void StrArr(std::string_view k, std::initializer_list<std::string_view> items) {
    KArr(k);
    for (auto item : items) Str(item);
    EndArr();
  }
  void StrArr(std::string_view k, const std::vector<std::string>& items) {
    KArr(k);
    for (const auto& item : items) Str(item);
    EndArr();
  }
  // {"$ref": "#/components/schemas/<name>"} as the value of an already written key.
  void Ref(std::string_view name) {
    Obj();
    KStr("$ref", "#/components/schemas/" + std::string(name));
    EndObj();
  }
  // {"type": <type>} shorthand; `nullable` makes it [type, "null"].
  void Type(std::string_view type, bool nullable = false) {
    Key("type");
    if (nullable) {
      Arr();
      Str(type);
      Str("null");
      EndArr();
    } else {
      Str(type);
    }
  }
  // A property whose schema is just a type and a description.
  void Prop(std::string_view name, std::string_view type, std::string_view description,
            bool nullable = false) {
    KObj(name);
    Type(type, nullable);
    if (!description.empty()) KStr("description", description);
    EndObj();
  }
};

std::string TitleCase(std::string_view name) {
  std::string out(name);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

// ------------------------------------------------------------------ request schemas (the table)

std::string_view JsonTypeName(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kNumber:
      return "number";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kStringArray:
      return "array";
    case FieldType::kObject:
      return "object";
  }
  return "string";
}

// ECMA-262 has no inline case-insensitivity flag, so "UCSC" becomes "[Uu][Cc][Ss][Cc]".
std::string CaseInsensitivePattern(const std::vector<std::string>& values) {
  std::string out = "^(?:";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += '|';
    for (char c : values[i]) {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        out += '[';
        out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out += ']';
      } else if (std::isalnum(static_cast<unsigned char>(c))) {
        out += c;
      } else {
        out += '\\';
        out += c;
      }
    }
  }
  out += ")$";
  return out;
}

void WriteDefault(Json& j, const FieldDefault& value) {
  if (std::holds_alternative<std::monostate>(value)) return;
  j.Key("default");
  if (const auto* b = std::get_if<bool>(&value)) j.Bool(*b);
  if (const auto* i = std::get_if<int64_t>(&value)) j.Int(*i);
  if (const auto* d = std::get_if<double>(&value)) j.Num(*d);
  if (const auto* s = std::get_if<std::string>(&value)) j.Str(*s);
  if (const auto* v = std::get_if<std::vector<std::string>>(&value)) {
    j.Arr();
    for (const auto& item : *v) j.Str(item);
    j.EndArr();
  }
}

void WriteBound(Json& j, std::string_view key, const std::optional<double>& bound, FieldType type) {
  if (!bound) return;
  j.Key(key);
  if (type == FieldType::kInteger) {
    j.Int(static_cast<int64_t>(*bound));
  } else {
    j.Num(*bound);
  }
}

void WriteFieldSchema(Json& j, const FieldSpec& f) {
  j.Obj();
  if (f.type == FieldType::kObject && f.object != nullptr) {
    const std::string ref = "#/components/schemas/" + f.object->title;
    if (f.nullable) {
      j.KArr("anyOf");
      j.Ref(f.object->title);
      j.Obj();
      j.KStr("type", "null");
      j.EndObj();
      j.EndArr();
    } else {
      j.KStr("$ref", ref);
    }
  } else {
    j.Type(JsonTypeName(f.type), f.nullable);
  }
  WriteBound(j, "minimum", f.minimum, f.type);
  WriteBound(j, "maximum", f.maximum, f.type);
  if (f.dna_sequence) {
    j.KStr("pattern", kDnaPattern);
    // The raw string is at least as long as the stripped one, so minLength is a safe necessary
    // condition; maxLength is not published because whitespace would count against it.
    if (f.min_length) j.KInt("minLength", *f.min_length);
    if (f.min_length) j.KInt("x-min-bp", *f.min_length);
    if (f.max_length) j.KInt("x-max-bp", *f.max_length);
  } else {
    if (f.min_length) j.KInt("minLength", *f.min_length);
    if (f.max_length) j.KInt("maxLength", *f.max_length);
  }
  if (!f.accepted_values.empty() && f.exact_values) {
    j.StrArr("enum", f.accepted_values);
  } else if (!f.accepted_values.empty()) {
    j.KStr("pattern", CaseInsensitivePattern(f.accepted_values));
    j.StrArr("examples", f.accepted_values);
  }
  if (!f.pattern.empty()) j.KStr("pattern", f.pattern);
  if (f.type == FieldType::kStringArray) {
    j.KObj("items");
    j.KStr("type", "string");
    if (!f.item_values.empty()) j.StrArr("enum", f.item_values);
    if (f.item_min_length) j.KInt("minLength", *f.item_min_length);
    j.EndObj();
    if (f.min_items) j.KInt("minItems", *f.min_items);
    if (f.max_items) j.KInt("maxItems", *f.max_items);
  }
  WriteDefault(j, f.default_value);
  if (!f.description.empty()) j.KStr("description", f.description);
  j.EndObj();
}

void WriteObjectSchema(Json& j, const ObjectSpec& spec) {
  j.KObj(spec.title);
  j.KStr("title", spec.title);
  j.KStr("type", "object");
  if (!spec.description.empty()) j.KStr("description", spec.description);
  j.KObj("properties");
  for (const FieldSpec& f : spec.fields) {
    j.Key(f.name);
    WriteFieldSchema(j, f);
  }
  j.EndObj();
  std::vector<std::string> required;
  for (const FieldSpec& f : spec.fields) {
    if (f.required) required.push_back(f.name);
  }
  if (!required.empty()) j.StrArr("required", required);
  j.KBool("additionalProperties", false);
  j.EndObj();
}

// ------------------------------------------------------------------ operations

void Security(Json& j, bool bearer, bool optional) {
  j.KArr("security");
  if (optional) {
    j.Obj();
    j.EndObj();
  }
  if (bearer) {
    j.Obj();
    j.KArr("bearer");
    j.EndArr();
    j.EndObj();
  }
  j.EndArr();
}

void HeaderRefs(Json& j, std::initializer_list<std::string_view> names) {
  j.KObj("headers");
  for (auto name : names) {
    j.KObj(name);
    j.KStr("$ref", "#/components/headers/" + std::string(name));
    j.EndObj();
  }
  j.EndObj();
}

void JsonContent(Json& j, std::string_view schema) {
  j.KObj("content");
  j.KObj("application/json");
  j.Key("schema");
  j.Ref(schema);
  j.EndObj();
  j.EndObj();
}

void ErrorResponseDoc(Json& j, std::string_view status, std::string_view description,
                      std::initializer_list<std::string_view> headers = {"X-Request-Id"}) {
  j.KObj(status);
  j.KStr("description", description);
  HeaderRefs(j, headers);
  JsonContent(j, "ErrorEnvelope");
  j.EndObj();
}

constexpr std::string_view k400 =
    "bad_request: malformed request (e.g. a body that is not valid JSON, a text format combined "
    "with Prefer: respond-async).";
constexpr std::string_view k401 =
    "unauthorized: missing, malformed or repeated Authorization header (WWW-Authenticate: "
    "Bearer error=\"invalid_request\") or unregistered key (error=\"invalid_token\").";
constexpr std::string_view k403 = "forbidden: the key is disabled.";
constexpr std::string_view k429 =
    "too_many_requests: per-key concurrency cap (Retry-After: 1), per-key rate cap (Retry-After: "
    "seconds to the next token) or edge per-IP cap.";
constexpr std::string_view k500 = "internal_error: server error; only request_id identifies it.";
constexpr std::string_view k503 =
    "model_loading (the model could not be loaded yet) or service_unavailable (no worker "
    "reachable); retry after Retry-After when present.";

// Headers of a synchronous 2xx result of a predict or workflow operation.
void ResultHeaders(Json& j) {
  HeaderRefs(j, {"X-Request-Id", "X-Job-Id", "RateLimit-Limit", "RateLimit-Remaining",
                 "RateLimit-Reset", "RateLimit-Policy"});
}

// The 202 of an operation that runs as a job with Prefer: respond-async.
void AcceptedResponseDoc(Json& j) {
  j.KObj("202");
  j.KStr("description", "Accepted as a job (Prefer: respond-async); poll links.result.");
  HeaderRefs(j, {"X-Request-Id", "X-Job-Id", "Content-Location", "RateLimit-Limit",
                 "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"});
  JsonContent(j, "JobSubmitted");
  j.EndObj();
}

void AuthErrors(Json& j) {
  ErrorResponseDoc(j, "401", k401, {"X-Request-Id", "WWW-Authenticate"});
  ErrorResponseDoc(j, "403", k403);
}

void RateLimitError(Json& j) {
  ErrorResponseDoc(j, "429", k429,
                   {"X-Request-Id", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining",
                    "RateLimit-Reset", "RateLimit-Policy"});
}

std::string TaskSummary(Task task) {
  switch (task) {
    case Task::kPromoter:
      return "Binary promoter-region detection: probabilities per window. Submit the gene's "
             "coding (sense) strand, 5'->3'. Advisory async threshold: 100,000 bp.";
    case Task::kSplice:
      return "Token-level donor/acceptor splice-site detection over a 15,000 bp sliding window. "
             "Site start/end bound the scored byte-pair-encoding token (typically 4-8 bp), not "
             "the junction; token_index names the token; the same spans are written to GFF3 "
             "columns 4-5, whose column 2 is the model id. Submit the transcript's orientation. "
             "More than 20,000 sites -> 422 validation_failed with details {task, record_count, "
             "maximum_records, sequence_length, threshold}; raise options.threshold. Advisory "
             "async threshold: 250,000 bp.";
    case Task::kEnhancer:
      return "Regression of a developmental (dev) and a housekeeping (hk) score per consecutive, "
             "non-overlapping 249 bp window. Strand-sensitive; submit the coding strand. "
             "Advisory async threshold: 100,000 bp.";
    case Task::kChromatin:
      return "Multi-label prediction of 919 chromatin features in 8 categories (DNase, CTCF, "
             "Pol2, c-Myc, H3K27ac, H3K27me3, H3K4me1, Other) over 1,000 bp windows, step 200 "
             "bp. Not strand-sensitive. More than 100,000 records (a record is one feature "
             "above the threshold in one window) -> 422 validation_failed with details {task, "
             "record_count, maximum_records, sequence_length, threshold}; raise "
             "options.threshold or send a shorter sequence. Advisory async threshold: "
             "100,000 bp.";
    case Task::kAnnotation:
      return "Gene finding: transcript intervals with TSS/polyA positions, transcript type and "
             "exon/intron/CDS structure, plus a GFF3 track (the pipeline's own GFF3, verbatim). "
             "Submit the plus-strand region; transcripts on both strands are found. JSON "
             "responses above 200,000 bp must be asynchronous (413 sync_too_large); bed/gff3 "
             "are uncapped and stay synchronous. Advisory async threshold: 30,000 bp.";
    case Task::kExpression:
      return "Predicted expression on a log(TPM+1) scale from a sequence plus a free-text "
             "experimental-context description; scores exactly one 9,198 bp window centred on "
             "tss_index. Submit the gene-sense strand.";
  }
  return "";
}

void WriteFormatParameter(Json& j, Task task) {
  j.Obj();
  j.KStr("name", "format");
  j.KStr("in", "query");
  j.KBool("required", false);
  std::string description =
      "Output format (case-insensitive). The Accept header may select it instead (";
  bool first = true;
  for (OutputFormat f : SupportedFormats(task)) {
    if (!first) description += ", ";
    first = false;
    description += std::string(FormatMediaType(f)) + " -> " + std::string(FormatName(f));
  }
  description +=
      "); this parameter wins over Accept. An unsupported value is 415 unsupported_format, never "
      "a silent JSON fallback. Text formats are synchronous only.";
  j.KStr("description", description);
  j.KObj("schema");
  j.KStr("type", "string");
  j.KArr("enum");
  for (OutputFormat f : SupportedFormats(task)) j.Str(FormatName(f));
  j.EndArr();
  j.KStr("default", "json");
  j.EndObj();
  j.EndObj();
}

void WritePreferParameter(Json& j, std::string_view description) {
  j.Obj();
  j.KStr("name", "Prefer");
  j.KStr("in", "header");
  j.KBool("required", false);
  j.KStr("description", description);
  j.KObj("schema");
  j.KStr("type", "string");
  j.StrArr("examples", {"respond-async"});
  j.EndObj();
  j.EndObj();
}

void WriteModelsExtension(Json& j, const ModelCatalogue& catalogue, Task task) {
  j.KObj("x-models");
  j.Key("default");
  std::optional<std::string> default_model =
      catalogue.Known(task) ? catalogue.DefaultModel(task) : std::nullopt;
  if (default_model) {
    j.Str(*default_model);
  } else {
    j.Null();
  }
  j.KArr("models");
  if (catalogue.Known(task)) {
    for (const auto& m : catalogue.Models(task)) j.Str(m.id());
  }
  j.EndArr();
  j.EndObj();
}

void WritePredictPath(Json& j, const ModelCatalogue& catalogue, Task task) {
  const std::string name(TaskName(task));
  const std::string title = TitleCase(name);
  j.KObj("/v1/tasks/" + name + "/predict");
  j.KObj("post");
  j.KStr("operationId", "predict" + title);
  j.StrArr("tags", {"tasks"});
  j.KStr("summary", title + " prediction");
  j.KStr("description", TaskSummary(task));
  Security(j, /*bearer=*/true, /*optional=*/false);
  j.KArr("parameters");
  WriteFormatParameter(j, task);
  WritePreferParameter(j,
                       "respond-async: run as a job and answer 202 with a job_id to poll at "
                       "GET /v1/tasks/jobs/{job_id}. With a text format -> 400.");
  j.EndArr();

  j.KObj("requestBody");
  j.KBool("required", true);
  j.KObj("content");
  j.KObj("application/json");
  j.Key("schema");
  j.Ref(PredictRequestSchema(task).title);
  j.EndObj();
  j.EndObj();
  j.EndObj();

  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Synchronous result: {data, meta}, or the requested text track.");
  ResultHeaders(j);
  j.KObj("content");
  for (OutputFormat f : SupportedFormats(task)) {
    j.KObj(FormatMediaType(f));
    j.Key("schema");
    if (f == OutputFormat::kJson) {
      j.Ref(title + "PredictResponse");
    } else {
      j.Obj();
      j.KStr("type", "string");
      j.EndObj();
    }
    j.EndObj();
  }
  j.EndObj();
  j.EndObj();
  AcceptedResponseDoc(j);
  ErrorResponseDoc(j, "400", k400);
  AuthErrors(j);
  ErrorResponseDoc(j, "404",
                   "model_not_found: the requested model is not served for this task (details "
                   "{available_models}); not_found for an unknown route.");
  ErrorResponseDoc(j, "409", "conflict: the model is busy (reserved).");
  ErrorResponseDoc(j, "410", "job_expired: listed for completeness; returned by job polls.");
  if (task == Task::kAnnotation) {
    ErrorResponseDoc(j, "413",
                     "payload_too_large: raw body over 16 MiB, refused before parsing; "
                     "sync_too_large: a synchronous JSON request above 200,000 bp (details "
                     "{sequence_length, threshold}); resend the identical body with Prefer: "
                     "respond-async.");
  } else {
    ErrorResponseDoc(j, "413", "payload_too_large: raw body over 16 MiB, refused before parsing.");
  }
  ErrorResponseDoc(j, "415",
                   "unsupported_format: format/Accept value this task does not offer; the "
                   "message names the supported set.");
  std::string unprocessable =
      "validation_failed (details {errors: [{loc, msg, type}]}; message summarises the first) "
      "or task_not_supported_by_model (details {task, supported_tasks}).";
  if (task == Task::kSplice) {
    unprocessable +=
        " Also validation_failed with details {task, record_count, "
        "maximum_records, sequence_length, threshold} above 20,000 sites.";
  }
  if (task == Task::kChromatin) {
    unprocessable +=
        " Also validation_failed with details {task, record_count, maximum_records, "
        "sequence_length, threshold} above 100,000 records (features above the threshold, "
        "counted over all windows).";
  }
  if (task == Task::kExpression) {
    unprocessable +=
        " tss_index violations (missing when required, outside "
        "[4599, len-4599]) are reported at loc [body].";
  }
  ErrorResponseDoc(j, "422", unprocessable);
  RateLimitError(j);
  ErrorResponseDoc(j, "500", k500);
  ErrorResponseDoc(j, "503", k503, {"X-Request-Id", "Retry-After"});
  j.EndObj();  // responses

  WriteModelsExtension(j, catalogue, task);
  if (task == Task::kAnnotation) j.KInt("x-sync-limit-bp", kAnnotationSyncLimitBp);
  j.EndObj();  // post
  j.EndObj();  // path
}

void WriteFindGenesPath(Json& j) {
  j.KObj("/v1/workflows/find-genes-and-predict-expression");
  j.KObj("post");
  j.KStr("operationId", "findGenesAndPredictExpression");
  j.StrArr("tags", {"workflows"});
  j.KStr("summary", "Find genes, then predict each gene's expression");
  j.KStr("description",
         "The annotation model over the submitted plus-strand region, then the expression model "
         "on a 9,198 bp window centred on each found gene's TSS, read on the gene's sense strand "
         "(reverse complement for '-' genes; the TSS at index 4599 of the window). A window "
         "running past the region is padded with N up to half its width (4,599 bp in total); a "
         "gene needing more is reported with skipped = true and a skip_reason, never dropped. "
         "Models are chosen in options (annotation_model, expression_model; see the models "
         "routes of the annotation and expression tasks). JSON only: there is no format "
         "parameter; ?format= other than json, or an Accept naming only other media types, is "
         "415 unsupported_format. Synchronous requests above 50,000 bp get 413 sync_too_large; "
         "resend the identical body with Prefer: respond-async. The job's progress covers the "
         "annotation stage (0-50 %) and then the genes one by one (50-100 %).");
  Security(j, /*bearer=*/true, /*optional=*/false);
  j.KArr("parameters");
  WritePreferParameter(j,
                       "respond-async: run as a job and answer 202 with a job_id to poll at "
                       "GET /v1/tasks/jobs/{job_id}. Required above 50,000 bp.");
  j.EndArr();
  j.KObj("requestBody");
  j.KBool("required", true);
  JsonContent(j, FindGenesRequestSchema().title);
  j.EndObj();

  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Synchronous result: {data, meta}.");
  ResultHeaders(j);
  JsonContent(j, "FindGenesResponse");
  j.EndObj();
  AcceptedResponseDoc(j);
  ErrorResponseDoc(j, "400", "bad_request: the body is not valid JSON.");
  AuthErrors(j);
  ErrorResponseDoc(j, "404",
                   "model_not_found: options.annotation_model or options.expression_model is not "
                   "served for its task (details {available_models} of that task).");
  ErrorResponseDoc(j, "413",
                   "payload_too_large: raw body over 16 MiB, refused before parsing; "
                   "sync_too_large: a synchronous request above 50,000 bp (details "
                   "{sequence_length, threshold}); resend the identical body with Prefer: "
                   "respond-async.");
  ErrorResponseDoc(j, "415",
                   "unsupported_format: a format/Accept value other than JSON; the message names "
                   "the supported set.");
  ErrorResponseDoc(j, "422",
                   "validation_failed (details {errors: [{loc, msg, type}]}): sequence outside "
                   "1,000-500,000 bp or the alphabet, unknown key in the body or options, "
                   "options.description missing or empty; or task_not_supported_by_model "
                   "(details {task, supported_tasks}): a model of another task given as "
                   "annotation_model or expression_model.");
  RateLimitError(j);
  ErrorResponseDoc(j, "500", k500);
  ErrorResponseDoc(j, "503", k503, {"X-Request-Id", "Retry-After"});
  j.EndObj();  // responses

  j.KInt("x-sync-limit-bp", kFindGenesSyncLimitBp);
  j.EndObj();  // post
  j.EndObj();  // path
}

void WriteVariantPath(Json& j) {
  j.KObj("/v1/workflows/genomic-variant-interpretation");
  j.KObj("post");
  j.KStr("operationId", "genomicVariantInterpretation");
  j.StrArr("tags", {"workflows"});
  j.KStr("summary", "Annotate a VCF in object storage with predicted expression effects");
  j.KStr("description",
         "Asynchronous only: send Prefer: respond-async (without it, 400 bad_request); the "
         "answer is 202 with a job_id, and the result is polled at GET /v1/tasks/jobs/{job_id} "
         "(no callbacks). The VCF named by input.uri is read from the operator's object store "
         "and an annotated bgzip copy, <name>.annotated.<first 8 characters of job_id>.vcf.gz, "
         "is written in the same prefix; the input is never modified. For each supported ALT "
         "allele and each start site within options.window bp, the expression model scores the "
         "reference and the alternate 9,198 bp TSS-centred windows (gene sense strand) once per "
         "tissue; GEX_ANN carries Allele|Gene|Gene_ID|Transcript_ID|TSS|Strand|TSS_distance| "
         "then one log2 fold-change per tissue, then Consequence (TSS_distance strand-aware, "
         "negative upstream; Consequence upstream_gene_variant or sequence_variant). "
         "Every input record is written; unscored ones carry GEX_NOT_RUN and GEX_NOT_RUN_REASON "
         "(OUTSIDE_TSS_WINDOW, NO_TSS_ON_CONTIG, NO_SUPPORTED_ALT, NO_REQUESTED_GENE_IN_WINDOW), "
         "and symbolic, breakend and spanning-deletion alleles are listed in GEX_SKIPPED_ALT. "
         "Job identity: the same key, input.uri, object ETag, client_ref and options return the "
         "existing job (202, same job_id) unless it failed; a replaced object (new ETag) is a "
         "new job. Problems found only once the whole file is read (a malformed record, a "
         "truncated file, GEX_* fields in records) fail the job: the poll returns 400 naming the "
         "record, and no output object is written. A job in flight during a deployment is lost; "
         "its poll answers 503 asking to resubmit.");
  Security(j, /*bearer=*/true, /*optional=*/false);
  j.KArr("parameters");
  j.Obj();
  j.KStr("name", "Prefer");
  j.KStr("in", "header");
  j.KBool("required", true);
  j.KStr("description", "Must include respond-async: this workflow runs only as a job.");
  j.KObj("schema");
  j.KStr("type", "string");
  j.StrArr("examples", {"respond-async"});
  j.EndObj();
  j.EndObj();
  j.EndArr();
  j.KObj("requestBody");
  j.KBool("required", true);
  JsonContent(j, VariantRequestSchema().title);
  j.EndObj();

  j.KObj("responses");
  AcceptedResponseDoc(j);
  ErrorResponseDoc(
      j, "400",
      "bad_request: the body is not valid JSON; no Prefer: respond-async; or a pre-acceptance "
      "check: input.uri not of the form s3://bucket/key, naming a prefix, or a key not ending "
      ".vcf, .vcf.gz or .vcf.bgz; the object missing, unreadable or outside the API key's "
      "s3_read grants (one answer for all three, the store not asked for an object outside "
      "them); the input's prefix outside the key's s3_write grants (the output is written "
      "beside the input); an empty object or one "
      "over 2 GiB; a genes identifier matching no gene (every unresolved one is named); a "
      "genome_build without a start-site catalogue; a VCF already carrying GEX_* fields.");
  AuthErrors(j);
  ErrorResponseDoc(j, "413", "payload_too_large: raw body over 16 MiB, refused before parsing.");
  ErrorResponseDoc(j, "415",
                   "unsupported_format: a format/Accept value other than JSON; the message names "
                   "the supported set.");
  ErrorResponseDoc(j, "422",
                   "validation_failed (details {errors: [{loc, msg, type}]}): unknown key in the "
                   "body, input or options, a missing or mistyped field, input.type other than "
                   "s3_object, genome_build other than GRCh37, window outside 1-100,000, 0 or "
                   "more than 16 tissues, an empty genes list or more than 1,000 genes, "
                   "client_ref over 128 characters, input.uri outside 8-1,024 characters.");
  RateLimitError(j);
  ErrorResponseDoc(j, "500",
                   "internal_error: server error, e.g. the object store refused the service's "
                   "own credentials; only request_id identifies it.");
  ErrorResponseDoc(j, "503",
                   "service_unavailable: the object store is unreachable or throttling, or the "
                   "workflow is not set up on this deployment; retry after Retry-After when "
                   "present.",
                   {"X-Request-Id", "Retry-After"});
  j.EndObj();  // responses
  j.EndObj();  // post
  j.EndObj();  // path
}

void WriteHealthPath(Json& j) {
  j.KObj("/health");
  j.KObj("get");
  j.KStr("operationId", "health");
  j.StrArr("tags", {"service"});
  j.KStr("summary", "Liveness and service version");
  Security(j, false, false);
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Bare object with the service version.");
  HeaderRefs(j, {"X-Request-Id"});
  JsonContent(j, "Health");
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

void WriteTaskPathParameter(Json& j) {
  j.Obj();
  j.KStr("name", "task");
  j.KStr("in", "path");
  j.KBool("required", true);
  j.KObj("schema");
  j.KStr("type", "string");
  j.KArr("enum");
  for (Task t : kAllTasks) j.Str(TaskName(t));
  j.EndArr();
  j.EndObj();
  j.EndObj();
}

void WriteModelsPath(Json& j) {
  j.KObj("/v1/tasks/{task}/models");
  j.KObj("get");
  j.KStr("operationId", "listModels");
  j.StrArr("tags", {"tasks"});
  j.KStr("summary", "Models served for a task");
  j.KStr("description",
         "Public (metered per source IP, can 429); a bearer key is accepted but not required. "
         "The same roster and default are published as x-models on each predict operation.");
  Security(j, /*bearer=*/true, /*optional=*/true);
  j.KArr("parameters");
  WriteTaskPathParameter(j);
  j.EndArr();
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Bare object {task, default_model, models}.");
  HeaderRefs(j, {"X-Request-Id"});
  JsonContent(j, "ModelList");
  j.EndObj();
  ErrorResponseDoc(j, "401", k401, {"X-Request-Id", "WWW-Authenticate"});
  ErrorResponseDoc(j, "404", "not_found: unknown task.");
  RateLimitError(j);
  ErrorResponseDoc(j, "500", k500);
  ErrorResponseDoc(j, "503", k503, {"X-Request-Id", "Retry-After"});
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

void WriteJobsPath(Json& j) {
  j.KObj("/v1/tasks/jobs");
  j.KObj("get");
  j.KStr("operationId", "listJobs");
  j.StrArr("tags", {"jobs"});
  j.KStr("summary", "The calling client's recent jobs");
  Security(j, true, false);
  j.KArr("parameters");
  j.Obj();
  j.KStr("name", "limit");
  j.KStr("in", "query");
  j.KBool("required", false);
  j.KObj("schema");
  j.KStr("type", "integer");
  j.KInt("minimum", 1);
  j.KInt("maximum", 500);
  j.KInt("default", 50);
  j.EndObj();
  j.EndObj();
  j.EndArr();
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Bare object {jobs, count}, newest first.");
  HeaderRefs(j, {"X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
                 "RateLimit-Policy"});
  JsonContent(j, "JobList");
  j.EndObj();
  AuthErrors(j);
  ErrorResponseDoc(j, "422", "validation_failed: limit is not an integer in 1-500.");
  RateLimitError(j);
  ErrorResponseDoc(j, "500", k500);
  ErrorResponseDoc(j, "503", k503, {"X-Request-Id", "Retry-After"});
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

void WriteJobPath(Json& j) {
  j.KObj("/v1/tasks/jobs/{job_id}");
  j.KObj("get");
  j.KStr("operationId", "getJob");
  j.StrArr("tags", {"jobs"});
  j.KStr("summary", "Poll a job");
  j.KStr("description",
         "running -> 202 with progress; completed -> 200 with exactly the body the synchronous "
         "call would have returned; failed -> the job's natural 4xx/5xx; unknown or owned by "
         "another client -> 404; past retention (24 h from last activity) -> 410. Finished "
         "results are stored gzip-compressed: with Accept-Encoding: gzip (q > 0) a large one "
         "is sent as stored, with Content-Encoding: gzip; otherwise decompressed. Every "
         "finished answer carries Vary: Accept-Encoding. Each client keeps at most "
         "DNASERVE_CLIENT_RESULT_BYTES (default 64 MiB) of stored results, compressed; beyond "
         "it its oldest results are removed (410 job_expired saying so), and a result larger "
         "than the whole allowance fails as 413 payload_too_large.");
  Security(j, true, false);
  j.KArr("parameters");
  j.Obj();
  j.KStr("name", "job_id");
  j.KStr("in", "path");
  j.KBool("required", true);
  j.KObj("schema");
  j.KStr("type", "string");
  j.EndObj();
  j.EndObj();
  j.EndArr();
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", "Completed: the synchronous {data, meta} body.");
  HeaderRefs(j, {"X-Request-Id", "X-Job-Id", "Content-Encoding", "Vary"});
  j.KObj("content");
  j.KObj("application/json");
  j.KObj("schema");
  j.KArr("oneOf");
  for (Task t : kAllTasks) j.Ref(TitleCase(TaskName(t)) + "PredictResponse");
  j.Ref("FindGenesResponse");
  j.Ref("VariantResponse");
  j.EndArr();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.KObj("202");
  j.KStr("description", "Still running.");
  HeaderRefs(j, {"X-Request-Id", "X-Job-Id"});
  JsonContent(j, "JobProgress");
  j.EndObj();
  AuthErrors(j);
  ErrorResponseDoc(j, "404", "not_found: unknown job or owned by another client.");
  ErrorResponseDoc(j, "410",
                   "job_expired: past retention, lost in a restart, or removed to make room "
                   "for the client's newer results (per-client result allowance).");
  ErrorResponseDoc(j, "413",
                   "payload_too_large: the job's result alone was larger than the client's "
                   "whole result allowance.");
  RateLimitError(j);
  ErrorResponseDoc(j, "500", k500);
  ErrorResponseDoc(j, "503", k503, {"X-Request-Id", "Retry-After"});
  ErrorResponseDoc(j, "default", "A failed job: the natural 4xx/5xx of the request.");
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

void WritePublicPage(Json& j, std::string_view path, std::string_view operation_id,
                     std::string_view summary, std::string_view media_type) {
  j.KObj(path);
  j.KObj("get");
  j.KStr("operationId", operation_id);
  j.StrArr("tags", {"service"});
  j.KStr("summary", summary);
  Security(j, false, false);
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description", summary);
  j.KObj("content");
  j.KObj(media_type);
  j.KObj("schema");
  j.KStr("type", media_type == "application/json" ? "object" : "string");
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

// The agent-protocol interface: one JSON-RPC endpoint, described here so that the contract
// names it and its tools (README, "Agent-protocol interface (MCP)", has the host settings).
void WriteMcpPath(Json& j) {
  std::string tools;
  for (const auto& tool : mcp::Tools()) tools += (tools.empty() ? "" : ", ") + tool.name;
  std::string revisions;
  for (auto v : mcp::kProtocolVersions) {
    revisions += (revisions.empty() ? "" : ", ") + std::string(v);
  }
  j.KObj("/mcp");
  j.KObj("post");
  j.KStr("operationId", "mcp");
  j.StrArr("tags", {"agent-protocol"});
  j.KStr("summary", "Model Context Protocol (MCP) endpoint for agents (Streamable HTTP)");
  j.KStr("description",
         "JSON-RPC 2.0 messages of the Model Context Protocol, revisions " + revisions +
             "; stateless (no Mcp-Session-Id), no server stream (GET is 405). The same bearer "
             "keys as REST. Tools: " + tools +
             " (not the variant workflow). Each tool's inputSchema is this document's request "
             "schema of the operation it wraps. Every predict_* or "
             "find_genes_and_predict_expression call costs one token of the key's bucket and "
             "holds a concurrency slot, and is a job in GET /v1/tasks/jobs; a refusal is a tool "
             "result with isError and error.code too_many_requests. initialize, tools/list and "
             "the read tools cost nothing. Results are summaries (at most 20 top items) with a "
             "link to the job; protocol errors are JSON-RPC errors (-32700, -32600, -32601, "
             "-32602); a request carrying a foreign Origin is 403.");
  Security(j, true, false);
  j.KObj("requestBody");
  j.KBool("required", true);
  j.KObj("content");
  j.KObj("application/json");
  j.KObj("schema");
  j.KStr("description", "A JSON-RPC 2.0 request or notification (a batch, for 2025-03-26).");
  j.KArr("type");
  j.Str("object");
  j.Str("array");
  j.EndArr();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.KObj("responses");
  j.KObj("200");
  j.KStr("description",
         "JSON-RPC response(s); text/event-stream (progress notifications, then the response) "
         "when a tools/call carried a progressToken and Accept lists text/event-stream.");
  j.KObj("content");
  for (const char* media : {"application/json", "text/event-stream"}) {
    j.KObj(media);
    j.KObj("schema");
    j.KStr("type", media == std::string_view("application/json") ? "object" : "string");
    j.EndObj();
    j.EndObj();
  }
  j.EndObj();
  j.EndObj();
  j.KObj("202");
  j.KStr("description", "Only notifications or responses were sent: nothing to answer.");
  j.EndObj();
  for (auto [status, what] : {std::pair{"400", "Not JSON (-32700), not a message (-32600), an "
                                               "unsupported MCP-Protocol-Version, or a batch "
                                               "in a revision without batches."},
                              std::pair{"406", "Accept does not allow application/json."},
                              std::pair{"413", "payload_too_large: body over 16 MiB."},
                              std::pair{"415", "Content-Type is not application/json."}}) {
    j.KObj(status);
    j.KStr("description", what);
    j.EndObj();
  }
  AuthErrors(j);
  j.EndObj();
  j.EndObj();
  j.EndObj();
}

// ------------------------------------------------------------------ component schemas

void WriteErrorSchemas(Json& j) {
  j.KObj("ErrorEnvelope");
  j.KStr("type", "object");
  j.KStr("description",
         "Every non-2xx except an edge 504. Switch on error.code, never on message.");
  j.KObj("properties");
  j.Key("error");
  j.Ref("Error");
  j.EndObj();
  j.StrArr("required", {"error"});
  j.EndObj();

  j.KObj("Error");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("code");
  j.KStr("type", "string");
  j.KStr("description",
         "Closed enum in this revision; treat an unknown code as a generic failure.");
  j.KArr("enum");
  for (int c = static_cast<int>(ErrorCode::kBadRequest);
       c <= static_cast<int>(ErrorCode::kServiceUnavailable); ++c) {
    j.Str(ErrorCodeName(static_cast<ErrorCode>(c)));
  }
  j.EndArr();
  j.EndObj();
  j.Prop("message", "string", "Human-readable; not for parsing.");
  j.Prop("request_id", "string", "Also in the X-Request-Id header.");
  j.KObj("details");
  j.KStr("description", "Typed by code.");
  j.KArr("anyOf");
  for (std::string_view name :
       {"ValidationFailedDetails", "RecordCapDetails", "TaskNotSupportedByModelDetails",
        "ModelNotFoundDetails", "SyncTooLargeDetails", "GenericDetails"}) {
    j.Ref(name);
  }
  j.Obj();
  j.KStr("type", "null");
  j.EndObj();
  j.EndArr();
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"code", "message", "request_id"});
  j.EndObj();

  j.KObj("ValidationFailedDetails");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("errors");
  j.KStr("type", "array");
  j.Key("items");
  j.Ref("ValidationError");
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"errors"});
  j.EndObj();

  j.KObj("ValidationError");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("loc");
  j.KStr("type", "array");
  j.KStr("description",
         "Path of the offending value, e.g. [\"body\", \"options\", \"threshold\"].");
  j.KObj("items");
  j.KArr("type");
  j.Str("string");
  j.Str("integer");
  j.EndArr();
  j.EndObj();
  j.EndObj();
  j.Prop("msg", "string", "");
  j.Prop("type", "string",
         "pydantic-style error type: missing, extra_forbidden, model_attributes_type, "
         "string_type, int_type, int_from_float, float_type, bool_type, list_type, "
         "greater_than_equal, less_than_equal, string_too_short, string_too_long, "
         "string_pattern_mismatch, too_short, literal_error, value_error.");
  j.EndObj();
  j.StrArr("required", {"loc", "msg", "type"});
  j.EndObj();

  j.KObj("RecordCapDetails");
  j.KStr("type", "object");
  j.KStr("description",
         "Response-size cap of splice (20,000 sites) and chromatin (100,000 records: features "
         "above the threshold, one per window they score in); no errors key.");
  j.KObj("properties");
  j.Prop("task", "string", "splice or chromatin.");
  j.Prop("record_count", "integer",
         "Records counted through the window where the cap was passed (the request is refused "
         "there, so this is a lower bound of the full count).");
  j.Prop("maximum_records", "integer", "");
  j.Prop("sequence_length", "integer", "");
  j.Prop("threshold", "number", "");
  j.EndObj();
  j.StrArr("required", {"task", "record_count", "maximum_records", "sequence_length", "threshold"});
  j.EndObj();

  j.KObj("TaskNotSupportedByModelDetails");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("task", "string", "The requested task.");
  j.KObj("supported_tasks");
  j.KStr("type", "array");
  j.KObj("items");
  j.KStr("type", "string");
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"task", "supported_tasks"});
  j.EndObj();

  j.KObj("ModelNotFoundDetails");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("available_models");
  j.KStr("type", "array");
  j.KObj("items");
  j.KStr("type", "string");
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"available_models"});
  j.EndObj();

  j.KObj("SyncTooLargeDetails");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("sequence_length", "integer", "");
  j.Prop("threshold", "integer", "");
  j.EndObj();
  j.StrArr("required", {"sequence_length", "threshold"});
  j.EndObj();

  j.KObj("GenericDetails");
  j.KStr("type", "object");
  j.EndObj();
}

void WritePredictMeta(Json& j) {
  j.KObj("PredictMeta");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "UUIDv4; also in the X-Job-Id header.");
  j.Prop("request_id", "string", "Also in the X-Request-Id header.");
  j.Prop("task", "string", "Equals the {task} path segment and data.task.");
  j.Prop("model", "string", "Model id that ran.");
  j.Prop("cold_start", "boolean", "True if the model had to be loaded for this request.");
  j.Prop("model_load_time_ms", "integer", "0 when cold_start is false.");
  j.Prop("inference_time_ms", "integer", "");
  j.Prop("sequence_length", "integer", "Length (bp) of the whitespace-stripped sequence.");
  j.KObj("task_specific_counts");
  j.KStr("type", "object");
  j.KStr("description", "Discriminated by its own task field.");
  j.KObj("properties");
  j.Prop("task", "string", "");
  j.EndObj();
  j.StrArr("required", {"task"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"job_id", "request_id", "task", "model", "cold_start", "model_load_time_ms",
                        "inference_time_ms", "sequence_length", "task_specific_counts"});
  j.EndObj();
}

// Per-task success body. Entry fields the contract leaves unspecified stay open.
void WritePredictResponse(Json& j, Task task) {
  const std::string name(TaskName(task));
  j.KObj(TitleCase(name) + "PredictResponse");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("data");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("task");
  j.KStr("const", name);
  j.EndObj();
  j.Prop("model", "string", "");
  j.KObj("input");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("sequence_name", "string", "");
  if (task == Task::kExpression) {
    j.Prop("tss_index", "integer", "");
    j.KObj("scored_window");
    j.KStr("type", "array");
    j.KStr("description", "Half-open [start, end] of the submitted sequence, width 9,198.");
    j.KObj("items");
    j.KStr("type", "integer");
    j.EndObj();
    j.EndObj();
    j.Prop("submitted_sequence_length", "integer", "");
  }
  j.EndObj();
  j.StrArr("required", {"sequence_name"});
  j.EndObj();
  j.Prop("summary", "object", "Keys unspecified and may change; do not depend on them.");
  j.Prop("formats", "object", "Pre-rendered text payloads (e.g. BED, GFF3).", true);
  std::vector<std::string> required = {"task", "model", "input", "summary", "formats"};
  auto array = [&](std::string_view key, std::string_view description) {
    j.Prop(key, "array", description);
    required.emplace_back(key);
  };
  auto object = [&](std::string_view key, std::string_view description) {
    j.Prop(key, "object", description);
    required.emplace_back(key);
  };
  switch (task) {
    case Task::kPromoter:
      array("regions", "Detected regions with start, end, score.");
      array("window_details", "One entry per scanned window.");
      break;
    case Task::kSplice:
      array("sites", "Donor/acceptor sites with start, end (token span), token_index, scores.");
      object("tracks", "Per-position score tracks.");
      array("window_details", "One entry per window.");
      break;
    case Task::kEnhancer:
      array("windows", "Per-window dev and hk scores.");
      object("tracks", "bedGraph renderings of each track.");
      break;
    case Task::kChromatin:
      array("windows", "Per-window features above threshold, grouped by category.");
      object("tracks", "Per-track renderings.");
      break;
    case Task::kAnnotation:
      array("transcripts",
            "Transcripts with strand, tss_position, polya_position, transcript_type, "
            "transcript_type_score and 0-based half-open exons, introns, cds.");
      break;
    case Task::kExpression:
      j.KObj("prediction");
      j.KStr("type", "object");
      j.KObj("properties");
      j.Prop("expression", "number", "log(TPM+1)");
      j.Prop("expression_log_tpm", "number", "log(TPM+1)");
      j.Prop("expression_tpm", "number", "Back-transformed linear TPM.");
      j.Prop("unit", "string", "");
      j.EndObj();
      j.StrArr("required", {"expression", "expression_log_tpm", "expression_tpm", "unit"});
      j.EndObj();
      required.emplace_back("prediction");
      break;
  }
  j.EndObj();  // data.properties
  j.StrArr("required", required);
  j.EndObj();  // data
  j.Key("meta");
  j.Ref("PredictMeta");
  j.EndObj();  // properties
  j.StrArr("required", {"data", "meta"});
  j.EndObj();
}

void WriteStageTimings(Json& j) {
  j.KObj("StageTimings");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("cold_start", "boolean", "True if the stage had to load its model.");
  j.Prop("model_load_time_ms", "integer", "0 when cold_start is false.");
  j.Prop("inference_time_ms", "integer", "Summed over the stage's calls.");
  j.EndObj();
  j.StrArr("required", {"cold_start", "model_load_time_ms", "inference_time_ms"});
  j.EndObj();
}

void WriteFindGenesResponse(Json& j) {
  j.KObj("FindGenesResponse");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("data");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("task");
  j.KStr("const", "find_genes_and_predict_expression");
  j.EndObj();
  j.Prop("annotation_model", "string", "Annotation model id that ran.");
  j.Prop("expression_model", "string", "Expression model id that ran.");
  j.KObj("input");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("sequence_name", "string", "");
  j.Prop("description", "string", "options.description, applied to every gene.");
  j.EndObj();
  j.StrArr("required", {"sequence_name", "description"});
  j.EndObj();
  j.Prop("summary", "object", "Aggregate stats; keys unspecified and may change.");
  j.KObj("annotation");
  j.KStr("description", "The annotation stage's data payload, in the annotation task's shape.");
  j.KStr("$ref", "#/components/schemas/AnnotationPredictResponse/properties/data");
  j.EndObj();
  j.KObj("expression_predictions");
  j.KStr("type", "array");
  j.KStr("description", "One entry per gene (annotation transcript) found, in its order.");
  j.Key("items");
  j.Ref("GeneExpressionPrediction");
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"task", "annotation_model", "expression_model", "input", "summary",
                        "annotation", "expression_predictions"});
  j.EndObj();  // data
  j.Key("meta");
  j.Ref("FindGenesMeta");
  j.EndObj();  // properties
  j.StrArr("required", {"data", "meta"});
  j.EndObj();

  j.KObj("GeneExpressionPrediction");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("gene_index", "integer", "Index of the gene in data.annotation.transcripts.");
  j.Prop("gene_name", "string", "The transcript's id in data.annotation.transcripts.");
  j.KObj("strand");
  j.KStr("type", "string");
  j.StrArr("enum", {"+", "-"});
  j.EndObj();
  j.Prop("tss_position", "integer",
         "0-based TSS coordinate as data.annotation reports it: within the submitted sequence, "
         "or rebased by options.shift_coordinates.");
  j.Prop("centered_sequence_length", "integer",
         "Bases of the region inside the 9,198 bp TSS-centred window (9,198 minus padded_bp); "
         "the scored window itself is always 9,198 bp.");
  j.Prop("padded_bp", "integer",
         "N bases the window needs beyond the region (at most 4,599 for a predicted gene).");
  j.Prop("expression", "number", "log(TPM+1); null when skipped.", true);
  j.Prop("expression_tpm", "number", "Back-transformed linear TPM; null when skipped.", true);
  j.Prop("skipped", "boolean", "");
  j.Prop("skip_reason", "string", "Why the gene was not scored; null unless skipped.", true);
  j.EndObj();
  j.StrArr("required", {"gene_index", "gene_name", "strand", "tss_position",
                        "centered_sequence_length", "expression", "expression_tpm", "skipped",
                        "skip_reason"});
  j.EndObj();

  j.KObj("FindGenesMeta");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "UUIDv4; also in the X-Job-Id header.");
  j.Prop("request_id", "string", "Also in the X-Request-Id header.");
  j.KObj("task");
  j.KStr("const", "find_genes_and_predict_expression");
  j.EndObj();
  j.Prop("model", "string", "<annotation model id>+<expression model id>.");
  j.Prop("cold_start", "boolean", "True if either stage loaded its model.");
  j.Prop("model_load_time_ms", "integer", "Sum over both stages.");
  j.Prop("inference_time_ms", "integer", "Sum over both stages.");
  j.Prop("sequence_length", "integer", "Length (bp) of the whitespace-stripped sequence.");
  j.Prop("annotation_model", "string", "");
  j.Prop("expression_model", "string", "");
  j.Key("annotation");
  j.Ref("StageTimings");
  j.Key("expression");
  j.Ref("StageTimings");
  j.KObj("task_specific_counts");
  j.KStr("type", "object");
  j.KStr("description", "genes_predicted + genes_skipped == genes_found.");
  j.KObj("properties");
  j.Prop("genes_found", "integer", "");
  j.Prop("genes_predicted", "integer", "");
  j.Prop("genes_skipped", "integer", "");
  j.EndObj();
  j.StrArr("required", {"genes_found", "genes_predicted", "genes_skipped"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"job_id", "request_id", "task", "model", "cold_start",
                        "model_load_time_ms", "inference_time_ms", "sequence_length",
                        "annotation_model", "expression_model", "annotation", "expression",
                        "task_specific_counts"});
  j.EndObj();
  WriteStageTimings(j);
}

void WriteVariantResponse(Json& j) {
  auto object_ref = [&j](std::string_view key, std::string_view description) {
    j.KObj(key);
    j.KStr("type", "object");
    j.KStr("description", description);
    j.KObj("properties");
    j.KObj("type");
    j.KStr("const", kS3ObjectInput);
    j.EndObj();
    j.Prop("uri", "string", "");
    j.EndObj();
    j.StrArr("required", {"type", "uri"});
    j.EndObj();
  };
  j.KObj("VariantResponse");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("data");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("task");
  j.KStr("const", kVariantWorkflow);
  j.EndObj();
  j.KObj("status");
  j.KStr("const", "ok");
  j.KStr("description", "A failed run is a failed job, never a 200 saying failed.");
  j.EndObj();
  object_ref("output",
             "The annotated copy: <name>.annotated.<first 8 characters of job_id>.vcf.gz in the "
             "input's prefix.");
  j.Prop("client_ref", "string", "The request's client_ref, or null.", true);
  j.Key("counts");
  j.Ref("VariantCounts");
  j.EndObj();
  j.StrArr("required", {"task", "status", "output", "client_ref", "counts"});
  j.EndObj();  // data
  j.KObj("meta");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "UUIDv4; also in the X-Job-Id header.");
  j.Prop("request_id", "string", "Of the submitting request.");
  j.KObj("task");
  j.KStr("const", kVariantWorkflow);
  j.EndObj();
  j.Prop("genome_build", "string", "");
  object_ref("input", "Echo of the request's input.");
  j.KObj("gene_annotation");
  j.KStr("type", "object");
  j.KStr("description", "The start-site catalogue the variants were scored against.");
  j.KObj("properties");
  j.Prop("build", "string", "");
  j.Prop("md5", "string", "MD5 of the catalogue file.");
  j.Prop("start_sites", "integer", "");
  j.Prop("transcripts", "string",
         "Which start sites these are, as the catalogue states it (e.g. gene-level RefSeq 5' "
         "ends); it says MANE Select only for a MANE Select catalogue.");
  j.EndObj();
  j.StrArr("required", {"build", "md5", "start_sites", "transcripts"});
  j.EndObj();
  j.KObj("options_applied");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("window", "integer", "");
  j.KObj("tissues");
  j.KStr("type", "array");
  j.KStr("description", "In request order: the order of the log2 fold-change fields.");
  j.KObj("items");
  j.KStr("type", "string");
  j.EndObj();
  j.EndObj();
  j.KObj("genes");
  j.Type("array", /*nullable=*/true);
  j.KStr("description", "The panel resolved to Ensembl gene ids, or null (every gene).");
  j.KObj("items");
  j.KStr("type", "string");
  j.EndObj();
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"window", "tissues", "genes"});
  j.EndObj();
  j.Prop("model", "string",
         "Present only when a model scored something; the output VCF then carries a ##GEXModel "
         "header line. Values are model output only when both are there; otherwise they are "
         "format only. Omitted otherwise.");
  j.EndObj();
  j.StrArr("required", {"job_id", "request_id", "task", "genome_build", "input", "gene_annotation",
                        "options_applied"});
  j.EndObj();  // meta
  j.EndObj();  // properties
  j.StrArr("required", {"data", "meta"});
  j.EndObj();

  j.KObj("VariantCounts");
  j.KStr("type", "object");
  j.KStr("description", "annotated + not_run == variants_in; not_run_reasons sums to not_run.");
  j.KObj("properties");
  j.Prop("variants_in", "integer", "Records in the input.");
  j.Prop("annotated", "integer", "Records with GEX_ANN.");
  j.Prop("not_run", "integer", "Records with GEX_NOT_RUN.");
  j.Prop("annotated_alleles", "integer", "ALT alleles with a prediction; can exceed annotated.");
  j.Prop("associations", "integer", "Allele-to-start-site pairs scored.");
  j.KObj("not_run_reasons");
  j.KStr("type", "object");
  j.KStr("description", "Reason -> records; zero counts are omitted.");
  j.KObj("additionalProperties");
  j.KStr("type", "integer");
  j.EndObj();
  j.EndObj();
  j.Prop("skipped_alleles", "integer",
         "Symbolic, breakend and spanning-deletion alleles, listed per record in "
         "GEX_SKIPPED_ALT.");
  j.EndObj();
  j.StrArr("required", {"variants_in", "annotated", "not_run", "annotated_alleles", "associations",
                        "not_run_reasons", "skipped_alleles"});
  j.EndObj();
}

void WriteJobSchemas(Json& j) {
  j.KObj("JobSubmitted");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("data");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "");
  j.KObj("status");
  j.KStr("const", "accepted");
  j.EndObj();
  j.KObj("links");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("result", "string", "Path /v1/tasks/jobs/{job_id}.");
  j.EndObj();
  j.StrArr("required", {"result"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"job_id", "status", "links"});
  j.EndObj();
  j.KObj("meta");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "");
  j.Prop("task", "string", "");
  j.KObj("mode");
  j.KStr("const", "async");
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"job_id", "task", "mode"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"data", "meta"});
  j.EndObj();

  j.KObj("JobProgress");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("data");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "");
  j.Prop("status", "string", "");
  j.KObj("progress");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("current_percent", "number", "");
  j.Prop("message", "string", "");
  j.Prop("elapsed_seconds", "number", "");
  j.EndObj();
  j.StrArr("required", {"current_percent", "message", "elapsed_seconds"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"job_id", "status", "progress"});
  j.EndObj();
  j.KObj("meta");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("job_id", "string", "");
  j.Prop("task", "string", "");
  j.Prop("mode", "string", "");
  j.EndObj();
  j.StrArr("required", {"job_id", "task", "mode"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"data", "meta"});
  j.EndObj();

  j.KObj("JobList");
  j.KStr("type", "object");
  j.KObj("properties");
  j.KObj("jobs");
  j.KStr("type", "array");
  j.KObj("items");
  j.KStr("type", "object");
  j.KStr("description", "A recent job of the calling client.");
  j.EndObj();
  j.EndObj();
  j.Prop("count", "integer", "");
  j.EndObj();
  j.StrArr("required", {"jobs", "count"});
  j.EndObj();
}

void WriteInfoSchemas(Json& j) {
  j.KObj("ModelList");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("task", "string", "");
  j.Prop("default_model", "string", "", true);
  j.KObj("models");
  j.KStr("type", "array");
  j.Key("items");
  j.Ref("ModelEntry");
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"task", "default_model", "models"});
  j.EndObj();

  j.KObj("ModelEntry");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("name", "string", "Model id, usable as the request's model.");
  j.Prop("description", "string", "");
  j.Prop("is_default", "boolean", "");
  j.KObj("bio_spec");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("request_max_bp", "integer", "Enforced ceiling (500,000).");
  j.Prop("context_window_bp", "integer", "The model's own window.");
  j.Prop("trained_window_bp", "integer",
         "Fixed receptive field (9,198 for expression); null for sliding-window models.", true);
  j.EndObj();
  j.StrArr("required", {"request_max_bp", "context_window_bp", "trained_window_bp"});
  j.EndObj();
  j.EndObj();
  j.StrArr("required", {"name", "description", "is_default", "bio_spec"});
  j.EndObj();

  j.KObj("Health");
  j.KStr("type", "object");
  j.KObj("properties");
  j.Prop("status", "string", "");
  j.Prop("version", "string", "YYYY.MM.DD.N (commit); equals info.version of this document.");
  j.EndObj();
  j.StrArr("required", {"version"});
  j.EndObj();
}

void WriteHeaderComponents(Json& j) {
  struct Header {
    std::string_view name;
    std::string_view type;
    std::string_view description;
  };
  const Header headers[] = {
      {"X-Request-Id", "string", "Request id; equals meta.request_id / error.request_id."},
      {"X-Job-Id", "string", "Job id (UUIDv4); equals meta.job_id."},
      {"Content-Location", "string", "Where to poll the job."},
      {"RateLimit-Limit", "integer", "Token-bucket capacity (burst), not the per-minute budget."},
      {"RateLimit-Remaining", "integer", "Whole tokens left."},
      {"RateLimit-Reset", "integer", "Seconds until the bucket is full."},
      {"RateLimit-Policy", "string", "<capacity>;w=60"},
      {"Retry-After", "integer", "Seconds to wait before retrying."},
      {"Content-Encoding", "string",
       "gzip when the stored result is sent compressed (the request accepted gzip); absent "
       "otherwise."},
      {"Vary", "string", "Accept-Encoding: the representation depends on it."},
      {"WWW-Authenticate", "string",
       "Bearer error=\"invalid_request\" (missing, malformed or repeated header) or "
       "error=\"invalid_token\" (unrecognised key)."},
  };
  j.KObj("headers");
  for (const auto& h : headers) {
    j.KObj(h.name);
    j.KStr("description", h.description);
    j.KObj("schema");
    j.KStr("type", h.type);
    j.EndObj();
    j.EndObj();
  }
  j.EndObj();
}

}  // namespace

std::string BuildOpenApiDocument(const ModelCatalogue& catalogue, std::string_view version) {
  Json j;
  j.Obj();
  j.KStr("openapi", "3.1.0");
  j.KObj("info");
  j.KStr("title", "dnaserve");
  j.KStr("version", version);
  j.KStr("description",
         "DNA sequence analysis: six transformer-model prediction tasks, and workflows that "
         "compose them, behind one REST interface. Every predict and workflow call is "
         "synchronous by default and asynchronous with Prefer: respond-async. Sequence "
         "lengths are counted after ASCII whitespace is stripped.");
  j.EndObj();
  j.KInt("x-contract-revision", kContractRevision);
  j.KInt("x-rate-limit-burst-divisor", kBurstDivisor);
  j.KArr("tags");
  for (std::string_view tag : {"tasks", "workflows", "jobs", "service", "agent-protocol"}) {
    j.Obj();
    j.KStr("name", tag);
    j.EndObj();
  }
  j.EndArr();

  j.KObj("paths");
  WriteHealthPath(j);
  for (Task task : kAllTasks) WritePredictPath(j, catalogue, task);
  WriteFindGenesPath(j);
  WriteVariantPath(j);
  WriteModelsPath(j);
  WriteJobsPath(j);
  WriteJobPath(j);
  WriteMcpPath(j);
  WritePublicPage(j, "/v1/openapi.json", "openApiDocument", "This document.", "application/json");
  WritePublicPage(j, "/docs", "swaggerUi", "Interactive documentation (Swagger UI).", "text/html");
  WritePublicPage(j, "/redoc", "redoc", "Reference documentation (ReDoc).", "text/html");
  j.EndObj();

  j.KObj("components");
  j.KObj("securitySchemes");
  j.KObj("bearer");
  j.KStr("type", "http");
  j.KStr("scheme", "bearer");
  j.KStr("description", "Authorization: Bearer <API_KEY>; keys are issued by the operator.");
  j.EndObj();
  j.EndObj();
  WriteHeaderComponents(j);
  j.KObj("schemas");
  for (Task task : kAllTasks) {
    WriteObjectSchema(j, PredictRequestSchema(task));
    WriteObjectSchema(j, PredictOptionsSchema(task));
  }
  WriteObjectSchema(j, FindGenesRequestSchema());
  WriteObjectSchema(j, FindGenesOptionsSchema());
  WriteObjectSchema(j, VariantRequestSchema());
  WriteObjectSchema(j, VariantInputSchema());
  WriteObjectSchema(j, VariantOptionsSchema());
  for (Task task : kAllTasks) WritePredictResponse(j, task);
  WriteFindGenesResponse(j);
  WriteVariantResponse(j);
  WritePredictMeta(j);
  WriteErrorSchemas(j);
  WriteJobSchemas(j);
  WriteInfoSchemas(j);
  j.EndObj();
  j.EndObj();

  j.EndObj();
  return j.Take();
}

}  // namespace dnaserve::gateway
