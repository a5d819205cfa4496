// BatchingModel with a gated fake model that records every pass it receives. The gate holds the
// model inside a pass so that the queue can be filled deterministically: nothing here depends on
// timing except generous "must not hang" guards.
#include "worker/batching/batching_model.h"
#include "worker/batching/fixed_rows_model.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "proto/status_codec.h"

namespace dnaserve::worker {
namespace {

using Outputs = StatusOr<std::vector<FloatTensor>>;

// A refusal at capacity: 503 with the one-second retry hint the gateway turns into Retry-After.
bool IsAtCapacity(const Status& status) {
  return status.code() == ErrorCode::kServiceUnavailable &&
         status.retry_after_seconds().value_or(0) == 1;
}

// Row r of caller c holds c * 100 + r in every position of every input, so any output value names
// the caller and row it was computed from.
int64_t RowId(int caller, int row) { return caller * 100 + row; }

std::vector<IdTensor> CallerInputs(int caller, int rows, std::vector<int64_t> widths = {4}) {
  std::vector<IdTensor> inputs;
  for (int64_t width : widths) {
    IdTensor t;
    t.shape = {rows, width};
    for (int r = 0; r < rows; ++r) t.data.insert(t.data.end(), width, RowId(caller, r));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// The fake: output 0 is [B] with each row's id (from input 0); output 1 is [B, inputs] with the
// row id read from every input, so misaligned multi-input stacking shows. Passes are recorded.
class RecordingModel : public Model {
 public:
  struct Pass {
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> row_ids;  // input 0, first value of each row
    std::thread::id thread;        // that ran the pass
  };

  Outputs Forward(const std::vector<IdTensor>& inputs) override {
    std::unique_lock<std::mutex> lock(mu_);
    Pass pass;
    pass.thread = std::this_thread::get_id();
    for (const auto& input : inputs) pass.shapes.push_back(input.shape);
    const int64_t rows = inputs[0].shape[0];
    const int64_t width = static_cast<int64_t>(inputs[0].data.size()) / rows;
    for (int64_t r = 0; r < rows; ++r) pass.row_ids.push_back(inputs[0].data[r * width]);
    passes_.push_back(pass);
    const int number = static_cast<int>(passes_.size());
    changed_.notify_all();
    changed_.wait(lock, [&] { return gate_open_; });
    if (fail_pass_ == number) return Internal("boom");
    if (pooled_output_) return std::vector<FloatTensor>{FloatTensor{{1}, {0.f}}};

    FloatTensor ids{{rows}, {}};
    FloatTensor all{{rows, static_cast<int64_t>(inputs.size())}, {}};
    for (int64_t r = 0; r < rows; ++r) {
      ids.data.push_back(static_cast<float>(pass.row_ids[r]));
      for (const auto& input : inputs) {
        const int64_t w = static_cast<int64_t>(input.data.size()) / rows;
        all.data.push_back(static_cast<float>(input.data[r * w]));
      }
    }
    return std::vector<FloatTensor>{ids, all};
  }

  void CloseGate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = false;
  }
  void OpenGate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = true;
    changed_.notify_all();
  }
  // Blocks until `n` passes have entered the model. After 30 s the test fails instead of hanging
  // (the gate opens so that every caller can return).
  void WaitForPasses(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_for(lock, std::chrono::seconds(30), [&] { return passes_.size() >= n; })) {
      gate_open_ = true;
      changed_.notify_all();
      lock.unlock();
      CATCH_FAIL("the model did not receive " << n << " passes within 30 s");
    }
  }
  void FailPass(int number) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_pass_ = number;
  }
  void ReturnPooledOutput() {
    std::lock_guard<std::mutex> lock(mu_);
    pooled_output_ = true;
  }
  std::vector<Pass> passes() {
    std::lock_guard<std::mutex> lock(mu_);
    return passes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool gate_open_ = true;
  int fail_pass_ = 0;
  bool pooled_output_ = false;
  std::vector<Pass> passes_;
};

BatchingOptions Options() {
  BatchingOptions options;
  options.model_id = "fake-model";
  options.bases_per_row = 10;
  options.max_batch_bases = 1000;
  options.max_queue_bases = 1000;
  options.max_wait = std::chrono::microseconds(0);
  return options;
}

// Polls the model's queue until `pred` holds. After 30 s the test fails instead of hanging (the
// gate opens so that every caller can return).
void WaitForQueue(BatchingModel& model, RecordingModel& fake,
                  const std::function<bool(const BatchingStats&)>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pred(model.stats())) {
    if (std::chrono::steady_clock::now() > deadline) {
      fake.OpenGate();
      CATCH_FAIL("the batching queue did not reach the expected state within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A caller on its own thread; the inputs are shared with that thread so a Caller can be moved.
struct Caller {
  int id;
  std::shared_ptr<const std::vector<IdTensor>> inputs;
  std::future<Outputs> result;
  std::shared_future<std::thread::id> thread;  // the caller's thread
};

// Runs `call` on a new thread as caller `id`.
Caller StartCall(int id, std::vector<IdTensor> inputs,
                 std::function<Outputs(const std::vector<IdTensor>&)> call) {
  Caller caller{id, std::make_shared<const std::vector<IdTensor>>(std::move(inputs)), {}, {}};
  auto thread = std::make_shared<std::promise<std::thread::id>>();
  caller.thread = thread->get_future().share();
  caller.result = std::async(std::launch::async, [in = caller.inputs, thread, call] {
    thread->set_value(std::this_thread::get_id());
    return call(*in);
  });
  return caller;
}

// A request of one call.
Caller Start(BatchingModel& model, int id, std::vector<IdTensor> inputs,
             CancelCheck cancelled = nullptr) {
  return StartCall(id, std::move(inputs), [&model, cancelled](const std::vector<IdTensor>& in) {
    return model.ForwardUnlessCancelled(in, cancelled);
  });
}

// The next call of a request whose view is `request`.
Caller StartOn(Model& request, int id, std::vector<IdTensor> inputs) {
  return StartCall(id, std::move(inputs),
                   [&request](const std::vector<IdTensor>& in) { return request.Forward(in); });
}

// The caller's result. A caller stuck for a minute fails the test instead of hanging it: the gate
// is opened so the stuck call can finish.
Outputs Await(Caller& caller, RecordingModel& fake) {
  if (caller.result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    fake.OpenGate();
    CATCH_FAIL_CHECK("caller " << caller.id << " did not return within 60 s");
  }
  return caller.result.get();
}

// The caller got exactly its own rows back, from every input.
void CheckOwnRows(const Caller& caller, const Outputs& out) {
  CATCH_INFO("caller " << caller.id);
  CATCH_REQUIRE(out.ok());
  const int64_t rows = (*caller.inputs)[0].shape[0];
  CATCH_REQUIRE(out->size() == 2);
  CATCH_CHECK((*out)[0].shape == std::vector<int64_t>{rows});
  CATCH_CHECK((*out)[1].shape ==
              std::vector<int64_t>{rows, static_cast<int64_t>(caller.inputs->size())});
  for (int64_t r = 0; r < rows; ++r) {
    CATCH_CHECK((*out)[0].data[r] == static_cast<float>(RowId(caller.id, static_cast<int>(r))));
    for (size_t k = 0; k < caller.inputs->size(); ++k) {
      CATCH_CHECK((*out)[1].data[r * caller.inputs->size() + k] ==
                  static_cast<float>(RowId(caller.id, static_cast<int>(r))));
    }
  }
}

std::set<int64_t> SeenRowIds(RecordingModel& fake) {
  std::set<int64_t> seen;
  for (const auto& pass : fake.passes()) seen.insert(pass.row_ids.begin(), pass.row_ids.end());
  return seen;
}

CATCH_TEST_CASE("batching: concurrent calls share one pass and each caller gets its own rows",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 2)));
  fake->WaitForPasses(1);  // caller 0 occupies the model; the others queue behind it
  const std::vector<int> rows = {1, 2, 3, 1, 2};
  for (int i = 0; i < 5; ++i) callers.push_back(Start(model, i + 1, CallerInputs(i + 1, rows[i])));
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 5; });
  CATCH_CHECK(model.stats().queued_bases == 90);
  fake->OpenGate();
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));

  const auto passes = fake->passes();
  CATCH_REQUIRE(passes.size() == 2);
  CATCH_CHECK(passes[0].shapes == std::vector<std::vector<int64_t>>{{2, 4}});
  CATCH_CHECK(passes[1].shapes == std::vector<std::vector<int64_t>>{{9, 4}});
  int64_t recorded = 0;
  for (const auto& pass : passes) recorded += pass.shapes[0][0];
  CATCH_CHECK(recorded == 2 + 1 + 2 + 3 + 1 + 2);
  // The second pass carried rows of all five queued callers.
  std::set<int64_t> callers_in_pass;
  for (int64_t id : passes[1].row_ids) callers_in_pass.insert(id / 100);
  CATCH_CHECK(callers_in_pass == std::set<int64_t>{1, 2, 3, 4, 5});
  // No executor threads: the first pass ran on caller 0's thread, the stacked one on the thread
  // of one of its callers.
  CATCH_CHECK(passes[0].thread == callers[0].thread.get());
  std::set<std::thread::id> stacked_callers;
  for (size_t i = 1; i < callers.size(); ++i) stacked_callers.insert(callers[i].thread.get());
  CATCH_CHECK(stacked_callers.count(passes[1].thread) == 1);
  const BatchingStats stats = model.stats();
  CATCH_CHECK(stats.passes == 2);
  CATCH_CHECK(stats.merged_passes == 1);
  CATCH_CHECK(stats.direct_passes == 1);
  CATCH_CHECK(stats.calls_run == 6);
  CATCH_CHECK(stats.queued_calls == 0);
  CATCH_CHECK(stats.queued_bases == 0);
}

