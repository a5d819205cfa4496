#include "worker/batching/batching_model.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>

#include "common/log.h"
#include "worker/batching/row_batch.h"

namespace dnaserve::worker {
namespace {

constexpr char kOverloadedPrefix[] = "the worker is at capacity";
constexpr int64_t kOverloadedRetryAfterSeconds = 1;
// How often a waiting caller asks whether it is still wanted. Short next to a forward pass
// (tens of ms and up) and cheap: the check is an atomic read in gRPC.
constexpr auto kCancelPollInterval = std::chrono::milliseconds(10);

// The inputs cut into pieces of at most `piece_rows` rows, in order.
std::vector<std::vector<IdTensor>> Pieces(const std::vector<IdTensor>& inputs, int64_t rows,
                                          int64_t piece_rows) {
  std::vector<std::vector<IdTensor>> pieces;
  for (int64_t first = 0; first < rows; first += piece_rows) {
    pieces.push_back(SliceRows(inputs, first, std::min(piece_rows, rows - first)));
  }
  return pieces;
}

}  // namespace

struct BatchingModel::Call {
  const void* submission = nullptr;  // the Submit that queued it (its caller waits for it)
  const std::vector<IdTensor>* inputs = nullptr;
  RowSignature signature;
  int64_t rows = 1;
  int64_t bases = 0;
  int64_t pass_rows = 0;  // most rows of a pass it joins (its fixed pass shape); 0 = no limit
  Clock::time_point enqueued;
  int64_t service = 0;   // bases its request queued before it (the length-aware order)
  bool running = false;  // in a pass: can no longer be withdrawn
  bool done = false;
  std::optional<StatusOr<std::vector<FloatTensor>>> result;
};

class BatchingModel::Request final : public Model {
 public:
  Request(BatchingModel* owner, CancelCheck cancelled)
      : owner_(owner), cancelled_(std::move(cancelled)) {}
  ~Request() override { owner_->Release(&seat_); }

  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override {
    return owner_->Submit(inputs, cancelled_, &seat_);
  }

 private:
  BatchingModel* const owner_;
  const CancelCheck cancelled_;
  Seat seat_;
};

BatchingModel::BatchingModel(std::shared_ptr<Model> model, BatchingOptions options)
    : model_(std::move(model)), options_(std::move(options)) {}

BatchingModel::~BatchingModel() {
  log::Info("batching_stats", {{"model", options_.model_id},
                               {"passes", stats_.passes},
                               {"merged_passes", stats_.merged_passes},
                               {"direct_passes", stats_.direct_passes},
                               {"calls_run", stats_.calls_run},
                               {"refused", stats_.refused},
                               {"withdrawn", stats_.withdrawn}});
}

// What a refused request gets: service_unavailable with a retry hint, which the gateway passes on
// as 503 with Retry-After (callers tell it from other failures by the hint, not the message).
Status BatchingModel::OverloadedStatus(int64_t call_bases) const {
  return Status(ErrorCode::kServiceUnavailable,
                std::string(kOverloadedPrefix) + ": model '" + options_.model_id + "' serves " +
                    std::to_string(admitted_requests_) + " requests holding " +
                    std::to_string(admitted_bases_) + " bases (limit " +
                    std::to_string(options_.max_queue_bases) + "; this one needs " +
                    std::to_string(call_bases) + "); retry shortly")
      .set_retry_after_seconds(kOverloadedRetryAfterSeconds);
}

BatchingStats BatchingModel::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BatchingStats stats = stats_;
  stats.queued_calls = static_cast<int64_t>(queue_.size());
  stats.queued_bases = queued_bases_;
  stats.admitted_requests = admitted_requests_;
  stats.admitted_bases = admitted_bases_;
  return stats;
}

StatusOr<std::vector<FloatTensor>> BatchingModel::Forward(const std::vector<IdTensor>& inputs) {
  Seat seat;
  auto out = Submit(inputs, nullptr, &seat);
  Release(&seat);
  return out;
}

std::unique_ptr<Model> BatchingModel::ForRequest(CancelCheck cancelled) {
  return std::make_unique<Request>(this, std::move(cancelled));
}

void BatchingModel::Release(Seat* seat) {
  if (!seat->admitted) return;
  std::lock_guard<std::mutex> lock(mu_);
  admitted_bases_ -= seat->bases;
  --admitted_requests_;
  seat->admitted = false;
}

Status BatchingModel::Admit(int64_t call_bases, Seat* seat) {
  if (seat->admitted) {
    // An admitted request is never refused halfway; a larger call just widens its seat.
    if (call_bases > seat->bases) {
      admitted_bases_ += call_bases - seat->bases;
      seat->bases = call_bases;
    }
    return Status::Ok();
  }
  if (admitted_requests_ > 0 && admitted_bases_ + call_bases > options_.max_queue_bases) {
    ++stats_.refused;
    return OverloadedStatus(call_bases);
  }
  seat->admitted = true;
  seat->bases = call_bases;
  admitted_bases_ += call_bases;
  ++admitted_requests_;
  return Status::Ok();
}

