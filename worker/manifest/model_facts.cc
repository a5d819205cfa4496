#include "worker/manifest/model_facts.h"

namespace dnaserve::worker {
namespace {

// 15000 -> "15,000".
std::string Thousands(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

std::string Bp(int64_t n) { return Thousands(n) + " bp"; }

// Per-position tasks (splice, annotation) score tokens; a char token is one base.
std::string PerToken(const TokenizerSpec& tokenizer) {
  switch (tokenizer.type) {
    case TokenizerType::kChar:
      return "per base";
    case TokenizerType::kKmer:
      return "per " + std::to_string(tokenizer.k) + "-mer token (a token every " +
             (tokenizer.stride == 1 ? std::string("base") : Bp(tokenizer.stride)) + ")";
    case TokenizerType::kBpe:
      return "per byte-pair token (variable length; a site spans its token, not one junction "
             "base)";
  }
  return "per token";
}

}  // namespace

std::string Resolution(const ModelManifest& m) {
  switch (m.task) {
    case Task::kSplice: {
      std::string out = PerToken(m.tokenizer) + "; " + Bp(m.context_window_bp) + " windows";
      if (m.output_window_bp < m.context_window_bp) {
        out += " score their central " + Bp(m.output_window_bp);
      }
      return out;
    }
    case Task::kAnnotation:
      return PerToken(m.tokenizer) + " on both strands; " + Bp(m.context_window_bp) + " windows";
    case Task::kExpression:
      return "one value per " + Bp(m.trained_window_bp.value_or(m.context_window_bp)) +
             " window centred on the TSS";
    case Task::kPromoter:
    case Task::kEnhancer:
    case Task::kChromatin: {
      const size_t n = m.output_labels.size();
      const std::string what = n <= 1 ? "one value" : std::to_string(n) + " values";
      return what + " per " + Bp(m.context_window_bp) + " window, a window every " +
             Bp(m.stride_bp);
    }
  }
  return "";
}

std::string OutputsLine(const ModelManifest& m) {
  if (m.output_labels.size() > 8) return std::to_string(m.output_labels.size()) + " labels";
  std::string out;
  for (const auto& label : m.output_labels) {
    if (!out.empty()) out += ", ";
    out += label;
  }
  return out;
}

}  // namespace dnaserve::worker