CATCH_TEST_CASE(
    "batching: calls of different shapes never share a pass, multi-input calls "
    "stack every input",
    "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 1)));
  fake->WaitForPasses(1);
  callers.push_back(Start(model, 1, CallerInputs(1, 2, {4})));
  callers.push_back(Start(model, 2, CallerInputs(2, 2, {5})));     // wider rows
  callers.push_back(Start(model, 3, CallerInputs(3, 3, {4})));     // joins caller 1
  callers.push_back(Start(model, 4, CallerInputs(4, 1, {4, 6})));  // two inputs
  callers.push_back(Start(model, 5, CallerInputs(5, 1, {4, 7})));  // second input differs
  callers.push_back(Start(model, 6, CallerInputs(6, 2, {4, 6})));  // joins caller 4
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 6; });
  fake->OpenGate();
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));

  std::multiset<std::vector<std::vector<int64_t>>> shapes;
  for (const auto& pass : fake->passes()) {
    shapes.insert(pass.shapes);
    // Never two shapes of rows in one pass: every row of a pass came from callers of one shape.
    std::set<int64_t> callers_in_pass;
    for (int64_t id : pass.row_ids) callers_in_pass.insert(id / 100);
    const bool one_caller = callers_in_pass.size() == 1;
    const bool known_pair =
        callers_in_pass == std::set<int64_t>{1, 3} || callers_in_pass == std::set<int64_t>{4, 6};
    CATCH_CHECK((one_caller || known_pair));
  }
  const std::multiset<std::vector<std::vector<int64_t>>> expected = {
      {{1, 4}}, {{5, 4}}, {{2, 5}}, {{3, 4}, {3, 6}}, {{1, 4}, {1, 7}}};
  CATCH_CHECK(shapes == expected);
}

