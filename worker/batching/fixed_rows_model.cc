#include "worker/batching/fixed_rows_model.h"

#include <algorithm>
#include <utility>

#include "worker/batching/row_batch.h"

namespace dnaserve::worker {

namespace {

PassWidth FixedWidth(int64_t rows) {
  PassWidth width;
  width.rows_per_pass = std::max<int64_t>(1, rows);
  return width;  // window_columns 0: the same rows at every width
}

}  // namespace

FixedRowsModel::FixedRowsModel(std::shared_ptr<Model> model, int64_t rows)
    : FixedRowsModel(std::move(model), FixedWidth(rows)) {}

FixedRowsModel::FixedRowsModel(std::shared_ptr<Model> model, PassWidth width)
    : model_(std::move(model)), width_(width) {}

StatusOr<std::vector<FloatTensor>> FixedRowsModel::Forward(const std::vector<IdTensor>& inputs) {
  const RowSignature signature = SignatureOf(inputs);
  if (!signature.mergeable) return model_->Forward(inputs);
  const int64_t rows = width_.RowsFor(RowColumns(inputs));
  // Exactly one pass of the fixed shape: nothing to cut or fill.
  if (signature.rows == rows) return model_->Forward(inputs);
  std::vector<FloatTensor> outputs;
  for (int64_t first = 0; first < signature.rows; first += rows) {
    const int64_t count = std::min(rows, signature.rows - first);
    auto part = model_->Forward(PadRows(SliceRows(inputs, first, count), rows));
    if (!part.ok()) return part.status();
    DNASERVE_RETURN_IF_ERROR(AppendRows(std::move(part).value(), rows, count, &outputs));
  }
  return outputs;
}

}  // namespace dnaserve::worker
