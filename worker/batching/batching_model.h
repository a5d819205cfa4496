// Dynamic batching across concurrent requests (the idea of TEI's queue.rs and Triton's dynamic
// batcher): a Model decorator that queues the forward calls of concurrent requests and runs
// calls with the same row shapes as one forward pass, stacked along dim 0, then hands each caller
// exactly its own rows of every output.
//
//   request A  Forward([8, L]) --\                         /--> A's 8 rows
//   request B  Forward([8, L]) ----> queue -> Forward([17, L]) --> B's 8 rows
//   request C  Forward([1, L]) --/   (same shape, budget)  \--> C's 1 row
//
// * Callers run the passes; there are no executor threads. At most `max_passes` passes run at
//   once. A call that finds the queue empty and a pass slot free runs its own pass at once, on
//   its own thread, untouched (the fast path: a lone request pays one uncontended lock). Otherwise
//   it waits in the queue; when a slot frees, the caller of the oldest waiting call takes it and
//   runs one pass for that call and every call that may join it, while the others wait for their
//   rows. So calls stack exactly when the model is busy (continuous batching).
// * Budget: a pass takes calls in arrival order while their bases (rows x bases_per_row) fit
//   max_batch_bases; a single call over the budget runs alone, never split. Calls whose inputs
//   differ in any non-batch dimension (or in the number of inputs) never share a pass.
// * Meeting: with max_wait > 0 there is no fast path; a pass below budget waits up to max_wait
//   after its oldest call for company.
// * Admission, per request (ForRequest): a request is admitted or refused at its first call,
//   never later. An admitted request holds a seat of the bases of its largest call so far until
//   its view is destroyed; a request whose first call would take the seats past max_queue_bases
//   is refused at once with OverloadedStatus() (503 service_unavailable, Retry-After 1 at the
//   gateway), unless no request holds a seat (so one request larger than the limit still runs).
//   A later, larger call of an admitted request grows its seat and is never refused. Each request
//   has at most one call waiting, so the queue never holds more than max_queue_bases (plus that
//   growth).
// * Cancellation: a request whose check turns true while one of its calls still waits gets
//   ForwardCancelledStatus() and the call's rows are removed; they never reach the model. A call
//   already in a running pass finishes and its caller gets the result.
// * Length-aware order (max_call_rows > 0; the fairness of issue 28): a call of more rows is
//   queued as pieces of at most max_call_rows rows, and the next pass is built around the
//   waiting piece whose request has had the fewest rows queued before it (least attained
//   service; the oldest among equals) instead of the oldest. A short request arriving behind a
//   100 kb one thus waits only for the pieces already running, then goes first; requests of
//   equal size take turns piece by piece. The caller gets all its rows back in order, and the
//   request's seat is taken for the whole call before its first piece queues. (A stream of new
//   short requests can hold a long one back: admission, max_queue_bases, bounds that stream.)
// * Width-aware passes (max_call_rows > 0 and pass_width.window_columns > 0; pass_width.h): a
//   row counts the bases of its own width (its share of the serving window), not bases_per_row,
//   and a call's pieces and passes hold at most pass_width.RowsFor(its row width) rows instead of
//   max_call_rows: narrow rows stack many to a pass, serving-window rows R to a pass. A pass is
//   cut by its rows as well as by max_batch_bases, so it never holds more rows than the fixed
//   shape it runs as. Least attained service counts bases, so requests of narrow rows are not
//   charged for their row count.
// * Errors of a pass reach every call in it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/batching/pass_width.h"
#include "worker/models/model.h"