CATCH_TEST_CASE("batching: a pass stays within the bases budget, a larger call runs alone",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_batch_bases = 40;  // 4 rows of 10 bases
  BatchingModel model(fake, options);
  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 1)));
  fake->WaitForPasses(1);
  for (int id : {1, 2, 3}) callers.push_back(Start(model, id, CallerInputs(id, 2)));
  callers.push_back(Start(model, 4, CallerInputs(4, 6)));  // 60 bases > budget
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 4; });
  fake->OpenGate();
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));

  std::multiset<int64_t> rows;
  for (const auto& pass : fake->passes()) rows.insert(pass.shapes[0][0]);
  // Whatever the arrival order: caller 0 alone, two 2-row calls, the third, the 6-row call alone.
  CATCH_CHECK(rows == std::multiset<int64_t>{1, 4, 2, 6});
}

CATCH_TEST_CASE("batching: a request beyond the seats is refused at once with the overload status",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_queue_bases = 40;  // admitted requests may hold 4 rows of 10 bases
  BatchingModel model(fake, options);
  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 1)));  // running: holds a seat of 10
  fake->WaitForPasses(1);
  callers.push_back(Start(model, 1, CallerInputs(1, 2)));  // waiting: 20 more
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 1; });
  CATCH_CHECK(model.stats().admitted_requests == 2);
  CATCH_CHECK(model.stats().admitted_bases == 30);

  // 30 held + 20 > 40: refused without waiting for the gate.
  Caller overflow = Start(model, 7, CallerInputs(7, 2));
  const Outputs refused = Await(overflow, *fake);
  CATCH_REQUIRE_FALSE(refused.ok());
  const Status& status = refused.status();
  CATCH_CHECK(status.code() == ErrorCode::kServiceUnavailable);
  CATCH_REQUIRE(status.retry_after_seconds().has_value());
  CATCH_CHECK(*status.retry_after_seconds() == 1);
  CATCH_CHECK(status.message().find("at capacity") != std::string::npos);
  CATCH_CHECK(status.message().find("fake-model") != std::string::npos);
  // Over gRPC it stays the same Status: code name and retry hint travel in WorkerError.
  const grpc::Status wire = ToGrpcStatus(status);
  CATCH_CHECK(wire.error_code() == grpc::StatusCode::UNAVAILABLE);
  const Status back = FromGrpcStatus(wire);
  CATCH_CHECK(back.code() == ErrorCode::kServiceUnavailable);
  CATCH_CHECK(back.retry_after_seconds() == std::optional<int64_t>(1));
  CATCH_CHECK(model.stats().refused == 1);

  // A request that still fits (30 + 10 = 40) is admitted and waits.
  callers.push_back(Start(model, 2, CallerInputs(2, 1)));
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 2; });
  fake->OpenGate();
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));
  const std::set<int64_t> seen = SeenRowIds(*fake);
  CATCH_CHECK(seen.count(RowId(7, 0)) == 0);
  CATCH_CHECK(seen.count(RowId(7, 1)) == 0);
  CATCH_CHECK(model.stats().admitted_requests == 0);  // every seat was given back
  CATCH_CHECK(model.stats().admitted_bases == 0);
}

