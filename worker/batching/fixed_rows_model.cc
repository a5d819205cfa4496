#include "worker/batching/fixed_rows_model.h"

#include <algorithm>
#include <utility>

#include "worker/batching/row_batch.h"

namespace dnaserve::worker {

FixedRowsModel::FixedRowsModel(std::shared_ptr<Model> model, int64_t rows)
    : model_(std::move(model)), rows_(std::max<int64_t>(1, rows)) {}

StatusOr<std::vector<FloatTensor>> FixedRowsModel::Forward(const std::vector<IdTensor>& inputs) {
  const RowSignature signature = SignatureOf(inputs);
  // Exactly one pass of the fixed shape: nothing to cut or fill.
  if (!signature.mergeable || signature.rows == rows_) return model_->Forward(inputs);
  std::vector<FloatTensor> outputs;
  for (int64_t first = 0; first < signature.rows; first += rows_) {
    const int64_t count = std::min(rows_, signature.rows - first);
    auto part = model_->Forward(PadRows(SliceRows(inputs, first, count), rows_));
    if (!part.ok()) return part.status();
    DNASERVE_RETURN_IF_ERROR(AppendRows(std::move(part).value(), rows_, count, &outputs));
  }
  return outputs;
}

}  // namespace dnaserve::worker
