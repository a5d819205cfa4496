// Model packages: `<models_dir>/<model_id>/manifest.json` plus the TorchScript weights and the
// model card it names. worker/README.md is the format's documentation; this is its validator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/task.h"
#include "worker/manifest/precision.h"
#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker {

inline constexpr int kManifestFormatVersion = 1;

enum class TokenizerType { kChar, kKmer, kBpe };

// Whose k-mer tokenisation a kmer tokenizer reproduces (worker/README.md, "Tokenizers").
enum class KmerConvention { kBuiltin, kDnabert, kNucleotideTransformer };

struct TokenizerSpec {
  TokenizerType type = TokenizerType::kChar;
  int k = 1;               // bases per token (1 for char and bpe)
  int stride = 1;          // bases between token starts (1 for char; k for non-overlapping k-mers)
  std::string vocab_file;  // char/kmer, optional: one token per line, id = line number
  KmerConvention convention = KmerConvention::kBuiltin;  // kmer only
  std::string file;        // bpe: the Hugging Face tokenizer.json, package-relative
};

// Text input of the expression model: UTF-8 bytes, id = byte + 1 (0 is padding).
struct TextTokenizerSpec {
  int max_tokens = 256;  // longer descriptions are truncated to this many bytes
};

// Expression only: the training contexts a description is matched to (worker/README.md,
// "Description matching"). Optional; packages without it report no match.
struct DescriptionContext {
  std::string id;    // e.g. "E066"
  std::string name;  // e.g. "Liver"
  std::vector<std::string> wordings;  // the descriptions the model was trained with
  // From the package's curated ontology table (context_ontology.tsv); empty in packages
  // without one.
  std::string curie;  // e.g. "UBERON:0002107"
  std::string label;  // the term's label, e.g. "liver"
  std::string group;  // Roadmap group, e.g. "Other"
  std::vector<std::string> synonyms;  // plain names of this very sample
};

// The served free-text rule (worker/tasks/context_resolve.h), when the package has one.
struct FreeTextRule {
  double threshold = 0.5;                  // best score below it: matched = false
  std::vector<std::string> generic_words;  // dropped from both sides before comparing
};

struct DescriptionContexts {
  std::string method = "char-trigram-cosine";  // the only method this worker computes
  double threshold = 0.5;  // best similarity below it: matched = false
  std::vector<DescriptionContext> contexts;
  std::optional<FreeTextRule> free_text;  // absent: the model's own rule above is served
};

struct ModelManifest {
  int format_version = kManifestFormatVersion;
  std::string id;
  Task task = Task::kPromoter;
  std::string description;
  bool is_default = false;
  TokenizerSpec tokenizer;
  int64_t context_window_bp = 0;
  std::optional<int64_t> trained_window_bp;  // set only for fixed-receptive-field models
  // Distance between window starts. Always filled after parsing: the manifest value for the
  // overlapping tasks (promoter, chromatin), context_window_bp for the non-overlapping ones.
  int64_t stride_bp = 0;
  // Flanked per-base models (splice only; worker/README.md "Flanked models"): each window scores
  // its central output_window_bp bases and sees flank_bp of real neighbouring sequence on each
  // side, so context_window_bp = output_window_bp + 2 * flank_bp and windows step by
  // output_window_bp. Always filled after parsing: without the manifest fields, flank_bp = 0 and
  // output_window_bp = context_window_bp (the plain non-overlapping windows).
  int64_t flank_bp = 0;
  int64_t output_window_bp = 0;
  std::vector<std::string> output_labels;
  std::vector<std::string> transcript_types;        // annotation only
  DecodeOptions decoder;  // annotation only: the defaults, overridden by the "decoder" object
  // Annotation only, optional: channels the model computes for both strands in every forward
  // pass (CheckStrandCompleteLabels). Non-empty: the model takes a second input, [B] int64, 0
  // for the rows whose strand-complete channels the worker will ignore (its reverse pass).
  std::vector<std::string> strand_complete_labels;
  // Annotation only, optional, with strand_complete_labels: bases of the real sequence on each
  // side of every window that the model receives as a third input, [B, 2 * neighbour_bp] (the
  // bases before the window, then those after it; N beyond the sequence). 0: not sent.
  int64_t neighbour_bp = 0;
  std::optional<TextTokenizerSpec> text_tokenizer;  // expression only
  std::optional<DescriptionContexts> description_contexts;  // expression only, optional
  bool trained = false;
  std::optional<int64_t> seed;
  Precision precision = Precision::kFp32;  // "precision"; absent: fp32 (worker/README.md)
  // "batch_rows_per_pass": the rows of every forward pass this package wants (0: passes of any
  // size); absent: the worker's setting, by task (worker/README.md, "Execution"). A package whose
  // windows are each a large forward (a base-size transformer) names 1: a one-row pass costs it
  // no speed, and rows of filler would.
  std::optional<int64_t> batch_rows_per_pass;
  std::string weights_file;     // as written in the manifest (a plain file name)
  std::string model_card_file;  // as written in the manifest
  std::string package_dir;      // directory the manifest was read from ("" when parsed from text)
  // "sha256:<hex>" of manifest.json's bytes followed by the weights file's (LoadManifest; empty
  // when parsed from text): ListModels publishes it so answers name the exact package.
  std::string package_digest;

  std::string WeightsPath() const { return package_dir + "/" + weights_file; }
};

// Parses and validates manifest text without touching the filesystem. `expected_id`, when
// non-empty, is the package directory name, which the manifest's id must equal. Errors name the
// offending field, e.g. "manifest.json: 'context_window_bp' must be a positive integer".
StatusOr<ModelManifest> ParseManifest(std::string_view json, std::string_view expected_id = {});

// Reads `<package_dir>/manifest.json`, validates it and checks that the files it names exist.
StatusOr<ModelManifest> LoadManifest(const std::string& package_dir);

struct ManifestScan {
  std::vector<ModelManifest> models;  // valid packages of the requested task, sorted by id
  std::vector<std::string> errors;    // one "<package dir>: <reason>" per rejected package
};

// Loads every package under `models_dir` whose manifest declares `task`. Packages of other tasks
// are skipped silently; broken ones (of this task or of an unreadable task) are reported in
// `errors` and skipped. Ids are unique because each must equal its directory name.
ManifestScan ScanModelsDir(const std::string& models_dir, Task task);

// A one-word tokenizer description for listings: "char", "kmer(k=6,stride=6)",
// "kmer(k=6,stride=1,dnabert)", "bpe".
std::string TokenizerLabel(const TokenizerSpec& spec);

}  // namespace dnaserve::worker