CATCH_TEST_CASE("batching: an idle model admits one request larger than the seats limit",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_queue_bases = 30;
  BatchingModel model(fake, options);
  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 1, CallerInputs(1, 10)));  // 100 bases, no seat taken: admitted
  fake->WaitForPasses(1);
  Caller more = Start(model, 2, CallerInputs(2, 1));  // now the seats are over their limit
  CATCH_CHECK(IsAtCapacity(Await(more, *fake).status()));
  fake->OpenGate();
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));
  // Once it is done, the next request is admitted again.
  Caller after = Start(model, 3, CallerInputs(3, 1));
  CheckOwnRows(after, Await(after, *fake));
}

CATCH_TEST_CASE("batching: an admitted request is never refused halfway, a new one is refused "
                "at its first call",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_queue_bases = 30;
  BatchingModel model(fake, options);
  std::unique_ptr<Model> a = model.ForRequest(nullptr);
  std::unique_ptr<Model> b = model.ForRequest([] { return false; });
  fake->CloseGate();
  Caller a1 = StartOn(*a, 1, CallerInputs(1, 2));  // A's first call: a seat of 20, running
  fake->WaitForPasses(1);
  Caller b1 = StartOn(*b, 2, CallerInputs(2, 1));  // B's first call: 20 + 10 = 30, admitted
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 1; });
  // C's first call would take the seats to 40: refused before any of its windows ran.
  std::unique_ptr<Model> c = model.ForRequest(nullptr);
  const std::vector<IdTensor> c_inputs = CallerInputs(3, 1);
  const Outputs refused = c->Forward(c_inputs);
  CATCH_CHECK(IsAtCapacity(refused.status()));
  fake->OpenGate();
  CheckOwnRows(a1, Await(a1, *fake));
  CheckOwnRows(b1, Await(b1, *fake));

  // A's second call is larger than its first (30 bases: 30 + 10 held > 30) and still runs: the
  // seat grows instead.
  Caller a2 = StartOn(*a, 4, CallerInputs(4, 3));
  CheckOwnRows(a2, Await(a2, *fake));
  BatchingStats stats = model.stats();
  CATCH_CHECK(stats.refused == 1);
  CATCH_CHECK(stats.admitted_requests == 2);
  CATCH_CHECK(stats.admitted_bases == 40);
  CATCH_CHECK(SeenRowIds(*fake).count(RowId(3, 0)) == 0);

  // Requests give their seats back when their views go: C (never admitted) changes nothing.
  c.reset();
  CATCH_CHECK(model.stats().admitted_bases == 40);
  a.reset();
  b.reset();
  stats = model.stats();
  CATCH_CHECK(stats.admitted_requests == 0);
  CATCH_CHECK(stats.admitted_bases == 0);
}

