#include "worker/manifest/manifest.h"

#include <dirent.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <sys/stat.h>

#include <algorithm>
#include <sstream>

#include "common/digest.h"
#include "common/file_text.h"
#include "worker/manifest/variant_background.h"
#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker {
namespace {

constexpr int64_t kMaxContextBp = 1000000;
constexpr int64_t kMaxRowsPerPass = 4096;  // far above any batch a worker forms
constexpr int kMaxTextTokens = 4096;

Status Invalid(const std::string& message) {
  return Status(ErrorCode::kInternal, "manifest.json: " + message);
}

bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

bool IsValidId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return id.front() != '.';
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A decoder table the manifest names under decoder.`key` (a file of the package; empty: none),
// loaded by `load` into *out. Missing or malformed, the package does not load.
template <typename Table, typename Load>
Status LoadDecoderTable(const std::string& package_dir, const std::string& file, const char* key,
                        const char* what, Load load, std::shared_ptr<const Table>* out) {
  if (file.empty()) return Status::Ok();
  const std::string path = package_dir + "/" + file;
  if (!FileExists(path)) {
    return Invalid(std::string(what) + " '" + file + "' is missing from the package");
  }
  auto table = load(path);
  if (!table.ok()) return Invalid("decoder." + std::string(key) + ": " + table.status().message());
  *out = std::make_shared<const Table>(std::move(table).value());
  return Status::Ok();
}

bool DirExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Typed accessors that turn every schema violation into one clear sentence.
class Fields {
 public:
  explicit Fields(const rapidjson::Value& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  bool Has(const char* key) const { return object_.HasMember(key); }
  bool IsNull(const char* key) const { return Has(key) && object_[key].IsNull(); }
  const rapidjson::Value& Value(const char* key) const { return object_[key]; }

  Status String(const char* key, std::string* out, bool required = true) const {
    if (!Has(key)) return required ? Missing(key) : Status::Ok();
    const auto& v = object_[key];
    if (!v.IsString() || v.GetStringLength() == 0) return Wrong(key, "a non-empty string");
    *out = std::string(v.GetString(), v.GetStringLength());
    return Status::Ok();
  }

  Status Int(const char* key, int64_t* out, int64_t min, int64_t max, bool required = true) const {
    if (!Has(key)) return required ? Missing(key) : Status::Ok();
    const auto& v = object_[key];
    if (!v.IsInt64() || v.GetInt64() < min || v.GetInt64() > max) {
      return Wrong(key, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    *out = v.GetInt64();
    return Status::Ok();
  }

  Status Number(const char* key, double* out, double min, double max) const {
    if (!Has(key)) return Status::Ok();  // every number here is optional
    const auto& v = object_[key];
    if (!v.IsNumber() || !(v.GetDouble() >= min && v.GetDouble() <= max)) {
      std::ostringstream range;
      range << "a number in [" << min << ", " << max << "]";
      return Wrong(key, range.str());
    }
    *out = v.GetDouble();
    return Status::Ok();
  }

  Status Bool(const char* key, bool* out) const {
    if (!Has(key)) return Missing(key);
    if (!object_[key].IsBool()) return Wrong(key, "true or false");
    *out = object_[key].GetBool();
    return Status::Ok();
  }

  Status StringList(const char* key, std::vector<std::string>* out, bool required = true) const {
    if (!Has(key)) return required ? Missing(key) : Status::Ok();
    const auto& v = object_[key];
    if (!v.IsArray() || v.Empty()) return Wrong(key, "a non-empty array of strings");
    out->clear();
    for (const auto& item : v.GetArray()) {
      if (!item.IsString() || item.GetStringLength() == 0) {
        return Wrong(key, "a non-empty array of non-empty strings");
      }
      out->emplace_back(item.GetString(), item.GetStringLength());
    }
    return Status::Ok();
  }

  // Rejects keys outside `allowed`, so a misspelt optional field is an error, not a silent default.
  Status OnlyKeys(std::initializer_list<const char*> allowed) const {
    for (auto it = object_.MemberBegin(); it != object_.MemberEnd(); ++it) {
      std::string name(it->name.GetString(), it->name.GetStringLength());
      bool known =
          std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return name == a; });
      if (!known) return Invalid("unknown field '" + prefix_ + name + "'");
    }
    return Status::Ok();
  }

  Status Missing(const char* key) const {
    return Invalid("missing required field '" + prefix_ + key + "'");
  }
  Status Wrong(const char* key, const std::string& expected) const {
    return Invalid("'" + prefix_ + key + "' must be " + expected);
  }

 private:
  const rapidjson::Value& object_;
  std::string prefix_;
};

// "tokenizer": {"type": "char", "vocab"?}
//            | {"type": "kmer", "k", "stride", "vocab"?, "convention"?}
//            | {"type": "bpe", "file"}
// Only the schema is checked here; the files are read (and their alphabet coverage checked) when
// the model loads, so that a broken tokenizer answers model_loading like broken weights do.
Status ParseTokenizer(const rapidjson::Value& value, TokenizerSpec* out) {
  if (!value.IsObject()) return Invalid("'tokenizer' must be an object");
  Fields f(value, "tokenizer.");
  DNASERVE_RETURN_IF_ERROR(f.OnlyKeys({"type", "k", "stride", "vocab", "convention", "file"}));
  std::string type;
  DNASERVE_RETURN_IF_ERROR(f.String("type", &type));
  DNASERVE_RETURN_IF_ERROR(f.String("vocab", &out->vocab_file, /*required=*/false));
  if (!out->vocab_file.empty() && !IsPlainFileName(out->vocab_file)) {
    return f.Wrong("vocab", "a file name inside the package");
  }
  auto only_for = [&](const char* key, const char* types) -> Status {
    if (!f.Has(key)) return Status::Ok();
    return Invalid("'tokenizer." + std::string(key) + "' is only valid for type " + types);
  };
  if (type == "char") {
    if (f.Has("k") || f.Has("stride")) return Invalid("'tokenizer' of type char takes no k/stride");
    DNASERVE_RETURN_IF_ERROR(only_for("convention", "kmer"));
    DNASERVE_RETURN_IF_ERROR(only_for("file", "bpe"));
    out->type = TokenizerType::kChar;
    out->k = 1;
    out->stride = 1;
    return Status::Ok();
  }
  if (type == "bpe") {
    if (f.Has("k") || f.Has("stride")) return Invalid("'tokenizer' of type bpe takes no k/stride");
    DNASERVE_RETURN_IF_ERROR(only_for("vocab", "char or kmer (bpe reads its vocab from 'file')"));
    DNASERVE_RETURN_IF_ERROR(only_for("convention", "kmer"));
    DNASERVE_RETURN_IF_ERROR(f.String("file", &out->file));
    if (!IsPlainFileName(out->file)) return f.Wrong("file", "a file name inside the package");
    out->type = TokenizerType::kBpe;
    out->k = 1;
    out->stride = 1;
    return Status::Ok();
  }
  if (type != "kmer") return f.Wrong("type", "\"char\", \"kmer\" or \"bpe\"");
  DNASERVE_RETURN_IF_ERROR(only_for("file", "bpe"));
  out->type = TokenizerType::kKmer;
  int64_t k = 0;
  int64_t stride = 0;
  DNASERVE_RETURN_IF_ERROR(f.Int("k", &k, 1, 12));
  DNASERVE_RETURN_IF_ERROR(f.Int("stride", &stride, 1, 12));
  if (stride > k) return Invalid("'tokenizer.stride' must not exceed 'tokenizer.k'");
  out->k = static_cast<int>(k);
  out->stride = static_cast<int>(stride);
  std::string convention = "builtin";
  DNASERVE_RETURN_IF_ERROR(f.String("convention", &convention, /*required=*/false));
  if (convention == "builtin") {
    out->convention = KmerConvention::kBuiltin;
  } else if (convention == "dnabert") {
    out->convention = KmerConvention::kDnabert;
  } else if (convention == "nucleotide_transformer") {
    out->convention = KmerConvention::kNucleotideTransformer;
    if (stride != k) {
      return Invalid(
          "'tokenizer.stride' must equal 'tokenizer.k' for the nucleotide_transformer convention "
          "(non-overlapping k-mers)");
    }
  } else {
    return f.Wrong("convention", "\"builtin\", \"dnabert\" or \"nucleotide_transformer\"");
  }
  if (out->convention != KmerConvention::kBuiltin && out->vocab_file.empty()) {
    // Their ids are whatever the model was trained with: guessing them would run silently wrong.
    return Invalid("'tokenizer.vocab' is required for the " + convention +
                   " convention (the model's vocab.txt gives the ids)");
  }
  return Status::Ok();
}

Status RequireLabels(const ModelManifest& m, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::find(m.output_labels.begin(), m.output_labels.end(), name) == m.output_labels.end()) {
      return Invalid("'output_labels' of a " + std::string(TaskName(m.task)) +
                     " model must include \"" + name + "\"");
    }
  }
  return Status::Ok();
}