StatusOr<std::vector<FloatTensor>> BatchingModel::Submit(const std::vector<IdTensor>& inputs,
                                                         const CancelCheck& cancelled,
                                                         Seat* seat) {
  if (cancelled && cancelled()) return ForwardCancelledStatus();
  const RowSignature signature = SignatureOf(inputs);
  int64_t rows = 1;
  if (signature.mergeable) {
    rows = signature.rows;
  } else if (!inputs.empty() && !inputs[0].shape.empty() && inputs[0].shape[0] > 0) {
    rows = inputs[0].shape[0];
  }
  // Rows count their own width when passes scale with it (pass_width.h), else bases_per_row.
  const bool by_width = options_.max_call_rows > 0 && options_.pass_width.window_columns > 0 &&
                        signature.mergeable;
  const int64_t columns = RowColumns(inputs);
  const int64_t bases_per_row = by_width ? options_.pass_width.RowBases(columns)
                                         : std::max<int64_t>(1, options_.bases_per_row);
  const int64_t pass_rows = options_.max_call_rows <= 0 ? 0
                            : by_width ? options_.pass_width.RowsFor(columns)
                                       : options_.max_call_rows;
  // The call's pieces: one, the call itself, unless it is longer than a pass's rows.
  std::vector<std::vector<IdTensor>> piece_inputs;
  if (pass_rows > 0 && signature.mergeable && rows > pass_rows) {
    piece_inputs = Pieces(inputs, rows, pass_rows);
  }
  std::vector<Call> calls(piece_inputs.empty() ? 1 : piece_inputs.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    Call& call = calls[i];
    call.submission = &calls;
    call.inputs = piece_inputs.empty() ? &inputs : &piece_inputs[i];
    call.signature = piece_inputs.empty() ? signature : SignatureOf(piece_inputs[i]);
    call.rows = piece_inputs.empty() ? rows : call.signature.rows;
    call.bases = call.rows * bases_per_row;
    call.pass_rows = signature.mergeable ? pass_rows : 0;
  }

  std::unique_lock<std::mutex> lock(mu_);
  if (Status admitted = Admit(rows * bases_per_row, seat); !admitted.ok()) {
    lock.unlock();
    log::Warn("batch_queue_full", {{"model", options_.model_id},
                                   {"call_bases", rows * bases_per_row},
                                   {"max_queue_bases", options_.max_queue_bases}});
    return admitted;
  }
  const Clock::time_point now = Clock::now();
  for (Call& call : calls) {
    call.enqueued = now;
    // Least attained service first: the bases this request queued before this piece.
    call.service = seat->bases_queued;
    seat->bases_queued += call.bases;
  }
  const int max_passes = std::max(1, options_.max_passes);
  if (calls.size() == 1 && queue_.empty() && running_passes_ < max_passes &&
      options_.max_wait.count() == 0) {
    // The fast path: nobody to wait for and nobody waiting, so the call is its own pass, run on
    // this thread with its own tensors (no stacking, no hand-off to another thread).
    std::vector<Call*> pass{&calls[0]};
    StartPass(pass);
    ++stats_.direct_passes;
    RunPassUnlocked(pass, lock);
    return std::move(*calls[0].result);
  }

  for (Call& call : calls) {
    queue_.push_back(&call);
    queued_bases_ += call.bases;
  }
  changed_.notify_all();  // a head waiting for company may now be full
  bool withdrawn = false;
  while (true) {
    const bool all_done = std::all_of(calls.begin(), calls.end(),
                                      [](const Call& call) { return call.done; });
    if (all_done) break;
    std::optional<Clock::time_point> wake;  // none: until notified
    if (!queue_.empty() && running_passes_ < max_passes && Head()->submission == &calls) {
      Clock::time_point until;
      if (!HeadWaitsForCompany(&until)) {
        std::vector<Call*> pass = TakePass();
        if (!queue_.empty()) changed_.notify_all();  // the next head may take another free slot
        RunPassUnlocked(pass, lock);
        continue;
      }
      wake = until;
    }
    if (cancelled && !withdrawn) {
      const Clock::time_point poll = Clock::now() + kCancelPollInterval;
      wake = wake ? std::min(*wake, poll) : poll;
    }
    if (wake) {
      changed_.wait_until(lock, *wake);
    } else {
      changed_.wait(lock);
    }
    if (!cancelled || withdrawn) continue;
    const bool waiting = std::any_of(calls.begin(), calls.end(),
                                     [](const Call& call) { return !call.running && !call.done; });
    if (!waiting) continue;
    // The check may take gRPC's locks: never call it under ours.
    lock.unlock();
    const bool gone = cancelled();
    lock.lock();
    if (!gone) continue;
    // Withdraw what still waits; pieces already in a pass finish (they hold this stack's calls).
    for (Call& call : calls) {
      if (call.running || call.done) continue;
      queue_.erase(std::find(queue_.begin(), queue_.end(), &call));
      queued_bases_ -= call.bases;
      call.done = true;
      ++stats_.withdrawn;
    }
    withdrawn = true;
    changed_.notify_all();  // the head of the queue may have changed
  }
  if (withdrawn) return ForwardCancelledStatus();
  if (calls.size() == 1) return std::move(*calls[0].result);
  return JoinPieces(calls);
}