CATCH_TEST_CASE("batching: a lone call runs at once on its caller's thread, never queued",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->CloseGate();
  Caller lone = Start(model, 1, CallerInputs(1, 2), [] { return false; });
  fake->WaitForPasses(1);
  BatchingStats stats = model.stats();
  CATCH_CHECK(stats.queued_calls == 0);  // it went straight into the model
  CATCH_CHECK(stats.direct_passes == 1);
  fake->OpenGate();
  CheckOwnRows(lone, Await(lone, *fake));
  CATCH_CHECK(fake->passes()[0].thread == lone.thread.get());
  // The view of a request runs its calls the same way, one after another.
  std::unique_ptr<Model> request = model.ForRequest(nullptr);
  for (int call = 0; call < 3; ++call) {
    const std::vector<IdTensor> inputs = CallerInputs(2 + call, 1);
    CATCH_CHECK(request->Forward(inputs).ok());
    CATCH_CHECK(fake->passes().back().thread == std::this_thread::get_id());
  }
  stats = model.stats();
  CATCH_CHECK(stats.direct_passes == 4);
  CATCH_CHECK(stats.passes == 4);
  CATCH_CHECK(stats.merged_passes == 0);
}

CATCH_TEST_CASE("batching: a cancelled caller's waiting call is withdrawn and never runs",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->CloseGate();
  auto running_gone = std::make_shared<std::atomic<bool>>(false);
  auto queued_gone = std::make_shared<std::atomic<bool>>(false);
  Caller running =
      Start(model, 0, CallerInputs(0, 1), [running_gone] { return running_gone->load(); });
  fake->WaitForPasses(1);
  Caller cancelled =
      Start(model, 1, CallerInputs(1, 3), [queued_gone] { return queued_gone->load(); });
  Caller kept = Start(model, 2, CallerInputs(2, 2), [] { return false; });
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 2; });

  queued_gone->store(true);
  const Outputs withdrawn = Await(cancelled, *fake);  // returns while the gate is still closed
  CATCH_REQUIRE_FALSE(withdrawn.ok());
  CATCH_CHECK(Model::IsForwardCancelled(withdrawn.status()));
  BatchingStats stats = model.stats();
  CATCH_CHECK(stats.withdrawn == 1);
  CATCH_CHECK(stats.queued_calls == 1);
  CATCH_CHECK(stats.queued_bases == 20);

  // A call already inside the model is past withdrawal: its caller still gets the result.
  running_gone->store(true);
  fake->OpenGate();
  CheckOwnRows(running, Await(running, *fake));
  CheckOwnRows(kept, Await(kept, *fake));
  const std::set<int64_t> seen = SeenRowIds(*fake);
  for (int r = 0; r < 3; ++r) CATCH_CHECK(seen.count(RowId(1, r)) == 0);
  CATCH_CHECK(seen.count(RowId(2, 0)) == 1);

  // A caller that is gone before it calls never queues.
  const std::vector<IdTensor> late = CallerInputs(3, 1);
  const Outputs never = model.ForwardUnlessCancelled(late, [] { return true; });
  CATCH_CHECK(Model::IsForwardCancelled(never.status()));
  CATCH_CHECK(SeenRowIds(*fake).count(RowId(3, 0)) == 0);
  stats = model.stats();
  CATCH_CHECK(stats.calls_run == 2);
  CATCH_CHECK(stats.withdrawn == 1);
}

CATCH_TEST_CASE("batching: the error of a pass reaches every caller in it", "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->CloseGate();
  fake->FailPass(2);
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 1)));
  fake->WaitForPasses(1);
  for (int id : {1, 2, 3}) callers.push_back(Start(model, id, CallerInputs(id, 1)));
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 3; });
  fake->OpenGate();
  CheckOwnRows(callers[0], Await(callers[0], *fake));
  for (size_t i = 1; i < callers.size(); ++i) {
    const Outputs out = Await(callers[i], *fake);
    CATCH_REQUIRE_FALSE(out.ok());
    CATCH_CHECK(out.status().code() == ErrorCode::kInternal);
    CATCH_CHECK(out.status().message() == "boom");
  }
  CATCH_CHECK(fake->passes().size() == 2);  // the three failed together, in one pass
}

