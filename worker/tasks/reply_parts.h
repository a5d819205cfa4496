// Which parts of a PredictResult the request's result_format asks for (worker.proto
// ResultFormat): the task runners render only those, and RunPrediction drops the structured
// result when a text format alone was asked for.
#pragma once

#include <string_view>

#include "common/status.h"
#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::worker {

class ReplyParts {
 public:
  // The parts of `request`'s reply (an unset result_format -> everything, as before the field).
  // Does not check the format against the task: CheckResultFormat does, once per request.
  static ReplyParts For(const v1::PredictRequest& request);

  // formats[name] ("bed", "bedgraph", "gff3"), for a format the task supports.
  bool Format(std::string_view name) const;
  // The per-track renderings a JSON `data.tracks` publishes (splice, enhancer, chromatin).
  bool Tracks() const { return everything_ || json_; }
  // Promoter's tracks["promoter"], a copy of formats["bedgraph"] that no JSON publishes: only
  // for callers older than result_format, which may read it.
  bool PromoterTrackCopy() const { return everything_; }
  // The oneof `result`: not for a text format, whose reply is that text.
  bool Structured() const { return everything_ || json_ || scores_only_; }

 private:
  bool everything_ = true;
  bool json_ = false;
  bool scores_only_ = false;  // RESULT_FORMAT_SCORES: the structured result and nothing else
  std::string_view text_;  // the one text format asked for, when neither of the above
};

// validation_failed when the request asks for a text format `task` does not render (the gateway
// negotiates only supported ones; another caller may not have).
Status CheckResultFormat(Task task, const v1::PredictRequest& request);

}  // namespace dnaserve::worker
