#include "worker/batching/row_batch.h"

#include <algorithm>
#include <string>

namespace dnaserve::worker {
namespace {

// Product of the dimensions, or -1 when one is negative.
int64_t Elements(const std::vector<int64_t>& shape, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < shape.size(); ++i) {
    if (shape[i] < 0) return -1;
    n *= shape[i];
  }
  return n;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

RowSignature SignatureOf(const std::vector<IdTensor>& inputs) {
  RowSignature signature;
  if (inputs.empty()) return signature;
  const int64_t rows = inputs[0].shape.empty() ? -1 : inputs[0].shape[0];
  if (rows <= 0) return signature;
  for (const IdTensor& input : inputs) {
    if (input.shape.empty() || input.shape[0] != rows) return RowSignature{};
    const int64_t elements = Elements(input.shape, 0);
    if (elements < 0 || static_cast<size_t>(elements) != input.data.size()) return RowSignature{};
    signature.row_shapes.emplace_back(input.shape.begin() + 1, input.shape.end());
  }
  signature.mergeable = true;
  signature.rows = rows;
  return signature;
}

std::vector<IdTensor> StackRows(const std::vector<const std::vector<IdTensor>*>& calls) {
  std::vector<IdTensor> stacked;
  if (calls.empty()) return stacked;
  const size_t inputs = calls.front()->size();
  stacked.resize(inputs);
  for (size_t k = 0; k < inputs; ++k) {
    IdTensor& out = stacked[k];
    out.shape = (*calls.front())[k].shape;
    out.shape[0] = 0;
    size_t values = 0;
    for (const auto* call : calls) values += (*call)[k].data.size();
    out.data.reserve(values);
    for (const auto* call : calls) {
      const IdTensor& in = (*call)[k];
      out.shape[0] += in.shape[0];
      out.data.insert(out.data.end(), in.data.begin(), in.data.end());
    }
  }
  return stacked;
}

StatusOr<std::vector<std::vector<FloatTensor>>> SplitRows(std::vector<FloatTensor> outputs,
                                                          const std::vector<int64_t>& rows) {
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const FloatTensor& out = outputs[k];
    const int64_t elements = Elements(out.shape, 0);
    if (out.shape.empty() || out.shape[0] != total || elements < 0 ||
        static_cast<size_t>(elements) != out.data.size()) {
      return Internal("output " + std::to_string(k) + " of a batched forward pass has shape " +
                      ShapeText(out.shape) + "; expected " + std::to_string(total) +
                      " rows first, one per stacked input row");
    }
  }
  std::vector<std::vector<FloatTensor>> per_call(rows.size());
  if (rows.empty()) return per_call;
  for (FloatTensor& out : outputs) {
    const size_t row_values = static_cast<size_t>(Elements(out.shape, 1));
    size_t offset = row_values * static_cast<size_t>(rows[0]);
    for (size_t i = 1; i < rows.size(); ++i) {
      FloatTensor part;
      part.shape = out.shape;
      part.shape[0] = rows[i];
      const size_t values = row_values * static_cast<size_t>(rows[i]);
      part.data.assign(out.data.begin() + offset, out.data.begin() + offset + values);
      offset += values;
      per_call[i].push_back(std::move(part));
    }
    // The first call's rows are the head of the buffer: truncate instead of copying.
    out.shape[0] = rows[0];
    out.data.resize(row_values * static_cast<size_t>(rows[0]));
    per_call[0].push_back(std::move(out));
  }
  return per_call;
}

std::vector<IdTensor> SliceRows(const std::vector<IdTensor>& inputs, int64_t first,
                                int64_t count) {
  std::vector<IdTensor> sliced(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const IdTensor& in = inputs[k];
    const size_t row_values = static_cast<size_t>(Elements(in.shape, 1));
    sliced[k].shape = in.shape;
    sliced[k].shape[0] = count;
    const auto begin = in.data.begin() + static_cast<std::ptrdiff_t>(row_values * first);
    sliced[k].data.assign(begin, begin + static_cast<std::ptrdiff_t>(row_values * count));
  }
  return sliced;
}

std::vector<IdTensor> PadRows(std::vector<IdTensor> inputs, int64_t rows) {
  for (IdTensor& in : inputs) {
    const size_t row_values = static_cast<size_t>(Elements(in.shape, 1));
    // A copy of the first row: inserting a vector's own range into it is undefined behaviour.
    const std::vector<int64_t> filler(in.data.begin(),
                                      in.data.begin() + static_cast<std::ptrdiff_t>(row_values));
    in.data.reserve(row_values * static_cast<size_t>(rows));
    for (int64_t r = in.shape[0]; r < rows; ++r) {
      in.data.insert(in.data.end(), filler.begin(), filler.end());
    }
    in.shape[0] = rows;
  }
  return inputs;
}

Status AppendRows(std::vector<FloatTensor> part, int64_t rows, int64_t keep,
                  std::vector<FloatTensor>* into) {
  if (!into->empty() && into->size() != part.size()) {
    return Internal("a forward pass returned " + std::to_string(part.size()) +
                    " outputs, the previous one " + std::to_string(into->size()));
  }
  for (size_t k = 0; k < part.size(); ++k) {
    FloatTensor& out = part[k];
    const int64_t elements = Elements(out.shape, 0);
    if (out.shape.empty() || out.shape[0] != rows || elements < 0 ||
        static_cast<size_t>(elements) != out.data.size()) {
      return Internal("output " + std::to_string(k) + " of a forward pass has shape " +
                      ShapeText(out.shape) + "; expected " + std::to_string(rows) +
                      " rows first, one per input row");
    }
    const size_t row_values = static_cast<size_t>(Elements(out.shape, 1));
    out.data.resize(row_values * static_cast<size_t>(keep));
    out.shape[0] = keep;
    if (k >= into->size()) {
      into->push_back(std::move(out));
      continue;
    }
    FloatTensor& whole = (*into)[k];
    if (!std::equal(whole.shape.begin() + 1, whole.shape.end(), out.shape.begin() + 1,
                    out.shape.end())) {
      return Internal("output " + std::to_string(k) + " changed its row shape from " +
                      ShapeText(whole.shape) + " to " + ShapeText(out.shape) +
                      " between forward passes");
    }
    whole.data.insert(whole.data.end(), out.data.begin(), out.data.end());
    whole.shape[0] += keep;
  }
  return Status::Ok();
}

}  // namespace dnaserve::worker
