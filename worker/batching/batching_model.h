// Dynamic batching across concurrent requests (the idea of TEI's queue.rs and Triton's dynamic
// batcher): a Model decorator that queues the forward calls of concurrent requests and runs
// calls with the same row shapes as one forward pass, stacked along dim 0, then hands each caller
// exactly its own rows of every output.
//
//   request A  Forward([8, L]) --\                         /--> A's 8 rows
//   request B  Forward([8, L]) ----> queue -> Forward([17, L]) --> B's 8 rows
//   request C  Forward([1, L]) --/   (same shape, budget)  \--> C's 1 row
//
// * Budget: a pass takes calls in arrival order while their bases (rows x bases_per_row) fit
//   max_batch_bases; a single call over the budget runs alone, never split. Calls whose inputs
//   differ in any non-batch dimension (or in the number of inputs) never share a pass.
// * Meeting: a pass below budget waits up to max_wait after its oldest call for company.
// * Backpressure: at most max_queue_bases wait in the queue; a call that would exceed it is refused
//   at once with OverloadedStatus() (503 service_unavailable, Retry-After 1 at the gateway). The
//   one exception is an empty queue, so a single call larger than the limit still runs.
// * Cancellation: a caller of ForwardUnlessCancelled whose check turns true while its call still
//   waits gets ForwardCancelledStatus() and its rows are removed; they never reach the model. A
//   call already running finishes and its caller gets the result.
// * Errors of a pass reach every call in it.
//
// `executors` threads per model take passes from the queue (one is the default: LibTorch's
// intra-op threads parallelise inside a pass).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "worker/models/model.h"

namespace dnaserve::worker {

struct BatchingOptions {
  std::string model_id;       // named in errors and logs
  int64_t bases_per_row = 1;  // bases one input row stands for (the manifest's context window)
  int64_t max_batch_bases = 32768;        // budget of one stacked forward pass
  int64_t max_queue_bases = 1048576;      // waiting bases beyond which calls are refused
  std::chrono::microseconds max_wait{0};  // how long a pass below budget waits for company
  int executors = 1;                      // threads running passes for this model
  // Optional: told the size of every pass as it starts (metrics). Runs under the queue's lock,
  // so it must be quick and must not call back into the model.
  std::function<void(size_t calls, int64_t rows)> on_pass;
};

struct BatchingStats {
  int64_t passes = 0;         // forward passes of the wrapped model
  int64_t merged_passes = 0;  // passes that served more than one call
  int64_t calls_run = 0;      // calls that reached the model
  int64_t refused = 0;        // calls refused because the queue was full
  int64_t withdrawn = 0;      // calls withdrawn by a cancelled caller before they ran
  int64_t queued_calls = 0;   // now waiting
  int64_t queued_bases = 0;   // now waiting
};

class BatchingModel final : public Model {
 public:
  BatchingModel(std::shared_ptr<Model> model, BatchingOptions options);
  // Running passes finish first. REQUIRES: no Forward call in progress (callers hold the model
  // through a shared_ptr, see ModelRegistry).
  ~BatchingModel() override;

  BatchingModel(const BatchingModel&) = delete;
  BatchingModel& operator=(const BatchingModel&) = delete;

  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override;
  StatusOr<std::vector<FloatTensor>> ForwardUnlessCancelled(const std::vector<IdTensor>& inputs,
                                                            const CancelCheck& cancelled) override;

  BatchingStats stats() const;
  const BatchingOptions& options() const { return options_; }

  // What a refused call returns: service_unavailable with a retry hint of 1 s.
  static bool IsOverloaded(const Status& status);

 private:
  struct Call;
  using Clock = std::chrono::steady_clock;

  void ExecutorLoop();
  // Bases of the calls that the head of the queue could take into its pass (up to the budget).
  int64_t MergeableBases() const;
  // Removes the head of the queue and the calls that join it; REQUIRES mu_ held, queue non-empty.
  std::vector<Call*> TakePass();
  // Runs one pass without the lock and stores each call's result.
  void RunPass(const std::vector<Call*>& pass);
  Status OverloadedStatus() const;

  const std::shared_ptr<Model> model_;
  const BatchingOptions options_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // executors: a call arrived, left, or stop
  std::condition_variable done_cv_;  // callers: a pass finished
  std::deque<Call*> queue_;          // waiting calls, oldest first; owned by their callers
  int64_t queued_bases_ = 0;
  bool stopping_ = false;
  BatchingStats stats_;
  std::vector<std::thread> executors_;
};

}  // namespace dnaserve::worker