CATCH_TEST_CASE(
    "batching: a merged pass whose output is not batch-major fails every caller, "
    "a lone call gets the output untouched",
    "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingModel model(fake, Options());
  fake->ReturnPooledOutput();
  const std::vector<IdTensor> alone = CallerInputs(9, 2);
  const Outputs lone = model.Forward(alone);
  CATCH_REQUIRE(lone.ok());
  CATCH_CHECK((*lone)[0].shape == std::vector<int64_t>{1});

  fake->CloseGate();
  std::vector<Caller> callers;
  callers.push_back(Start(model, 0, CallerInputs(0, 1)));
  fake->WaitForPasses(2);
  for (int id : {1, 2}) callers.push_back(Start(model, id, CallerInputs(id, 1)));
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 2; });
  fake->OpenGate();
  CATCH_CHECK(Await(callers[0], *fake).ok());
  for (size_t i = 1; i < callers.size(); ++i) {
    const Outputs out = Await(callers[i], *fake);
    CATCH_REQUIRE_FALSE(out.ok());
    CATCH_CHECK(out.status().code() == ErrorCode::kInternal);
    CATCH_CHECK(out.status().message().find("fake-model") != std::string::npos);
  }
}

CATCH_TEST_CASE(
    "batching: a pass below budget waits for company, and runs once the budget is "
    "full",
    "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_batch_bases = 30;                  // three 1-row calls fill it
  options.max_wait = std::chrono::seconds(600);  // only a full budget can start the pass
  BatchingModel model(fake, options);
  std::vector<Caller> callers;
  for (int id : {1, 2, 3}) callers.push_back(Start(model, id, CallerInputs(id, 1)));
  for (auto& caller : callers) CheckOwnRows(caller, Await(caller, *fake));
  const auto passes = fake->passes();
  CATCH_REQUIRE(passes.size() == 1);
  CATCH_CHECK(passes[0].shapes[0][0] == 3);
}

CATCH_TEST_CASE("batching: max_passes passes run side by side", "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_passes = 2;
  BatchingModel model(fake, options);
  fake->CloseGate();
  Caller a = Start(model, 1, CallerInputs(1, 1, {4}));
  Caller b = Start(model, 2, CallerInputs(2, 1, {5}));  // another shape: its own pass
  fake->WaitForPasses(2);                               // both inside the model at once
  Caller c = Start(model, 3, CallerInputs(3, 1, {4}));  // both slots taken: it waits
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 1; });
  fake->OpenGate();
  CheckOwnRows(a, Await(a, *fake));
  CheckOwnRows(b, Await(b, *fake));
  CheckOwnRows(c, Await(c, *fake));
  CATCH_CHECK(model.stats().direct_passes == 2);
}

CATCH_TEST_CASE("model: the default ForwardUnlessCancelled checks once, then runs", "[batching]") {
  RecordingModel fake;
  const std::vector<IdTensor> inputs = CallerInputs(1, 1);
  CATCH_CHECK(
      Model::IsForwardCancelled(fake.ForwardUnlessCancelled(inputs, [] { return true; }).status()));
  CATCH_CHECK(fake.passes().empty());
  CATCH_CHECK(fake.ForwardUnlessCancelled(inputs, [] { return false; }).ok());
  CATCH_CHECK(fake.ForwardUnlessCancelled(inputs, nullptr).ok());
  CATCH_CHECK(fake.passes().size() == 2);
}


// Length-aware batching (max_call_rows, issue 28's fairness) and fixed-shape passes (issue 25).

std::vector<int64_t> PassRows(RecordingModel& fake) {
  std::vector<int64_t> rows;
  for (const auto& pass : fake.passes()) rows.push_back(pass.shapes[0][0]);
  return rows;
}

CATCH_TEST_CASE("batching: a call longer than max_call_rows runs in pieces, its rows back in order",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_call_rows = 2;
  options.max_batch_bases = 20;  // one piece per pass
  BatchingModel model(fake, options);
  Caller caller = Start(model, 1, CallerInputs(1, 5, {4, 3}));
  CheckOwnRows(caller, Await(caller, *fake));
  CATCH_CHECK(PassRows(*fake) == std::vector<int64_t>{2, 2, 1});
  CATCH_CHECK(model.stats().calls_run == 3);
  CATCH_CHECK(model.stats().admitted_requests == 0);  // the seat was given back
}

