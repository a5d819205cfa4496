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

}  // namespace

struct BatchingModel::Call {
  const std::vector<IdTensor>* inputs = nullptr;
  RowSignature signature;
  int64_t rows = 1;
  int64_t bases = 0;
  Clock::time_point enqueued;
  bool running = false;  // taken by an executor: can no longer be withdrawn
  bool done = false;
  std::optional<StatusOr<std::vector<FloatTensor>>> result;
};

BatchingModel::BatchingModel(std::shared_ptr<Model> model, BatchingOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  const int executors = std::max(1, options_.executors);
  for (int i = 0; i < executors; ++i) executors_.emplace_back([this] { ExecutorLoop(); });
}

BatchingModel::~BatchingModel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (Call* call : queue_) {
      call->result = Unavailable("the worker is shutting down; retry on another worker");
      call->done = true;
    }
    queue_.clear();
    queued_bases_ = 0;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  for (auto& t : executors_) t.join();
  log::Info("batching_stats", {{"model", options_.model_id},
                               {"passes", stats_.passes},
                               {"merged_passes", stats_.merged_passes},
                               {"calls_run", stats_.calls_run},
                               {"refused", stats_.refused},
                               {"withdrawn", stats_.withdrawn}});
}

bool BatchingModel::IsOverloaded(const Status& status) {
  return status.code() == ErrorCode::kServiceUnavailable &&
         status.message().rfind(kOverloadedPrefix, 0) == 0;
}

Status BatchingModel::OverloadedStatus() const {
  return Status(ErrorCode::kServiceUnavailable,
                std::string(kOverloadedPrefix) + ": model '" + options_.model_id + "' has " +
                    std::to_string(queued_bases_) + " bases queued (limit " +
                    std::to_string(options_.max_queue_bases) + "); retry shortly")
      .set_retry_after_seconds(kOverloadedRetryAfterSeconds);
}

BatchingStats BatchingModel::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BatchingStats stats = stats_;
  stats.queued_calls = static_cast<int64_t>(queue_.size());
  stats.queued_bases = queued_bases_;
  return stats;
}

StatusOr<std::vector<FloatTensor>> BatchingModel::Forward(const std::vector<IdTensor>& inputs) {
  return ForwardUnlessCancelled(inputs, nullptr);
}

StatusOr<std::vector<FloatTensor>> BatchingModel::ForwardUnlessCancelled(
    const std::vector<IdTensor>& inputs, const CancelCheck& cancelled) {
  if (cancelled && cancelled()) return ForwardCancelledStatus();
  Call call;
  call.inputs = &inputs;
  call.signature = SignatureOf(inputs);
  if (call.signature.mergeable) {
    call.rows = call.signature.rows;
  } else if (!inputs.empty() && !inputs[0].shape.empty() && inputs[0].shape[0] > 0) {
    call.rows = inputs[0].shape[0];
  }
  call.bases = call.rows * std::max<int64_t>(1, options_.bases_per_row);

  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return Unavailable("the worker is shutting down; retry on another worker");
  if (!queue_.empty() && queued_bases_ + call.bases > options_.max_queue_bases) {
    ++stats_.refused;
    Status refused = OverloadedStatus();
    lock.unlock();
    log::Warn("batch_queue_full", {{"model", options_.model_id},
                                   {"call_bases", call.bases},
                                   {"max_queue_bases", options_.max_queue_bases}});
    return refused;
  }
  call.enqueued = Clock::now();
  queue_.push_back(&call);
  queued_bases_ += call.bases;
  work_cv_.notify_all();

  while (!call.done) {
    if (!cancelled) {
      done_cv_.wait(lock, [&] { return call.done; });
      break;
    }
    if (done_cv_.wait_for(lock, kCancelPollInterval, [&] { return call.done; })) break;
    if (call.running) continue;  // past the point of no return: wait for the result
    // The check may take gRPC's locks: never call it under ours.
    lock.unlock();
    const bool gone = cancelled();
    lock.lock();
    if (gone && !call.running && !call.done) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), &call));
      queued_bases_ -= call.bases;
      ++stats_.withdrawn;
      work_cv_.notify_all();  // the head of the queue may have changed
      return ForwardCancelledStatus();
    }
  }
  return std::move(*call.result);
}

int64_t BatchingModel::MergeableBases() const {
  const Call* head = queue_.front();
  int64_t bases = head->bases;
  for (size_t i = 1; i < queue_.size(); ++i) {
    const Call* other = queue_[i];
    if (other->signature.MergesWith(head->signature) &&
        bases + other->bases <= options_.max_batch_bases) {
      bases += other->bases;
    }
  }
  return bases;
}

std::vector<BatchingModel::Call*> BatchingModel::TakePass() {
  Call* head = queue_.front();
  std::vector<Call*> pass{head};
  int64_t bases = head->bases;
  if (head->signature.mergeable) {
    for (size_t i = 1; i < queue_.size(); ++i) {
      Call* other = queue_[i];
      if (other->signature.MergesWith(head->signature) &&
          bases + other->bases <= options_.max_batch_bases) {
        pass.push_back(other);
        bases += other->bases;
      }
    }
  }
  for (Call* call : pass) {
    call->running = true;
    queue_.erase(std::find(queue_.begin(), queue_.end(), call));
    queued_bases_ -= call->bases;
  }
  ++stats_.passes;
  if (pass.size() > 1) ++stats_.merged_passes;
  stats_.calls_run += static_cast<int64_t>(pass.size());
  if (options_.on_pass) {
    int64_t rows = 0;
    for (const Call* call : pass) rows += call->rows;
    options_.on_pass(pass.size(), rows);
  }
  return pass;
}

void BatchingModel::ExecutorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    // Let concurrent requests meet: a pass below budget waits for company, but never longer
    // than max_wait after its oldest call arrived.
    while (!stopping_ && !queue_.empty() && options_.max_wait.count() > 0 &&
           queue_.front()->signature.mergeable && MergeableBases() < options_.max_batch_bases) {
      const Clock::time_point deadline = queue_.front()->enqueued + options_.max_wait;
      if (Clock::now() >= deadline) break;
      work_cv_.wait_until(lock, deadline);
    }
    if (stopping_) return;
    if (queue_.empty()) continue;  // every waiting call was withdrawn
    std::vector<Call*> pass = TakePass();
    lock.unlock();
    RunPass(pass);
    lock.lock();
    for (Call* call : pass) call->done = true;
    done_cv_.notify_all();
  }
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
    auto split = SplitRows(*outputs, rows);
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
