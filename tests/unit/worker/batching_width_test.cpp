// Rows per pass that scale with the row width (worker/batching/pass_width.h, issue 25): the
// arithmetic, the pass shapes FixedRowsModel and BatchingModel build from it (a gated fake that
// records every pass), and the bits of the real splice-human model alone and in mixed batches.
#include "worker/batching/pass_width.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/test_env.h"
#include "worker/batching/batching_model.h"
#include "worker/batching/fixed_rows_model.h"
#include "worker/manifest/manifest.h"
#include "worker/models/torchscript_model.h"
#include "worker/service/worker_server.h"

namespace dnaserve::worker {
namespace {

using Outputs = StatusOr<std::vector<FloatTensor>>;

// R = 1 row of a 10-column serving window: up to 10 columns of narrower rows per pass.
PassWidth TenWide(int64_t max_rows = 0) {
  PassWidth width;
  width.rows_per_pass = 1;
  width.max_rows = max_rows;
  width.window_columns = 10;
  width.window_bases = 10;
  return width;
}

// `rows` rows `width` wide; row r holds id * 100 + r in every column.
std::vector<IdTensor> Rows(int id, int64_t rows, int64_t width) {
  IdTensor t;
  t.shape = {rows, width};
  for (int64_t r = 0; r < rows; ++r) t.data.insert(t.data.end(), width, id * 100 + r);
  return {t};
}

// A fake that records each pass's shape and row ids, held inside the model while the gate is
// closed, and answers [B] with each row's id.
class GatedModel : public Model {
 public:
  struct Pass {
    std::vector<int64_t> shape;
    std::vector<int64_t> row_ids;
  };

