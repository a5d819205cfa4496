#include "worker/tasks/run_support.h"

#include <cmath>

namespace dnaserve::worker {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

Status CheckSequence(std::string_view sequence) {
  if (sequence.empty()) {
    return ValidationFailed({"body", "sequence"}, "the sequence is empty", "string_too_short");
  }
  for (size_t i = 0; i < sequence.size(); ++i) {
    char c = sequence[i];
    if (c != 'A' && c != 'C' && c != 'G' && c != 'T' && c != 'N') {
      return ValidationFailed(
          {"body", "sequence"},
          "the sequence holds a character other than A, C, G, T, N at offset " + std::to_string(i),
          "string_pattern_mismatch");
    }
  }
  return Status::Ok();
}

IdTensor TokenizeWindows(std::string_view sequence, const std::vector<WindowSpan>& windows,
                         int first, int last, int64_t context, const Tokenizer& tokenizer) {
  IdTensor tensor;
  const int64_t tokens = tokenizer.TokenCount(context);
  tensor.shape = {last - first, tokens};
  tensor.data.reserve(static_cast<size_t>((last - first) * tokens));
  for (int i = first; i < last; ++i) {
    tokenizer.Encode(PaddedWindow(sequence, windows[i], context), &tensor.data);
  }
  return tensor;
}

StatusOr<std::vector<FloatTensor>> ForwardChecked(
    Model& model, const ModelManifest& manifest, const std::vector<IdTensor>& inputs,
    const std::vector<std::vector<int64_t>>& expected_shapes) {
  auto outputs = model.Forward(inputs);
  if (!outputs.ok()) return outputs.status();
  if (outputs->size() != expected_shapes.size()) {
    return Internal("model '" + manifest.id + "' returned " + std::to_string(outputs->size()) +
                    " outputs, expected " + std::to_string(expected_shapes.size()));
  }
  for (size_t i = 0; i < expected_shapes.size(); ++i) {
    const FloatTensor& out = (*outputs)[i];
    if (out.shape != expected_shapes[i]) {
      return Internal("model '" + manifest.id + "' output " + std::to_string(i) + " has shape " +
                      ShapeText(out.shape) + ", expected " + ShapeText(expected_shapes[i]));
    }
    for (float v : out.data) {
      if (!std::isfinite(v)) {
        return Internal("model '" + manifest.id + "' produced a non-finite value");
      }
    }
  }
  return outputs;
}

int LabelIndex(const ModelManifest& manifest, std::string_view label) {
  for (size_t i = 0; i < manifest.output_labels.size(); ++i) {
    if (manifest.output_labels[i] == label) return static_cast<int>(i);
  }
  return 0;
}

bool ShouldStop(const RunHooks& hooks) { return hooks.cancelled && hooks.cancelled(); }

void ReportProgress(const RunHooks& hooks, int done, int total) {
  if (hooks.progress) hooks.progress(done, total);
}

std::string TrackSeqid(const v1::PredictRequest& request) {
  return request.sequence_name().empty() ? "sequence" : request.sequence_name();
}

}  // namespace dnaserve::worker
