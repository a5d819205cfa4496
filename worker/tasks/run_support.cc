#include "worker/tasks/run_support.h"

#include <algorithm>
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
                         int first, int last, int64_t context, const Tokenizer& tokenizer,
                         std::vector<std::vector<Token>>* tokens) {
  const size_t count = static_cast<size_t>(last - first);
  IdTensor tensor;
  std::vector<size_t> row_end;  // rows are encoded back to back, then padded if they differ
  row_end.reserve(count);
  if (tokens) tokens->assign(count, {});
  size_t width = 0;
  for (int i = first; i < last; ++i) {
    const std::string bases = PaddedWindow(sequence, windows[i], context);
    const size_t row_start = tensor.data.size();
    if (tokens) {
      std::vector<Token>& window_tokens = (*tokens)[i - first];
      window_tokens = tokenizer.Encode(bases);
      for (const Token& t : window_tokens) tensor.data.push_back(t.id);
    } else {
      tokenizer.EncodeIds(bases, &tensor.data);
    }
    row_end.push_back(tensor.data.size());
    width = std::max(width, tensor.data.size() - row_start);
    if (i == first) tensor.data.reserve(count * width + count);  // rows are alike in length
  }
  tensor.shape = {last - first, static_cast<int64_t>(width)};
  if (tensor.data.size() != count * width) {
    // Only tokenizers whose counts vary with the bases get here, and LoadTokenizer makes sure
    // each of those has a pad id.
    std::vector<int64_t> padded(count * width, tokenizer.pad_id().value_or(kPadId));
    size_t row_start = 0;
    for (size_t r = 0; r < count; ++r) {
      std::copy(tensor.data.begin() + row_start, tensor.data.begin() + row_end[r],
                padded.begin() + r * width);
      row_start = row_end[r];
    }
    tensor.data = std::move(padded);
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
