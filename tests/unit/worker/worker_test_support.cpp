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

}  // namespace dnaserve::worker::testing