CATCH_TEST_CASE("batching: a short request behind a long one runs before the long one's next "
                "pieces",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_call_rows = 1;
  options.max_batch_bases = 10;  // one row per pass
  BatchingModel model(fake, options);
  // The long request has had one call of 3 rows; its second call has 4.
  auto long_request = model.ForRequest(nullptr);
  Caller first = StartOn(*long_request, 1, CallerInputs(1, 3));
  CheckOwnRows(first, Await(first, *fake));
  fake->CloseGate();
  Caller second = StartOn(*long_request, 2, CallerInputs(2, 4));
  fake->WaitForPasses(4);  // its first piece is in the model, three wait
  Caller short_call = Start(model, 3, CallerInputs(3, 2));
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 5; });
  fake->OpenGate();
  CheckOwnRows(second, Await(second, *fake));
  CheckOwnRows(short_call, Await(short_call, *fake));
  std::vector<int64_t> order;
  for (const auto& pass : fake->passes()) order.push_back(pass.row_ids[0]);
  // Both rows of the short request ran right after the piece that was running when it came.
  CATCH_CHECK(order ==
              std::vector<int64_t>{100, 101, 102, 200, 300, 301, 201, 202, 203});
}

CATCH_TEST_CASE("batching: a cancelled request's waiting pieces are withdrawn, none runs",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  BatchingOptions options = Options();
  options.max_call_rows = 1;
  options.max_batch_bases = 10;
  BatchingModel model(fake, options);
  fake->CloseGate();
  Caller blocker = Start(model, 1, CallerInputs(1, 1));
  fake->WaitForPasses(1);
  std::atomic<bool> gone{false};
  Caller cancelled = Start(model, 2, CallerInputs(2, 3), [&gone] { return gone.load(); });
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 3; });
  gone = true;
  WaitForQueue(model, *fake, [](const BatchingStats& s) { return s.queued_calls == 0; });
  fake->OpenGate();
  CheckOwnRows(blocker, Await(blocker, *fake));
  CATCH_CHECK(Model::IsForwardCancelled(Await(cancelled, *fake).status()));
  CATCH_CHECK(fake->passes().size() == 1);
  CATCH_CHECK(model.stats().withdrawn == 3);
}

CATCH_TEST_CASE("fixed rows: every pass has the fixed rows, filled with copies of a real row",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  FixedRowsModel model(fake, 4);
  const std::vector<IdTensor> six = CallerInputs(1, 6, {4, 3});
  Caller caller = StartCall(1, six, [&model](const std::vector<IdTensor>& in) {
    return model.Forward(in);
  });
  CheckOwnRows(caller, Await(caller, *fake));
  auto passes = fake->passes();
  CATCH_REQUIRE(passes.size() == 2);
  CATCH_CHECK(passes[0].shapes == std::vector<std::vector<int64_t>>{{4, 4}, {4, 3}});
  CATCH_CHECK(passes[1].shapes == std::vector<std::vector<int64_t>>{{4, 4}, {4, 3}});
  CATCH_CHECK(passes[0].row_ids == std::vector<int64_t>{100, 101, 102, 103});
  CATCH_CHECK(passes[1].row_ids == std::vector<int64_t>{104, 105, 104, 104});
  // A call of exactly the fixed rows goes straight through; so does one that is not batch-major.
  Caller exact = StartCall(2, CallerInputs(2, 4), [&model](const std::vector<IdTensor>& in) {
    return model.Forward(in);
  });
  CheckOwnRows(exact, Await(exact, *fake));
  std::vector<IdTensor> ragged = CallerInputs(3, 2);
  ragged.push_back(CallerInputs(3, 3)[0]);  // inputs disagree on dim 0
  CATCH_CHECK(model.Forward(ragged).ok());
  passes = fake->passes();
  CATCH_REQUIRE(passes.size() == 4);
  CATCH_CHECK(passes[2].shapes[0][0] == 4);
  CATCH_CHECK(passes[3].shapes[0][0] == 2);
}

CATCH_TEST_CASE("fixed rows: a model that drops the batch dimension is an internal error",
                "[batching]") {
  auto fake = std::make_shared<RecordingModel>();
  fake->ReturnPooledOutput();
  FixedRowsModel model(fake, 2);
  const auto out = model.Forward(CallerInputs(1, 3));
  CATCH_REQUIRE_FALSE(out.ok());
  CATCH_CHECK(out.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(out.status().message().find("rows first") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::worker