// flank_bp / output_window_bp: per-base models that see real sequence around the bases they
// score (OpenSpliceAI: 5,000 scored + 5,000 flank on each side = 15,000 input).
Status ParseFlank(const Fields& f, ModelManifest* m) {
  m->flank_bp = 0;
  m->output_window_bp = m->context_window_bp;
  const bool flank = f.Has("flank_bp");
  const bool output = f.Has("output_window_bp");
  if (!flank && !output) return Status::Ok();
  if (flank != output) {
    return Invalid("'flank_bp' and 'output_window_bp' must be given together");
  }
  if (m->task != Task::kSplice) {
    return Invalid("'flank_bp' and 'output_window_bp' are only valid for splice models");
  }
  if (m->tokenizer.type != TokenizerType::kChar) {
    return Invalid("flanked models need the char tokenizer (one output per scored base)");
  }
  DNASERVE_RETURN_IF_ERROR(f.Int("flank_bp", &m->flank_bp, 1, kMaxContextBp));
  DNASERVE_RETURN_IF_ERROR(f.Int("output_window_bp", &m->output_window_bp, 1, kMaxContextBp));
  if (m->output_window_bp + 2 * m->flank_bp != m->context_window_bp) {
    return Invalid("'context_window_bp' (" + std::to_string(m->context_window_bp) +
                   ") must equal 'output_window_bp' + 2 * 'flank_bp' (" +
                   std::to_string(m->output_window_bp + 2 * m->flank_bp) + ")");
  }
  return Status::Ok();
}