  Outputs Forward(const std::vector<IdTensor>& inputs) override {
    std::unique_lock<std::mutex> lock(mu_);
    Pass pass{inputs[0].shape, {}};
    const int64_t rows = inputs[0].shape[0];
    const int64_t width = static_cast<int64_t>(inputs[0].data.size()) / rows;
    FloatTensor ids{{rows}, {}};
    for (int64_t r = 0; r < rows; ++r) {
      pass.row_ids.push_back(inputs[0].data[r * width]);
      ids.data.push_back(static_cast<float>(inputs[0].data[r * width]));
    }
    passes_.push_back(pass);
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    return std::vector<FloatTensor>{ids};
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  // False after 30 s without `n` passes; the gate then opens, so that a failing test's callers
  // all return instead of hanging.
  bool WaitForPasses(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    if (changed_.wait_for(lock, std::chrono::seconds(30), [&] { return passes_.size() >= n; })) {
      return true;
    }
    open_ = true;
    changed_.notify_all();
    return false;
  }
  std::vector<Pass> passes() {
    std::lock_guard<std::mutex> lock(mu_);
    return passes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool open_ = true;
  std::vector<Pass> passes_;
};

// What the worker builds for a package with fixed-shape passes (worker_server.cc).
struct WidthStack {
  std::shared_ptr<GatedModel> fake = std::make_shared<GatedModel>();
  std::unique_ptr<BatchingModel> batcher;

  explicit WidthStack(PassWidth width) {
    BatchingOptions options;
    options.model_id = "fake";
    options.bases_per_row = width.window_bases;
    options.max_batch_bases = width.PassBases();
    options.max_call_rows = width.rows_per_pass;
    options.pass_width = width;
    options.max_passes = 1;
    batcher = std::make_unique<BatchingModel>(std::make_shared<FixedRowsModel>(fake, width),
                                              options);
  }
  std::future<Outputs> Call(std::vector<IdTensor> inputs) {
    return std::async(std::launch::async, [this, inputs = std::move(inputs)] {
      return batcher->Forward(inputs);
    });
  }
  // False after 30 s without exactly `calls` queued; the gate then opens (as above).
  bool WaitForQueued(int64_t calls) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (batcher->stats().queued_calls != calls) {
      if (std::chrono::steady_clock::now() > until) {
        fake->Open();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
};

// The caller got exactly its rows: ids id*100 + 0..rows-1, in order.
void CheckOwnRows(std::future<Outputs>& call, int id, int64_t rows) {
  CATCH_REQUIRE(call.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  Outputs out = call.get();
  CATCH_REQUIRE(out.ok());
  CATCH_REQUIRE((*out)[0].shape == std::vector<int64_t>{rows});
  for (int64_t r = 0; r < rows; ++r) CATCH_CHECK((*out)[0].data[r] == id * 100 + r);
}

CATCH_TEST_CASE("pass width: rows per pass scale with the row width within R windows",
                "[batching]") {
  const PassWidth width = TenWide();
  CATCH_CHECK(width.RowsFor(10) == 1);  // a serving-window row runs alone
  CATCH_CHECK(width.RowsFor(2) == 5);   // narrow rows share a pass
  CATCH_CHECK(width.RowsFor(5) == 2);   // the budget exactly met
  CATCH_CHECK(width.RowsFor(6) == 1);   // one column over half: alone
  CATCH_CHECK(width.RowsFor(40) == 1);  // wider than the window: alone, never zero rows
  CATCH_CHECK(width.RowsFor(1) == 10);
  CATCH_CHECK(width.RowsFor(0) == 1);   // no width known: R
  CATCH_CHECK(width.RowBases(2) == 2);
  CATCH_CHECK(width.PassBases() == 10);

  // splice-human: 15 kb windows, R = 1, the variant scorer's 2,165 bp blocks.
  PassWidth splice;
  splice.rows_per_pass = 1;
  splice.window_columns = 15000;
  splice.window_bases = 15000;
  CATCH_CHECK(splice.RowsFor(2165) == 6);
  CATCH_CHECK(splice.RowsFor(15000) == 1);
  CATCH_CHECK(splice.RowsFor(2165) * 2165 <= splice.PassBases());

  // An operator's explicit R caps the rows: narrow rows then run R to a pass, as before.
  PassWidth capped = splice;
  capped.rows_per_pass = 8;
  capped.max_rows = 8;
  CATCH_CHECK(capped.RowsFor(2165) == 8);
  CATCH_CHECK(capped.RowsFor(15000) == 8);
  CATCH_CHECK(TenWide(1).RowsFor(2) == 1);

  // No cap given: tiny rows stop at kMaxWidthScaledRows.
  PassWidth wide_window = splice;
  CATCH_CHECK(wide_window.RowsFor(10) == kMaxWidthScaledRows);

  // A tokenizer whose count depends on the bases (window_columns 0): R rows at every width.
  PassWidth unknown;
  unknown.rows_per_pass = 4;
  unknown.window_bases = 1000;
  CATCH_CHECK(unknown.RowsFor(10) == 4);
  CATCH_CHECK(unknown.RowBases(10) == 1000);
}

CATCH_TEST_CASE("pass width: fixed passes of a call are cut and filled by its row width",
                "[batching]") {
  auto fake = std::make_shared<GatedModel>();
  FixedRowsModel model(fake, TenWide());
  // 12 narrow rows: passes of 5, the last filled with copies of its first row.
  auto narrow = model.Forward(Rows(1, 12, 2));
  CATCH_REQUIRE(narrow.ok());
  CATCH_CHECK((*narrow)[0].shape == std::vector<int64_t>{12});
  // A wide call: one row a pass. Rows of half the window: two a pass (the budget exactly met).
  CATCH_REQUIRE(model.Forward(Rows(2, 2, 10)).ok());
  CATCH_REQUIRE(model.Forward(Rows(3, 3, 5)).ok());
  const auto passes = fake->passes();
  CATCH_REQUIRE(passes.size() == 7);
  CATCH_CHECK(passes[0].shape == std::vector<int64_t>{5, 2});
  CATCH_CHECK(passes[1].shape == std::vector<int64_t>{5, 2});
  CATCH_CHECK(passes[2].shape == std::vector<int64_t>{5, 2});
  CATCH_CHECK(passes[2].row_ids == std::vector<int64_t>{110, 111, 110, 110, 110});
  CATCH_CHECK(passes[3].shape == std::vector<int64_t>{1, 10});
  CATCH_CHECK(passes[4].shape == std::vector<int64_t>{1, 10});
  CATCH_CHECK(passes[5].shape == std::vector<int64_t>{2, 5});
  CATCH_CHECK(passes[6].shape == std::vector<int64_t>{2, 5});
  CATCH_CHECK(passes[6].row_ids == std::vector<int64_t>{302, 302});

  // With the operator's cap of 1, narrow rows run one a pass, as before.
  auto capped_fake = std::make_shared<GatedModel>();
  FixedRowsModel capped(capped_fake, TenWide(1));
  CATCH_REQUIRE(capped.Forward(Rows(4, 3, 2)).ok());
  CATCH_CHECK(capped_fake->passes().size() == 3);
  CATCH_CHECK(capped_fake->passes()[0].shape == std::vector<int64_t>{1, 2});
}

CATCH_TEST_CASE("pass width: the batcher packs narrow calls into one pass and runs a wide one alone",
                "[batching]") {
  WidthStack stack(TenWide());
  stack.fake->Close();
  auto blocker = stack.Call(Rows(1, 1, 10));  // holds the only pass slot
  CATCH_REQUIRE(stack.fake->WaitForPasses(1));
  // Queued in this order: two narrow calls that fit one pass together, a wide call, a narrow
  // call too long to join them, and two calls of half the window (together exactly the budget).
  auto a = stack.Call(Rows(2, 2, 2));
  CATCH_REQUIRE(stack.WaitForQueued(1));
  auto b = stack.Call(Rows(3, 2, 2));
  CATCH_REQUIRE(stack.WaitForQueued(2));
  auto wide = stack.Call(Rows(4, 1, 10));
  CATCH_REQUIRE(stack.WaitForQueued(3));
  auto c = stack.Call(Rows(5, 3, 2));
  CATCH_REQUIRE(stack.WaitForQueued(4));
  auto half1 = stack.Call(Rows(6, 1, 5));
  CATCH_REQUIRE(stack.WaitForQueued(5));
  auto half2 = stack.Call(Rows(7, 1, 5));
  CATCH_REQUIRE(stack.WaitForQueued(6));
  stack.fake->Open();
  CheckOwnRows(blocker, 1, 1);
  CheckOwnRows(a, 2, 2);
  CheckOwnRows(b, 3, 2);
  CheckOwnRows(wide, 4, 1);
  CheckOwnRows(c, 5, 3);
  CheckOwnRows(half1, 6, 1);
  CheckOwnRows(half2, 7, 1);
  const auto passes = stack.fake->passes();
  CATCH_REQUIRE(passes.size() == 5);
  CATCH_CHECK(passes[0].shape == std::vector<int64_t>{1, 10});
  // a and b share a pass of the narrow shape (5 rows; one filler); c (3 more) would exceed it.
  CATCH_CHECK(passes[1].shape == std::vector<int64_t>{5, 2});
  CATCH_CHECK(passes[1].row_ids == std::vector<int64_t>{200, 201, 300, 301, 200});
  CATCH_CHECK(passes[2].shape == std::vector<int64_t>{1, 10});
  CATCH_CHECK(passes[2].row_ids == std::vector<int64_t>{400});
  CATCH_CHECK(passes[3].shape == std::vector<int64_t>{5, 2});
  CATCH_CHECK(passes[3].row_ids == std::vector<int64_t>{500, 501, 502, 500, 500});
  // The two half-window calls fill the budget exactly: one pass, no filler.
  CATCH_CHECK(passes[4].shape == std::vector<int64_t>{2, 5});
  CATCH_CHECK(passes[4].row_ids == std::vector<int64_t>{600, 700});
  CATCH_CHECK(stack.batcher->stats().merged_passes == 2);
}

CATCH_TEST_CASE("pass width: a long narrow call queues in pieces of its pass rows and counts its "
                "own bases",
                "[batching]") {
  WidthStack stack(TenWide());
  stack.fake->Close();
  auto blocker = stack.Call(Rows(1, 1, 10));
  CATCH_REQUIRE(stack.fake->WaitForPasses(1));
  auto narrow = stack.Call(Rows(2, 12, 2));  // pieces of 5, 5 and 2 rows
  CATCH_REQUIRE(stack.WaitForQueued(3));
  // Its seat is its own 24 bases, not 12 serving windows.
  CATCH_CHECK(stack.batcher->stats().queued_bases == 24);
  stack.fake->Open();
  CheckOwnRows(blocker, 1, 1);
  CheckOwnRows(narrow, 2, 12);
  const auto passes = stack.fake->passes();
  CATCH_REQUIRE(passes.size() == 4);
  for (size_t i = 1; i < passes.size(); ++i) {
    CATCH_CHECK(passes[i].shape == std::vector<int64_t>{5, 2});
  }
}

// --------------------------------------------------------------------- the real splice model

bool SameBits(const FloatTensor& a, const FloatTensor& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// One row `width` wide of pseudo-random bases (char ids 1-4), different for every seed.
std::vector<IdTensor> SpliceRow(int seed, int64_t width) {
  IdTensor t;
  t.shape = {1, width};
  uint32_t state = 2166136261u ^ static_cast<uint32_t>(seed);
  for (int64_t i = 0; i < width; ++i) {
    state = state * 1664525u + 1013904223u;
    t.data.push_back(1 + static_cast<int64_t>((state >> 24) % 4));
  }
  return {t};
}

CATCH_TEST_CASE("pass width: splice-human gives the same bits alone and in mixed-width batches",
                "[batching]") {
  auto manifest = LoadManifest(testing::SourceDir() + "/worker/packages/splice-human");
  CATCH_REQUIRE(manifest.ok());
  auto torch = LoadTorchScriptModel(manifest->WeightsPath());
  CATCH_REQUIRE(torch.ok());
  // As the worker runs the package with no --batch-rows-per-pass: R = 1, scaled by width.
  const PassWidth width = PassWidthFor(*manifest, -1);
  CATCH_REQUIRE(width.window_columns == 15000);
  CATCH_REQUIRE(width.RowsFor(2165) == 6);
  BatchingOptions options;
  options.model_id = manifest->id;
  options.max_batch_bases = width.PassBases();
  options.max_call_rows = width.rows_per_pass;
  options.pass_width = width;
  options.max_passes = 1;
  options.max_wait = std::chrono::milliseconds(300);  // calls wait for company: passes stack
  std::vector<int64_t> pass_rows;
  std::mutex pass_mu;
  options.on_pass = [&](size_t, int64_t rows) {
    std::lock_guard<std::mutex> lock(pass_mu);
    pass_rows.push_back(rows);
  };
  BatchingModel batcher(std::make_shared<FixedRowsModel>(*torch, width), options);

  // Narrow blocks, rows of half the window (two fill the budget exactly) and a full window.
  struct Case {
    int seed;
    int64_t width;
  };
  const std::vector<Case> cases = {{1, 2165}, {2, 2165}, {3, 2165}, {4, 2165}, {5, 2165},
                                   {6, 2165}, {7, 2165}, {8, 7500}, {9, 7500}, {10, 15000}};
  std::vector<std::vector<FloatTensor>> alone;
  for (const Case& c : cases) {
    auto out = batcher.Forward(SpliceRow(c.seed, c.width));
    CATCH_REQUIRE(out.ok());
    alone.push_back(std::move(out).value());
  }
  // A narrow block's scores are the model's: a one-row forward agrees within rounding.
  auto single = (*torch)->Forward(SpliceRow(1, 2165));
  CATCH_REQUIRE(single.ok());
  CATCH_REQUIRE((*single)[0].data.size() == alone[0][0].data.size());
  for (size_t i = 0; i < (*single)[0].data.size(); ++i) {
    CATCH_REQUIRE(std::abs((*single)[0].data[i] - alone[0][0].data[i]) < 1e-4f);
  }

  // All at once, in two orders: every row's outputs keep their bits, whatever shares its pass.
  for (bool reversed : {false, true}) {
    std::vector<std::future<Outputs>> calls;
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[reversed ? cases.size() - 1 - k : k];
      calls.push_back(std::async(std::launch::async, [&batcher, c] {
        return batcher.Forward(SpliceRow(c.seed, c.width));
      }));
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      const size_t i = reversed ? cases.size() - 1 - k : k;
      Outputs out = calls[k].get();
      CATCH_REQUIRE(out.ok());
      CATCH_INFO("seed " << cases[i].seed << ", width " << cases[i].width);
      CATCH_REQUIRE(out->size() == alone[i].size());
      for (size_t o = 0; o < out->size(); ++o) CATCH_CHECK(SameBits((*out)[o], alone[i][o]));
    }
  }
  // And a narrow call of many rows (cut into pieces of 6) against its rows alone.
  std::vector<IdTensor> many = SpliceRow(1, 2165);
  for (int seed = 2; seed <= 7; ++seed) {
    const auto row = SpliceRow(seed, 2165);
    many[0].data.insert(many[0].data.end(), row[0].data.begin(), row[0].data.end());
  }
  many[0].shape = {7, 2165};
  auto together = batcher.Forward(many);
  CATCH_REQUIRE(together.ok());
  const size_t per_row = alone[0][0].data.size();
  CATCH_REQUIRE((*together)[0].data.size() == 7 * per_row);
  for (size_t r = 0; r < 7; ++r) {
    CATCH_CHECK(std::memcmp((*together)[0].data.data() + r * per_row, alone[r][0].data.data(),
                            per_row * sizeof(float)) == 0);
  }
  // No pass ever held more rows than its shape: 6 narrow, 2 half-window, 1 full.
  std::lock_guard<std::mutex> lock(pass_mu);
  for (int64_t rows : pass_rows) CATCH_CHECK(rows <= 6);
}

}  // namespace
}  // namespace dnaserve::worker
