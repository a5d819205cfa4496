#include "tests/unit/worker/worker_test_support.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "tests/support/test_env.h"
#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker::testing {

namespace {

// Removes the generated packages when the test process exits.
struct RemoveAtExit {
  std::string path;
  ~RemoveAtExit() {
    std::error_code ignored;
    if (!path.empty() && std::getenv("DNASERVE_KEEP_TEST_FILES") == nullptr) {
      std::filesystem::remove_all(path, ignored);
    }
  }
};

}  // namespace

std::optional<std::string> GeneratedModelsDir(std::string* why) {
  static std::once_flag once;
  static std::optional<std::string> dir;
  static std::string reason;
  static RemoveAtExit cleanup;
  std::call_once(once, [] {
    // scripts/test generates the packages once and shares them with every test process.
    if (const char* shared = std::getenv("DNASERVE_TEST_MODELS_DIR"); shared && *shared) {
      dir = shared;
      return;
    }
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      reason = "LibTorch for Python is missing (/usr/bin/python3 cannot import torch)";
      return;
    }
    std::string out = dnaserve::testing::MakeTempDir("dnaserve-worker-models");
    std::string command = "/usr/bin/python3 " + dnaserve::testing::SourceDir() +
                          "/scripts/make_models.py --out " + out + " >" + out +
                          "/make_models.log 2>&1";
    if (std::system(command.c_str()) != 0) {
      reason = "scripts/make_models.py failed; see " + out + "/make_models.log";
      return;  // the directory stays for the post-mortem
    }
    cleanup.path = out;
    dir = out;
  });
  if (!dir && why) *why = reason;
  return dir;
}

ModelManifest TestManifest(Task task) {
  ModelManifest m;
  m.task = task;
  m.id = std::string(TaskName(task)) + "-test";
  m.description = "test model";
  m.is_default = true;
  m.weights_file = "model.pt";
  m.model_card_file = "MODEL_CARD.md";
  switch (task) {
    case Task::kPromoter:
      m.context_window_bp = 2000;
      m.stride_bp = 1000;
      m.output_labels = {"promoter"};
      break;
    case Task::kSplice:
      m.tokenizer = {TokenizerType::kKmer, 6, 6, ""};
      m.context_window_bp = 15000;
      m.stride_bp = 15000;
      m.output_labels = {"neither", "acceptor", "donor"};
      break;
    case Task::kEnhancer:
      m.context_window_bp = 249;
      m.stride_bp = 249;
      m.output_labels = {"dev", "hk"};
      break;
    case Task::kChromatin:
      m.context_window_bp = 1000;
      m.stride_bp = 200;
      m.output_labels = {"A|DNase|None", "B|CTCF|None", "C|Pol2(phosphoS2)|None", "D|H3K27ac|None",
                         "E|ZNF274|None"};
      break;
    case Task::kAnnotation:
      m.context_window_bp = 2000;
      m.stride_bp = 2000;
      m.output_labels.assign(kAnnotationLabels.begin(), kAnnotationLabels.end());
      m.transcript_types = {"mRNA", "lnc_RNA"};
      break;
    case Task::kExpression:
      m.context_window_bp = 9198;
      m.trained_window_bp = 9198;
      m.stride_bp = 9198;
      m.output_labels = {"expression_log_tpm"};
      m.text_tokenizer = TextTokenizerSpec{256};
      break;
  }
  return m;
}

void RemoveScratch(const std::string& dir) {
  if (std::getenv("DNASERVE_KEEP_TEST_FILES") != nullptr) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string RandomBases(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, 'A');
  for (char& c : out) c = "ACGT"[rng() % 4];
  return out;
}

v1::PredictRequest RequestFor(Task task, size_t length, unsigned seed) {
  v1::PredictRequest request;
  request.set_sequence(RandomBases(task == Task::kExpression ? 9198 : length, seed));
  request.set_sequence_name("chrT");
  switch (task) {
    case Task::kPromoter:
      request.mutable_promoter()->set_threshold(0.5);
      break;
    case Task::kSplice: {
      auto* s = request.mutable_splice();
      s->set_threshold(0.5);
      s->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
      s->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
      s->set_max_sites(20000);
      break;
    }
    case Task::kEnhancer:
      request.mutable_enhancer();
      break;
    case Task::kChromatin:
      request.mutable_chromatin()->set_threshold(0.5);
      break;
    case Task::kAnnotation: {
      auto* a = request.mutable_annotation();
      a->set_batch_size(8);
      a->set_reverse_complement(true);
      break;
    }
    case Task::kExpression:
      request.mutable_expression()->set_description("adult liver");
      break;
  }
  return request;
}

}  // namespace dnaserve::worker::testing