StatusOr<std::vector<FloatTensor>> BatchingModel::JoinPieces(std::vector<Call>& pieces) const {
  std::vector<FloatTensor> outputs;
  for (Call& piece : pieces) {
    if (!piece.result->ok()) return piece.result->status();
    if (Status appended =
            AppendRows(std::move(*piece.result).value(), piece.rows, piece.rows, &outputs);
        !appended.ok()) {
      return Internal("model '" + options_.model_id + "': " + appended.message());
    }
  }
  return outputs;
}

BatchingModel::Call* BatchingModel::Head() const {
  if (options_.max_call_rows <= 0) return queue_.front();
  // Length-aware order: the piece whose request has had the fewest bases queued before it; the
  // oldest among equals (the queue is in arrival order and the scan keeps the first minimum).
  Call* head = queue_.front();
  for (Call* call : queue_) {
    if (call->service < head->service) head = call;
  }
  return head;
}

bool BatchingModel::HeadWaitsForCompany(Clock::time_point* until) const {
  const Call* head = Head();
  if (options_.max_wait.count() <= 0 || !head->signature.mergeable) return false;
  int64_t bases = 0;
  int64_t rows = 0;
  PassFromHead(&bases, &rows);
  if (bases >= options_.max_batch_bases) return false;
  if (head->pass_rows > 0 && rows >= head->pass_rows) return false;  // the pass shape is full
  *until = head->enqueued + options_.max_wait;
  return Clock::now() < *until;
}

std::vector<BatchingModel::Call*> BatchingModel::PassFromHead(int64_t* bases,
                                                              int64_t* rows) const {
  Call* head = Head();
  std::vector<Call*> pass{head};
  *bases = head->bases;
  *rows = head->rows;
  if (!head->signature.mergeable) return pass;
  for (Call* other : queue_) {
    // Calls that merge have the same row width, hence the same pass_rows.
    if (other != head && other->signature.MergesWith(head->signature) &&
        *bases + other->bases <= options_.max_batch_bases &&
        (head->pass_rows <= 0 || *rows + other->rows <= head->pass_rows)) {
      pass.push_back(other);
      *bases += other->bases;
      *rows += other->rows;
    }
  }
  return pass;
}

std::vector<BatchingModel::Call*> BatchingModel::TakePass() {
  int64_t bases = 0;
  int64_t rows = 0;
  std::vector<Call*> pass = PassFromHead(&bases, &rows);
  for (Call* call : pass) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), call));
    queued_bases_ -= call->bases;
  }
  StartPass(pass);
  return pass;
}

void BatchingModel::StartPass(const std::vector<Call*>& pass) {
  for (Call* call : pass) call->running = true;
  ++running_passes_;
  ++stats_.passes;
  if (pass.size() > 1) ++stats_.merged_passes;
  stats_.calls_run += static_cast<int64_t>(pass.size());
  if (options_.on_pass) {
    int64_t rows = 0;
    for (const Call* call : pass) rows += call->rows;
    options_.on_pass(pass.size(), rows);
  }
}

void BatchingModel::RunPassUnlocked(const std::vector<Call*>& pass,
                                    std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  RunPass(pass);
  lock.lock();
  --running_passes_;
  for (Call* call : pass) call->done = true;
  // Wakes the pass's other callers (their rows are in) and the head of the queue (a slot is free).
  changed_.notify_all();
}

void BatchingModel::RunPass(const std::vector<Call*>& pass) {
  auto fail_all = [&](const Status& status) {
    for (Call* call : pass) call->result = status;
  };
  try {
    if (pass.size() == 1) {
      // Nothing to stack: the caller's own tensors go straight in and its outputs straight back.
      pass[0]->result = model_->Forward(*pass[0]->inputs);
      return;
    }
    std::vector<const std::vector<IdTensor>*> inputs;
    std::vector<int64_t> rows;
    for (const Call* call : pass) {
      inputs.push_back(call->inputs);
      rows.push_back(call->rows);
    }
    auto outputs = model_->Forward(StackRows(inputs));
    if (!outputs.ok()) return fail_all(outputs.status());
    auto split = SplitRows(std::move(outputs).value(), rows);
    if (!split.ok()) {
      return fail_all(Internal("model '" + options_.model_id + "': " + split.status().message()));
    }
    for (size_t i = 0; i < pass.size(); ++i) pass[i]->result = std::move((*split)[i]);
  } catch (const std::exception& e) {
    // Model::Forward does not throw; this is for allocation failures while stacking or cutting.
    log::Error("batch_pass_failed", {{"model", options_.model_id}, {"what", e.what()}});
    fail_all(Internal("model '" + options_.model_id + "' forward pass failed"));
  }
}

}  // namespace dnaserve::worker
