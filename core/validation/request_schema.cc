#include "core/validation/request_schema.h"

#include <map>

#include "common/variant_limits.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/genome_interval.h"
#include "core/validation/variant_request.h"

namespace dnaserve::core {
namespace {

std::string Bp(int64_t n) { return std::to_string(n) + " bp"; }

FieldSpec ThresholdField(std::string description) {
  FieldSpec f;
  f.name = "threshold";
  f.type = FieldType::kNumber;
  f.minimum = 0.0;
  f.maximum = 1.0;
  f.default_value = 0.5;
  f.description = std::move(description);
  return f;
}

std::string StrandRule(Task task) {
  switch (task) {
    case Task::kPromoter:
      return "Submit the gene's coding (sense) strand, 5'->3'.";
    case Task::kSplice:
      return "Submit the transcript's orientation; a wrong strand does not fail but returns sites "
             "at other positions, often with high scores.";
    case Task::kEnhancer:
      return "The dev/hk channels are strand-sensitive and the default model is trained on fly "
             "sequence; submit the coding strand.";
    case Task::kChromatin:
      return "Not strand-sensitive.";
    case Task::kAnnotation:
      return "Submit the plus-strand region; transcripts on both strands are found.";
    case Task::kExpression:
      return "Submit the gene-sense strand; the service neither finds the TSS nor "
             "reverse-complements.";
  }
  return "";
}

FieldSpec SequenceField(int64_t min_bp, const std::string& strand_rule) {
  FieldSpec f;
  f.name = "sequence";
  f.type = FieldType::kString;
  f.required = false;  // exactly one of sequence and interval (genome_interval.h)
  f.dna_sequence = true;
  f.min_length = min_bp;
  f.max_length = kMaxSequenceBp;
  f.description =
      "DNA sequence, case-insensitive A/C/G/T/N. ASCII whitespace (space, tab, CR, LF, VT, FF) "
      "is stripped before validation and the length bounds (" +
      Bp(min_bp) + " to " + Bp(kMaxSequenceBp) +
      ") are measured on the stripped string, so a client checking the raw string length can "
      "disagree with the server. A FASTA header line ('>') fails the alphabet check. Out-of-bound "
      "lengths are 422 validation_failed at loc [body, sequence], never 413. The service does not "
      "detect or flip strand. Exactly one of sequence and interval. " +
      strand_rule;
  return f;
}

FieldSpec SequenceField(Task task) {
  FieldSpec f = SequenceField(MinSequenceBp(task), StrandRule(task));
  if (task == Task::kExpression) {
    f.description +=
        " No padding or truncation: the scored window is the half-open slice "
        "[tss_index-4599, tss_index+4599).";
  }
  return f;
}

FieldSpec ModelIdField(std::string name, std::string description) {
  FieldSpec f;
  f.name = std::move(name);
  f.type = FieldType::kString;
  f.nullable = true;
  f.max_length = kMaxNameLength;
  f.description = std::move(description);
  return f;
}

FieldSpec ModelField() {
  return ModelIdField(
      "model",
      "Model id (see GET /v1/tasks/{task}/models and x-models on this operation). Omitted or null "
      "-> the task's default model. Top-level only, never inside options.");
}

constexpr std::string_view kRegionLabelRule =
    " With options.shift_coordinates it must be a region label chrom:start-end (1-based, "
    "inclusive; commas allowed in the numbers), e.g. chr1:1,000,001-1,250,000.";

FieldSpec SequenceNameField(bool region_label_rule) {
  FieldSpec f;
  f.name = "sequence_name";
  f.type = FieldType::kString;
  f.nullable = true;
  f.max_length = kMaxNameLength;
  f.default_value = std::string("sequence");
  f.description =
      "Name of the sequence, echoed back as data.input.sequence_name and used as the sequence id "
      "of text tracks.";
  if (region_label_rule) f.description += kRegionLabelRule;
  return f;
}

FieldSpec OptionsField(const ObjectSpec& options, bool required) {
  FieldSpec f;
  f.name = "options";
  f.type = FieldType::kObject;
  f.required = required;
  f.nullable = !required;
  f.object = &options;
  f.description =
      required ? "Task options (required)." : "Task options; omitted or null -> defaults.";
  return f;
}

FieldSpec BatchSizeField() {
  FieldSpec f;
  f.name = "batch_size";
  f.type = FieldType::kInteger;
  f.minimum = 1;
  f.maximum = 128;
  f.default_value = int64_t{8};
  f.description = "Windows per forward pass (1-128).";
  return f;
}

FieldSpec ShiftCoordinatesField() {
  FieldSpec f;
  f.name = "shift_coordinates";
  f.type = FieldType::kString;
  f.nullable = true;
  f.accepted_values = {"UCSC"};
  f.description =
      "Rebase output coordinates from a region label in sequence_name. Supported value: UCSC "
      "(case-insensitive): sequence_name must be chrom:start-end (1-based, inclusive); output "
      "coordinates are shifted by start-1 and the GFF3 seqid becomes chrom. Omitted or null "
      "-> coordinates relative to the submitted sequence.";
  return f;
}

FieldSpec DescriptionField(std::string description) {
  FieldSpec f;
  f.name = "description";
  f.type = FieldType::kString;
  f.required = true;
  f.min_length = 1;
  f.description = std::move(description);
  return f;
}

ObjectSpec MakeOptions(Task task) {
  ObjectSpec o;
  switch (task) {
    case Task::kPromoter:
      o.title = "PromoterOptions";
      o.fields.push_back(
          ThresholdField("Probability cutoff for calling a window a promoter (0-1)."));
      break;
    case Task::kSplice: {
      o.title = "SpliceOptions";
      o.fields.push_back(ThresholdField("Score cutoff for emitting a site (0-1)."));
      FieldSpec sites;
      sites.name = "site_types";
      sites.type = FieldType::kStringArray;
      sites.nullable = true;
      sites.item_values = {"donor", "acceptor"};
      sites.min_items = 1;
      sites.default_value = std::vector<std::string>{"donor", "acceptor"};
      sites.description =
          "Site types to report, a non-empty subset of donor and acceptor (repeats are ignored). "
          "Omitted or null -> both.";
      o.fields.push_back(std::move(sites));
      break;
    }
    case Task::kEnhancer:
      o.title = "EnhancerOptions";
      o.description = "Accepts no fields: send {} or omit options.";
      break;
    case Task::kChromatin:
      o.title = "ChromatinOptions";
      o.fields.push_back(ThresholdField("Only features scoring above this are returned (0-1)."));
      break;
    case Task::kAnnotation: {
      o.title = "AnnotationOptions";
      o.fields.push_back(BatchSizeField());
      o.fields.push_back(ShiftCoordinatesField());
      FieldSpec rc;
      rc.name = "reverse_complement";
      rc.type = FieldType::kBoolean;
      rc.default_value = true;
      rc.description =
          "Average each locus with its reverse complement; false = faster single pass.";
      o.fields.push_back(std::move(rc));
      break;
    }
    case Task::kExpression:
      o.title = "ExpressionOptions";
      o.fields.push_back(DescriptionField(
          "The experimental context: a training context's id (\"E066\"), its ontology CURIE "
          "(\"UBERON:0002107\"; GET /v1/tasks/expression/contexts lists both) or free text "
          "(\"adult liver\"), matched to the closest training context. Free text that matches "
          "none closely enough is answered with description_match.matched = false and the mean "
          "over all contexts."));
      break;
  }
  return o;
}

ObjectSpec MakeRequest(Task task, const ObjectSpec& options) {
  ObjectSpec o;
  std::string name(TaskName(task));
  name[0] = static_cast<char>(name[0] - 'a' + 'A');
  o.title = name + "PredictRequest";
  o.fields.push_back(SequenceField(task));
  o.fields.push_back(IntervalField(
      "The sequence's strand rule applies to the analysed strand: strand '-' analyses the "
      "reverse complement of the stretch."));
  o.exactly_one_of = {"sequence", "interval"};
  if (task == Task::kExpression) {
    o.description =
        "Expression request: these fields only; options and exactly one of sequence and "
        "interval are required.";
    FieldSpec tss;
    tss.name = "tss_index";
    tss.type = FieldType::kInteger;
    tss.nullable = true;
    tss.description =
        "0-based offset of the TSS into the whitespace-stripped sequence. Required unless the "
        "sequence is exactly 9,198 bp (then 4599). Must satisfy 4599 <= tss_index <= "
        "len(sequence) - 4599; violations (and a missing tss_index when required) are 422 at "
        "loc [body], never clamped.";
    o.fields.push_back(std::move(tss));
    o.fields.push_back(OptionsField(options, /*required=*/true));
    o.fields.push_back(SequenceNameField(task == Task::kAnnotation));
    o.fields.push_back(ModelField());
  } else {
    o.description = "Closed request body of the " + std::string(TaskName(task)) + " task.";
    o.fields.push_back(ModelField());
    o.fields.push_back(SequenceNameField(task == Task::kAnnotation));
    o.fields.push_back(OptionsField(options, /*required=*/false));
  }
  return o;
}

ObjectSpec MakeFindGenesOptions() {
  ObjectSpec o;
  o.title = "FindGenesOptions";
  o.fields.push_back(DescriptionField(
      "Experimental context applied to every found gene (model input of the expression stage; "
      "wording changes the predicted values). Missing or empty -> 422 validation_failed."));
  o.fields.push_back(ModelIdField(
      "annotation_model",
      "Annotation model id (GET /v1/tasks/annotation/models). Omitted or null -> the "
      "annotation task's default model."));
  o.fields.push_back(ModelIdField(
      "expression_model",
      "Expression model id (GET /v1/tasks/expression/models). Omitted or null -> the "
      "expression task's default model."));
  FieldSpec batch = BatchSizeField();
  batch.description = "Windows per forward pass of the annotation stage (1-128).";
  o.fields.push_back(std::move(batch));
  FieldSpec shift = ShiftCoordinatesField();
  shift.description +=
      " Applies to the annotation payload and to expression_predictions[].tss_position alike.";
  o.fields.push_back(std::move(shift));
  return o;
}

ObjectSpec MakeFindGenesRequest(const ObjectSpec& options) {
  ObjectSpec o;
  o.title = "FindGenesRequest";
  o.description =
      "Closed request body of the find-genes-and-predict-expression workflow: sequence or "
      "interval (exactly one), sequence_name and options; options is required. Models are "
      "chosen in options (annotation_model, expression_model); there is no top-level model.";
  o.fields.push_back(SequenceField(
      kFindGenesMinSequenceBp,
      "Submit the plus-strand region; transcripts on both strands are found and each gene's "
      "expression window is read on its own sense strand."));
  o.exactly_one_of = {"sequence", "interval"};
  o.fields.push_back(IntervalField("Transcripts on both strands are found either way; strand "
                                   "'-' analyses the reverse complement and maps positions back."));
  o.fields.push_back(SequenceNameField(/*region_label_rule=*/true));
  FieldSpec options_field = OptionsField(options, /*required=*/true);
  options_field.description = "Workflow options (required; options.description is required).";
  o.fields.push_back(std::move(options_field));
  return o;
}

ObjectSpec MakeVariantInput() {
  ObjectSpec o;
  o.title = "VariantInput";
  o.description =
      "Where the VCF is: a discriminated union on type; s3_object is the only kind today (more "
      "may be added).";
  FieldSpec type;
  type.name = "type";
  type.required = true;
  type.accepted_values = {std::string(kS3ObjectInput)};
  type.exact_values = true;
  type.description = "The input's kind: s3_object.";
  o.fields.push_back(std::move(type));
  FieldSpec uri;
  uri.name = "uri";
  uri.required = true;
  uri.min_length = static_cast<int64_t>(kMinS3UriLength);
  uri.max_length = static_cast<int64_t>(kMaxS3UriLength);
  uri.pattern = "^s3://[^/]+/.+";
  uri.description =
      "s3://bucket/key of one VCF object (uncompressed, bgzip or plain gzip) whose key ends .vcf, "
      ".vcf.gz or .vcf.bgz. The object store is the operator's; the service needs s3:GetObject "
      "on the object and s3:PutObject on its prefix (not s3:ListBucket). Checked before the job "
      "is accepted, each a 400 bad_request: a URI not of the form s3://bucket/key (this pattern, "
      "a valid bucket name), naming a prefix, a key without a VCF suffix, an object the service "
      "cannot read, an empty object or one over 2 GiB, a VCF that already carries GEX_* fields.";
  o.fields.push_back(std::move(uri));
  return o;
}

ObjectSpec MakeVariantOptions() {
  ObjectSpec o;
  o.title = "VariantOptions";
  FieldSpec build;
  build.name = "genome_build";
  build.required = true;
  build.accepted_values = {std::string(kGrch37)};
  build.exact_values = true;
  build.description =
      "Genome build of the VCF's positions; GRCh37 is the only value today (more may be added). "
      "A build this deployment has no start-site catalogue for is 400 bad_request.";
  o.fields.push_back(std::move(build));
  FieldSpec window;
  window.name = "window";
  window.type = FieldType::kInteger;
  window.minimum = 1;
  window.maximum = static_cast<double>(kMaxVariantWindowBp);
  window.default_value = kDefaultVariantWindowBp;
  window.description =
      "Maximum distance in bp between a start site and the variant's REF allele for the pair to "
      "be scored (1-100,000).";
  o.fields.push_back(std::move(window));
  FieldSpec tissues;
  tissues.name = "tissues";
  tissues.type = FieldType::kStringArray;
  tissues.min_items = 1;
  tissues.max_items = static_cast<int64_t>(kMaxVariantTissues);
  tissues.item_min_length = 1;
  tissues.items_as_sent = true;
  tissues.default_value = std::vector<std::string>{"heart", "liver", "brain"};
  tissues.description =
      "Experimental contexts, one scoring run and one log2 fold-change field in GEX_ANN each, in "
      "this order (1-16 non-empty strings). The wording is model input and conditions the "
      "prediction.";
  o.fields.push_back(std::move(tissues));
  FieldSpec genes;
  genes.name = "genes";
  genes.type = FieldType::kStringArray;
  genes.nullable = true;
  genes.min_items = 1;
  genes.max_items = kMaxGenePanelSize;
  genes.items_as_sent = true;
  genes.description =
      "Gene panel: HGNC symbols (case-insensitive) or Ensembl gene ids with or without a version "
      "suffix, 1-1,000. Omitted or null -> every nearby gene is scored; an empty list is 422. An "
      "identifier matching no catalogue gene is 400 bad_request naming every such identifier.";
  o.fields.push_back(std::move(genes));
  return o;
}

ObjectSpec MakeVariantRequest(const ObjectSpec& input, const ObjectSpec& options) {
  ObjectSpec o;
  o.title = "VariantRequest";
  o.description =
      "Closed request body of the genomic-variant-interpretation workflow: input and options are "
      "required, client_ref is optional. There is no DNA sequence in the request.";
  FieldSpec input_field;
  input_field.name = "input";
  input_field.type = FieldType::kObject;
  input_field.required = true;
  input_field.object = &input;
  input_field.description = "The VCF to annotate.";
  o.fields.push_back(std::move(input_field));
  FieldSpec ref;
  ref.name = "client_ref";
  ref.nullable = true;
  ref.max_length = kMaxNameLength;
  ref.description =
      "Opaque caller reference (<= 128 characters), echoed back as data.client_ref. It takes part "
      "in job identity: change it to run a case that already succeeded again.";
  o.fields.push_back(std::move(ref));
  FieldSpec options_field = OptionsField(options, /*required=*/true);
  options_field.description = "Workflow options (required; options.genome_build is required).";
  o.fields.push_back(std::move(options_field));
  return o;
}

struct TaskSchemas {
  std::map<Task, ObjectSpec> options;
  std::map<Task, ObjectSpec> requests;
  ObjectSpec find_genes_options;
  ObjectSpec find_genes_request;
  ObjectSpec variant_input;
  ObjectSpec variant_options;
  ObjectSpec variant_request;
};

const TaskSchemas& Schemas() {
  // Built once; the std::map nodes never move, so the options pointers stay valid.
  static const TaskSchemas* const schemas = [] {
    auto* s = new TaskSchemas;
    for (Task task : kAllTasks) s->options.emplace(task, MakeOptions(task));
    for (Task task : kAllTasks) s->requests.emplace(task, MakeRequest(task, s->options.at(task)));
    s->find_genes_options = MakeFindGenesOptions();
    s->find_genes_request = MakeFindGenesRequest(s->find_genes_options);
    s->variant_input = MakeVariantInput();
    s->variant_options = MakeVariantOptions();
    s->variant_request = MakeVariantRequest(s->variant_input, s->variant_options);
    return s;
  }();
  return *schemas;
}

}  // namespace

const FieldSpec* ObjectSpec::Find(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const ObjectSpec& PredictRequestSchema(Task task) { return Schemas().requests.at(task); }
const ObjectSpec& PredictOptionsSchema(Task task) { return Schemas().options.at(task); }
const ObjectSpec& FindGenesRequestSchema() { return Schemas().find_genes_request; }
const ObjectSpec& FindGenesOptionsSchema() { return Schemas().find_genes_options; }
const ObjectSpec& VariantRequestSchema() { return Schemas().variant_request; }
const ObjectSpec& VariantInputSchema() { return Schemas().variant_input; }
const ObjectSpec& VariantOptionsSchema() { return Schemas().variant_options; }

double DefaultNumber(const FieldSpec& field) {
  if (const auto* d = std::get_if<double>(&field.default_value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&field.default_value)) return static_cast<double>(*i);
  return 0.0;
}

int64_t DefaultInteger(const FieldSpec& field) {
  if (const auto* i = std::get_if<int64_t>(&field.default_value)) return *i;
  return 0;
}

bool DefaultBoolean(const FieldSpec& field) {
  if (const auto* b = std::get_if<bool>(&field.default_value)) return *b;
  return false;
}

std::string DefaultString(const FieldSpec& field) {
  if (const auto* s = std::get_if<std::string>(&field.default_value)) return *s;
  return "";
}

std::vector<std::string> DefaultStrings(const FieldSpec& field) {
  if (const auto* v = std::get_if<std::vector<std::string>>(&field.default_value)) return *v;
  return {};
}

}  // namespace dnaserve::core