namespace dnaserve::worker {

struct BatchingOptions {
  std::string model_id;       // named in errors and logs
  int64_t bases_per_row = 1;  // bases one input row stands for (the manifest's context window)
  int64_t max_batch_bases = 32768;        // budget of one stacked forward pass
  int64_t max_queue_bases = 1048576;      // seats of admitted requests beyond which new ones wait
  std::chrono::microseconds max_wait{0};  // how long a pass below budget waits for company
  int max_passes = 1;                     // passes running at once (each on a caller's thread)
  int64_t max_call_rows = 0;              // longer calls queue in pieces of these rows; 0 = whole
  // With max_call_rows > 0: rows per pass by row width (window_columns 0: max_call_rows rows of
  // bases_per_row each, whatever the width).
  PassWidth pass_width;
  // Optional: told the size of every pass as it starts (metrics). Runs under the queue's lock,
  // so it must be quick and must not call back into the model.
  std::function<void(size_t calls, int64_t rows)> on_pass;
};

struct BatchingStats {
  int64_t passes = 0;         // forward passes of the wrapped model
  int64_t merged_passes = 0;  // passes that served more than one call
  int64_t direct_passes = 0;  // passes of a lone call that never queued (the fast path)
  int64_t calls_run = 0;      // calls that reached the model
  int64_t refused = 0;        // requests refused at their first call: the seats were taken
  int64_t withdrawn = 0;      // calls withdrawn by a cancelled caller before they ran
  int64_t queued_calls = 0;   // now waiting
  int64_t queued_bases = 0;   // now waiting
  int64_t admitted_requests = 0;  // now holding a seat
  int64_t admitted_bases = 0;     // their seats
};

class BatchingModel final : public Model {
 public:
  BatchingModel(std::shared_ptr<Model> model, BatchingOptions options);
  // REQUIRES: no request view alive and no Forward call in progress (callers hold the model
  // through a shared_ptr, see ModelRegistry).
  ~BatchingModel() override;

  BatchingModel(const BatchingModel&) = delete;
  BatchingModel& operator=(const BatchingModel&) = delete;

  // A request of one call that cannot be cancelled.
  StatusOr<std::vector<FloatTensor>> Forward(const std::vector<IdTensor>& inputs) override;
  // The request's seat is taken at its first call and given back when the view is destroyed.
  std::unique_ptr<Model> ForRequest(CancelCheck cancelled) override;

  BatchingStats stats() const;
  const BatchingOptions& options() const { return options_; }

 private:
  struct Call;
  class Request;
  struct Seat {
    bool admitted = false;
    int64_t bases = 0;
    int64_t bases_queued = 0;  // bases of all its calls so far: its attained service
  };
  using Clock = std::chrono::steady_clock;

  // Admits (or refuses) the seat's request, queues the call and waits for its rows, running a
  // pass whenever this call heads the queue and a slot is free.
  StatusOr<std::vector<FloatTensor>> Submit(const std::vector<IdTensor>& inputs,
                                            const CancelCheck& cancelled, Seat* seat);
  // The outputs of a call's pieces, all done, joined back into the call's rows in order.
  StatusOr<std::vector<FloatTensor>> JoinPieces(std::vector<Call>& pieces) const;
  // REQUIRES mu_ held, queue non-empty. The call the next pass is built around: the oldest, or
  // with max_call_rows the one whose request has had the fewest bases queued before it.
  Call* Head() const;
  void Release(Seat* seat);
  // REQUIRES mu_ held. Admits the request at its first call, or says why not.
  Status Admit(int64_t call_bases, Seat* seat);
  // REQUIRES mu_ held. True when the head of the queue should wait for company until `until`.
  bool HeadWaitsForCompany(Clock::time_point* until) const;
  // REQUIRES mu_ held, queue non-empty. The head of the queue and, when it stacks, the waiting
  // calls that stack with it within the pass budget (bases, and rows when passes have a fixed
  // shape), in queue order.
  std::vector<Call*> PassFromHead(int64_t* bases, int64_t* rows) const;
  // REQUIRES mu_ held, queue non-empty. Removes PassFromHead's calls from the queue.
  std::vector<Call*> TakePass();
  // REQUIRES mu_ held. Marks the pass running and counts it.
  void StartPass(const std::vector<Call*>& pass);
  // Runs one pass with mu_ released (`lock` is re-taken) and stores each call's result.
  void RunPassUnlocked(const std::vector<Call*>& pass, std::unique_lock<std::mutex>& lock);
  void RunPass(const std::vector<Call*>& pass);
  Status OverloadedStatus(int64_t call_bases) const;

  const std::shared_ptr<Model> model_;
  const BatchingOptions options_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a pass started or finished, a call arrived or left
  std::deque<Call*> queue_;          // waiting calls, oldest first; owned by their callers
  int64_t queued_bases_ = 0;
  int running_passes_ = 0;
  int64_t admitted_requests_ = 0;
  int64_t admitted_bases_ = 0;
  BatchingStats stats_;
};

}  // namespace dnaserve::worker