// "decoder": the annotation decoder's costs for this model's outputs (DecodeOptions), each
// optional; absent ones keep their defaults.
Status ParseDecoder(const rapidjson::Value& value, DecodeOptions* out) {
  if (!value.IsObject()) return Invalid("'decoder' must be an object");
  Fields f(value, "decoder.");
  DNASERVE_RETURN_IF_ERROR(f.OnlyKeys({"emission_weight", "start_cost", "splice_cost",
                                       "terminal_weight", "site_weight", "site_pass_weight",
                                       "cds_threshold", "min_transcript_bp", "min_exon_mean",
                                       "min_terminal_exon_bp", "exon_chain", "site_min",
                                       "terminal_block_bp", "terminal_min", "length_weight",
                                       "exon_weight", "max_intron_bp", "max_exon_bp",
                                       "intron_log_mean", "intron_log_sd", "first_exon_log_mean",
                                       "first_exon_log_sd", "internal_exon_log_mean",
                                       "internal_exon_log_sd", "last_exon_log_mean",
                                       "last_exon_log_sd", "single_exon_log_mean",
                                       "single_exon_log_sd", "orf_cds", "min_orf_bp",
                                       "alternative_starts", "alternative_start_min",
                                       "alternative_start_spacing_bp", "alternative_span_bp",
                                       "coding_model", "coding_weight", "splice_signal",
                                       "signal_weight"}));
  constexpr double kMaxCost = 1000.0;
  DNASERVE_RETURN_IF_ERROR(f.Number("emission_weight", &out->emission_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("start_cost", &out->start_cost, 0.0, kMaxCost));
  DNASERVE_RETURN_IF_ERROR(f.Number("splice_cost", &out->splice_cost, 0.0, kMaxCost));
  DNASERVE_RETURN_IF_ERROR(f.Number("terminal_weight", &out->terminal_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("site_weight", &out->site_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("site_pass_weight", &out->site_pass_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("cds_threshold", &out->cds_threshold, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("min_exon_mean", &out->min_exon_mean, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(
      f.Int("min_transcript_bp", &out->min_transcript_bp, 0, kMaxContextBp, /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(f.Int("min_terminal_exon_bp", &out->min_terminal_exon_bp, 0,
                                 kMaxContextBp, /*required=*/false));
  // The exon-chain decoder's settings (DecodeOptions::exon_chain and what follows it).
  if (f.Has("exon_chain")) DNASERVE_RETURN_IF_ERROR(f.Bool("exon_chain", &out->exon_chain));
  if (f.Has("orf_cds")) DNASERVE_RETURN_IF_ERROR(f.Bool("orf_cds", &out->orf_cds));
  if (f.Has("alternative_starts")) {
    DNASERVE_RETURN_IF_ERROR(f.Bool("alternative_starts", &out->alternative_starts));
  }
  DNASERVE_RETURN_IF_ERROR(
      f.Number("alternative_start_min", &out->alternative_start_min, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("site_min", &out->site_min, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("terminal_min", &out->terminal_min, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("length_weight", &out->length_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.Number("exon_weight", &out->exon_weight, 0.0, 100.0));
  constexpr int64_t kMaxSegmentBp = 10'000'000;
  DNASERVE_RETURN_IF_ERROR(f.Int("terminal_block_bp", &out->terminal_block_bp, 1, kMaxSegmentBp,
                                 /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(
      f.Int("max_intron_bp", &out->max_intron_bp, 1, kMaxSegmentBp, /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(
      f.Int("max_exon_bp", &out->max_exon_bp, 1, kMaxSegmentBp, /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(
      f.Int("min_orf_bp", &out->min_orf_bp, 0, kMaxSegmentBp, /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(f.Int("alternative_start_spacing_bp", &out->alternative_start_spacing_bp,
                                 0, kMaxSegmentBp, /*required=*/false));
  DNASERVE_RETURN_IF_ERROR(f.Int("alternative_span_bp", &out->alternative_span_bp, 1,
                                 kMaxSegmentBp, /*required=*/false));
  // The coding content sensor: a table file of the package (LoadManifest reads it).
  DNASERVE_RETURN_IF_ERROR(f.Number("coding_weight", &out->coding_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.String("coding_model", &out->coding_model, /*required=*/false));
  if (!out->coding_model.empty() && !IsPlainFileName(out->coding_model)) {
    return f.Wrong("coding_model", "a file name inside the package");
  }
  if (out->coding_weight > 0 && out->coding_model.empty()) {
    return Invalid("'decoder.coding_weight' > 0 needs 'decoder.coding_model'");
  }
  // The splice-site signal sensors: a table file of the package (LoadManifest reads it).
  DNASERVE_RETURN_IF_ERROR(f.Number("signal_weight", &out->signal_weight, 0.0, 100.0));
  DNASERVE_RETURN_IF_ERROR(f.String("splice_signal", &out->splice_signal, /*required=*/false));
  if (!out->splice_signal.empty() && !IsPlainFileName(out->splice_signal)) {
    return f.Wrong("splice_signal", "a file name inside the package");
  }
  if (out->signal_weight > 0 && out->splice_signal.empty()) {
    return Invalid("'decoder.signal_weight' > 0 needs 'decoder.splice_signal'");
  }
  // Log-length priors: means of ln(bp), standard deviations strictly positive.
  constexpr double kMaxLogLength = 20.0, kMinLogSd = 0.01;
  for (auto [key, target] : {std::pair{"intron_log_mean", &out->intron_log_mean},
                             {"first_exon_log_mean", &out->first_exon_log_mean},
                             {"internal_exon_log_mean", &out->internal_exon_log_mean},
                             {"last_exon_log_mean", &out->last_exon_log_mean},
                             {"single_exon_log_mean", &out->single_exon_log_mean}}) {
    DNASERVE_RETURN_IF_ERROR(f.Number(key, target, 0.0, kMaxLogLength));
  }
  for (auto [key, target] : {std::pair{"intron_log_sd", &out->intron_log_sd},
                             {"first_exon_log_sd", &out->first_exon_log_sd},
                             {"internal_exon_log_sd", &out->internal_exon_log_sd},
                             {"last_exon_log_sd", &out->last_exon_log_sd},
                             {"single_exon_log_sd", &out->single_exon_log_sd}}) {
    DNASERVE_RETURN_IF_ERROR(f.Number(key, target, kMinLogSd, kMaxLogLength));
  }
  return Status::Ok();
}

// The rules that depend on the task: window geometry and the outputs the worker decodes.
Status ValidateForTask(const Fields& f, ModelManifest* m) {
  DNASERVE_RETURN_IF_ERROR(ParseFlank(f, m));
  const bool overlapping = m->task == Task::kPromoter || m->task == Task::kChromatin;
  if (overlapping) {
    DNASERVE_RETURN_IF_ERROR(f.Int("stride_bp", &m->stride_bp, 1, m->context_window_bp));
  } else {
    // Windows step by the bases they score: the whole context, or its centre for flanked models.
    m->stride_bp = m->output_window_bp;
    int64_t stride = 0;
    DNASERVE_RETURN_IF_ERROR(f.Int("stride_bp", &stride, 1, kMaxContextBp, /*required=*/false));
    if (f.Has("stride_bp") && stride != m->stride_bp) {
      return Invalid("'stride_bp' of a " + std::string(TaskName(m->task)) + " model must equal " +
                     (m->flank_bp > 0 ? "'output_window_bp' (flanked windows)"
                                      : "'context_window_bp' (non-overlapping windows)"));
    }
  }
  if (m->task != Task::kAnnotation && f.Has("transcript_types")) {
    return Invalid("'transcript_types' is only valid for annotation models");
  }
  if (m->task != Task::kAnnotation && f.Has("decoder")) {
    return Invalid("'decoder' is only valid for annotation models");
  }
  if (m->task != Task::kAnnotation && f.Has("strand_complete_labels")) {
    return Invalid("'strand_complete_labels' is only valid for annotation models");
  }
  if (m->task != Task::kAnnotation && f.Has("neighbour_bp")) {
    return Invalid("'neighbour_bp' is only valid for annotation models");
  }
  if (m->task != Task::kExpression && f.Has("description_contexts")) {
    return Invalid("'description_contexts' is only valid for expression models");
  }
  if (m->task != Task::kExpression && f.Has("text_tokenizer")) {
    return Invalid("'text_tokenizer' is only valid for expression models");
  }
  if (m->context_window_bp < m->tokenizer.k) {
    return Invalid("'context_window_bp' is shorter than one token");
  }
  switch (m->task) {
    case Task::kPromoter:
      if (m->output_labels.size() != 1) {
        return Invalid("'output_labels' of a promoter model must hold exactly one label");
      }
      break;
    case Task::kSplice:
      DNASERVE_RETURN_IF_ERROR(RequireLabels(*m, {"donor", "acceptor"}));
      break;
    case Task::kEnhancer:
      DNASERVE_RETURN_IF_ERROR(RequireLabels(*m, {"dev", "hk"}));
      break;
    case Task::kChromatin:
      break;
    case Task::kAnnotation: {
      if (m->tokenizer.type != TokenizerType::kChar) {
        return Invalid("annotation models need the char tokenizer (one output per base)");
      }
      auto channels = ResolveAnnotationChannels(m->output_labels);
      if (!channels.ok()) return Invalid(channels.status().message());
      DNASERVE_RETURN_IF_ERROR(f.StringList("transcript_types", &m->transcript_types));
      if (f.Has("decoder")) DNASERVE_RETURN_IF_ERROR(ParseDecoder(f.Value("decoder"), &m->decoder));
      if (f.Has("strand_complete_labels")) {
        DNASERVE_RETURN_IF_ERROR(
            f.StringList("strand_complete_labels", &m->strand_complete_labels));
        const Status listed =
            CheckStrandCompleteLabels(m->strand_complete_labels, m->output_labels);
        if (!listed.ok()) return Invalid(listed.message());
      }
      if (f.Has("neighbour_bp") && m->strand_complete_labels.empty()) {
        return Invalid("'neighbour_bp' needs 'strand_complete_labels' (it is their model's "
                       "third input)");
      }
      DNASERVE_RETURN_IF_ERROR(
          f.Int("neighbour_bp", &m->neighbour_bp, 1, kMaxContextBp, /*required=*/false));
      break;
    }
    case Task::kExpression: {
      if (!m->trained_window_bp || *m->trained_window_bp != m->context_window_bp) {
        return Invalid("'trained_window_bp' of an expression model must equal 'context_window_bp'");
      }
      if (m->output_labels.size() != 1) {
        return Invalid("'output_labels' of an expression model must hold exactly one label");
      }
      if (!f.Has("text_tokenizer")) return f.Missing("text_tokenizer");
      break;
    }
  }
  return Status::Ok();
}

// description_contexts.free_text: {"method": "content-trigram-cosine", "threshold",
// "generic_words"} (scripts/training/expression_ontology.py writes it).
StatusOr<FreeTextRule> ParseFreeTextRule(const rapidjson::Value& value) {
  if (!value.IsObject()) return Invalid("'description_contexts.free_text' must be an object");
  Fields f(value, "description_contexts.free_text.");
  DNASERVE_RETURN_IF_ERROR(f.OnlyKeys({"method", "threshold", "generic_words"}));
  std::string method;
  DNASERVE_RETURN_IF_ERROR(f.String("method", &method));
  if (method != "content-trigram-cosine") return f.Wrong("method", "\"content-trigram-cosine\"");
  FreeTextRule rule;
  if (!f.Has("threshold")) return f.Missing("threshold");
  DNASERVE_RETURN_IF_ERROR(f.Number("threshold", &rule.threshold, 0.0, 1.0));
  DNASERVE_RETURN_IF_ERROR(f.StringList("generic_words", &rule.generic_words));
  return rule;
}

StatusOr<DescriptionContexts> ParseDescriptionContexts(const rapidjson::Value& value) {
  if (!value.IsObject()) return Invalid("'description_contexts' must be an object");
  Fields f(value, "description_contexts.");
  DNASERVE_RETURN_IF_ERROR(f.OnlyKeys({"method", "threshold", "contexts", "free_text"}));
  DescriptionContexts out;
  DNASERVE_RETURN_IF_ERROR(f.String("method", &out.method));
  if (out.method != "char-trigram-cosine") return f.Wrong("method", "\"char-trigram-cosine\"");
  if (!f.Has("threshold")) return f.Missing("threshold");
  DNASERVE_RETURN_IF_ERROR(f.Number("threshold", &out.threshold, 0.0, 1.0));
  if (!f.Has("contexts") || !value["contexts"].IsArray() || value["contexts"].Empty()) {
    return f.Wrong("contexts", "a non-empty array of {id, name, wordings}");
  }
  for (const auto& item : value["contexts"].GetArray()) {
    if (!item.IsObject()) return f.Wrong("contexts", "an array of objects");
    Fields c(item, "description_contexts.contexts[].");
    DNASERVE_RETURN_IF_ERROR(
        c.OnlyKeys({"id", "name", "wordings", "curie", "label", "group", "synonyms"}));
    DescriptionContext context;
    DNASERVE_RETURN_IF_ERROR(c.String("id", &context.id));
    DNASERVE_RETURN_IF_ERROR(c.String("name", &context.name));
    DNASERVE_RETURN_IF_ERROR(c.StringList("wordings", &context.wordings));
    DNASERVE_RETURN_IF_ERROR(c.String("curie", &context.curie, /*required=*/false));
    DNASERVE_RETURN_IF_ERROR(c.String("label", &context.label, /*required=*/false));
    DNASERVE_RETURN_IF_ERROR(c.String("group", &context.group, /*required=*/false));
    DNASERVE_RETURN_IF_ERROR(c.StringList("synonyms", &context.synonyms, /*required=*/false));
    out.contexts.push_back(std::move(context));
  }
  if (f.Has("free_text")) {
    auto rule = ParseFreeTextRule(value["free_text"]);
    if (!rule.ok()) return rule.status();
    out.free_text = std::move(*rule);
  }
  return out;
}

}  // namespace

StatusOr<ModelManifest> ParseManifest(std::string_view json, std::string_view expected_id) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return Invalid(std::string("not valid JSON (") +
                   rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
                   std::to_string(doc.GetErrorOffset()) + ")");
  }
  if (!doc.IsObject()) return Invalid("the top level must be an object");
  Fields f(doc);
  DNASERVE_RETURN_IF_ERROR(
      f.OnlyKeys({"format_version", "id", "task", "description", "is_default", "tokenizer",
                  "context_window_bp", "trained_window_bp", "stride_bp", "flank_bp",
                  "output_window_bp", "output_labels", "transcript_types", "decoder",
                  "strand_complete_labels", "neighbour_bp",
                  "text_tokenizer", "description_contexts", "trained", "seed", "weights",
                  "model_card", "precision", "batch_rows_per_pass",
                  "variant_background"}));

  ModelManifest m;
  int64_t version = 0;
  DNASERVE_RETURN_IF_ERROR(f.Int("format_version", &version, 1, 1000000));
  if (version != kManifestFormatVersion) {
    return Invalid("unsupported format_version " + std::to_string(version) +
                   " (this worker reads " + std::to_string(kManifestFormatVersion) + ")");
  }
  m.format_version = static_cast<int>(version);

  DNASERVE_RETURN_IF_ERROR(f.String("id", &m.id));
  if (!IsValidId(m.id)) {
    return Invalid("'id' must be 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (!expected_id.empty() && m.id != expected_id) {
    return Invalid("'id' \"" + m.id + "\" does not match the package directory name \"" +
                   std::string(expected_id) + "\"");
  }
  std::string task_name;
  DNASERVE_RETURN_IF_ERROR(f.String("task", &task_name));
  auto task = TaskFromName(task_name);
  if (!task) {
    return Invalid("'task' \"" + task_name +
                   "\" is not one of promoter, splice, enhancer, chromatin, annotation, "
                   "expression");
  }
  m.task = *task;
  DNASERVE_RETURN_IF_ERROR(f.String("description", &m.description));
  DNASERVE_RETURN_IF_ERROR(f.Bool("is_default", &m.is_default));
  if (!f.Has("tokenizer")) return f.Missing("tokenizer");
  DNASERVE_RETURN_IF_ERROR(ParseTokenizer(doc["tokenizer"], &m.tokenizer));
  DNASERVE_RETURN_IF_ERROR(f.Int("context_window_bp", &m.context_window_bp, 1, kMaxContextBp));
  if (!f.Has("trained_window_bp")) return f.Missing("trained_window_bp");
  if (!f.IsNull("trained_window_bp")) {
    int64_t trained = 0;
    DNASERVE_RETURN_IF_ERROR(f.Int("trained_window_bp", &trained, 1, kMaxContextBp));
    m.trained_window_bp = trained;
  }
  DNASERVE_RETURN_IF_ERROR(f.StringList("output_labels", &m.output_labels));
  DNASERVE_RETURN_IF_ERROR(f.Bool("trained", &m.trained));
  if (f.Has("seed")) {
    int64_t seed = 0;
    DNASERVE_RETURN_IF_ERROR(f.Int("seed", &seed, 0, INT64_MAX));
    m.seed = seed;
  }
  if (f.Has("precision")) {
    // Named with the package: a worker serving many packages logs which one it refused.
    const auto& value = doc["precision"];
    std::string name = value.IsString() ? value.GetString() : "";
    if (!PrecisionFromName(name)) {
      return Invalid("'precision' of package '" + m.id +
                     "' must be one of \"fp32\", \"bf16\", \"int8\"" +
                     (name.empty() ? std::string() : " (got \"" + name + "\")"));
    }
    m.precision = *PrecisionFromName(name);
  }
  if (f.Has("batch_rows_per_pass")) {
    int64_t rows = 0;
    DNASERVE_RETURN_IF_ERROR(f.Int("batch_rows_per_pass", &rows, 0, kMaxRowsPerPass));
    m.batch_rows_per_pass = rows;
  }
  DNASERVE_RETURN_IF_ERROR(f.String("weights", &m.weights_file));
  if (!IsPlainFileName(m.weights_file)) return f.Wrong("weights", "a file name inside the package");
  DNASERVE_RETURN_IF_ERROR(f.String("model_card", &m.model_card_file));
  if (!IsPlainFileName(m.model_card_file)) {
    return f.Wrong("model_card", "a file name inside the package");
  }
  if (f.Has("text_tokenizer")) {
    const auto& t = doc["text_tokenizer"];
    if (!t.IsObject()) return Invalid("'text_tokenizer' must be an object");
    Fields tf(t, "text_tokenizer.");
    DNASERVE_RETURN_IF_ERROR(tf.OnlyKeys({"type", "max_tokens"}));
    std::string type;
    DNASERVE_RETURN_IF_ERROR(tf.String("type", &type));
    if (type != "bytes") return tf.Wrong("type", "\"bytes\"");
    int64_t max_tokens = 0;
    DNASERVE_RETURN_IF_ERROR(tf.Int("max_tokens", &max_tokens, 1, kMaxTextTokens));
    m.text_tokenizer = TextTokenizerSpec{static_cast<int>(max_tokens)};
  }
  if (f.Has("description_contexts")) {
    auto contexts = ParseDescriptionContexts(doc["description_contexts"]);
    if (!contexts.ok()) return contexts.status();
    m.description_contexts = std::move(contexts).value();
  }
  if (f.Has("variant_background")) {  // checked here; read by LoadPackageBackground
    auto background = ParseVariantBackgroundEntry(doc["variant_background"]);
    if (!background.ok()) return background.status();
  }
  DNASERVE_RETURN_IF_ERROR(ValidateForTask(f, &m));
  return m;
}

StatusOr<ModelManifest> LoadManifest(const std::string& package_dir) {
  std::string path = package_dir + "/manifest.json";
  auto text = ReadFileText(path);
  if (!text) return Status(ErrorCode::kInternal, "manifest.json: cannot be read");
  std::string dir_name = package_dir.substr(package_dir.find_last_of('/') + 1);
  auto parsed = ParseManifest(*text, dir_name);
  if (!parsed.ok()) return parsed.status();
  ModelManifest m = std::move(parsed).value();
  m.package_dir = package_dir;
  if (!FileExists(m.WeightsPath())) {
    return Invalid("weights file '" + m.weights_file + "' is missing from the package");
  }
  if (!FileExists(package_dir + "/" + m.model_card_file)) {
    return Invalid("model card '" + m.model_card_file + "' is missing from the package");
  }
  if (!m.tokenizer.vocab_file.empty() && !FileExists(package_dir + "/" + m.tokenizer.vocab_file)) {
    return Invalid("tokenizer vocab '" + m.tokenizer.vocab_file + "' is missing from the package");
  }
  if (!m.tokenizer.file.empty() && !FileExists(package_dir + "/" + m.tokenizer.file)) {
    return Invalid("tokenizer file '" + m.tokenizer.file + "' is missing from the package");
  }
  DNASERVE_RETURN_IF_ERROR(LoadDecoderTable(package_dir, m.decoder.coding_model, "coding_model",
                                            "coding model", LoadCodingModel, &m.decoder.coding));
  DNASERVE_RETURN_IF_ERROR(LoadDecoderTable(package_dir, m.decoder.splice_signal, "splice_signal",
                                            "splice signal", LoadSpliceSignal, &m.decoder.signal));
  // Hashed once here, so ListModels never touches the disk; streamed, because weights of a
  // transformer-size package are hundreds of MB to GB and must not be held twice at load.
  IncrementalDigest digest(DigestAlgorithm::kSha256);
  digest.Update(*text);
  if (!digest.UpdateFromFile(m.WeightsPath())) {
    return Invalid("weights file '" + m.weights_file + "' cannot be read");
  }
  // The background moves published quantiles, so a package with another one is another package.
  auto background = LoadPackageBackground(package_dir, *text);
  if (!background.ok()) return background.status();
  if (*background && !digest.UpdateFromFile(package_dir + "/" + (*background)->file)) {
    return Invalid("variant_background '" + (*background)->file + "' cannot be read");
  }
  m.package_digest = "sha256:" + digest.FinishHex();
  return m;
}

ManifestScan ScanModelsDir(const std::string& models_dir, Task task) {
  ManifestScan scan;
  DIR* dir = opendir(models_dir.c_str());
  if (!dir) {
    scan.errors.push_back(models_dir + ": models directory cannot be read");
    return scan;
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.empty() || name[0] == '.') continue;  // also skips make_models.py staging dirs
    if (DirExists(models_dir + "/" + name)) names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());

  for (const auto& name : names) {
    std::string package_dir = models_dir + "/" + name;
    if (!FileExists(package_dir + "/manifest.json")) continue;  // not a package
    auto manifest = LoadManifest(package_dir);
    if (!manifest.ok()) {
      // Only this task's packages are our business, but a package whose task cannot even be
      // read could be ours: report it too.
      const std::string text = ReadFileText(package_dir + "/manifest.json").value_or("");
      rapidjson::Document doc;
      doc.Parse(text.c_str());
      bool other_task = !doc.HasParseError() && doc.IsObject() && doc.HasMember("task") &&
                        doc["task"].IsString() && TaskFromName(doc["task"].GetString()) &&
                        *TaskFromName(doc["task"].GetString()) != task;
      if (!other_task) scan.errors.push_back(package_dir + ": " + manifest.status().message());
      continue;
    }
    if (manifest->task != task) continue;
    scan.models.push_back(std::move(manifest).value());
  }
  return scan;
}

std::string TokenizerLabel(const TokenizerSpec& spec) {
  switch (spec.type) {
    case TokenizerType::kChar:
      return "char";
    case TokenizerType::kBpe:
      return "bpe";
    case TokenizerType::kKmer:
      break;
  }
  std::string label = "kmer(k=" + std::to_string(spec.k) + ",stride=" + std::to_string(spec.stride);
  if (spec.convention == KmerConvention::kDnabert) label += ",dnabert";
  if (spec.convention == KmerConvention::kNucleotideTransformer) label += ",nucleotide_transformer";
  return label + ")";
}

}  // namespace dnaserve::worker
