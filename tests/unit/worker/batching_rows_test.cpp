// The pure stacking helpers of dynamic batching: signatures, stacking along dim 0, cutting back.
#include <catch2/catch.hpp>

#include "worker/batching/row_batch.h"

namespace dnaserve::worker {
namespace {

IdTensor Ids(std::vector<int64_t> shape, int64_t first) {
  IdTensor t;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  for (int64_t i = 0; i < n; ++i) t.data.push_back(first + i);
  return t;
}

CATCH_TEST_CASE("row batch: signatures decide what may share a pass", "[batching]") {
  const RowSignature a = SignatureOf({Ids({2, 5}, 0)});
  CATCH_CHECK(a.mergeable);
  CATCH_CHECK(a.rows == 2);
  CATCH_CHECK(a.MergesWith(SignatureOf({Ids({7, 5}, 0)})));
  CATCH_CHECK_FALSE(a.MergesWith(SignatureOf({Ids({2, 6}, 0)})));                  // other width
  CATCH_CHECK_FALSE(a.MergesWith(SignatureOf({Ids({2, 5, 1}, 0)})));               // other rank
  CATCH_CHECK_FALSE(a.MergesWith(SignatureOf({Ids({2, 5}, 0), Ids({2, 3}, 0)})));  // 2 inputs

  // Two inputs (expression: window ids and description bytes): both non-batch shapes count.
  const RowSignature two = SignatureOf({Ids({1, 9}, 0), Ids({1, 4}, 0)});
  CATCH_CHECK(two.mergeable);
  CATCH_CHECK(two.MergesWith(SignatureOf({Ids({3, 9}, 0), Ids({3, 4}, 0)})));
  CATCH_CHECK_FALSE(two.MergesWith(SignatureOf({Ids({1, 9}, 0), Ids({1, 5}, 0)})));

  // Not mergeable: no inputs, a scalar, rows that disagree, a buffer of the wrong size, 0 rows.
  CATCH_CHECK_FALSE(SignatureOf({}).mergeable);
  CATCH_CHECK_FALSE(SignatureOf({Ids({}, 0)}).mergeable);
  CATCH_CHECK_FALSE(SignatureOf({Ids({2, 9}, 0), Ids({1, 4}, 0)}).mergeable);
  IdTensor short_buffer = Ids({2, 5}, 0);
  short_buffer.data.pop_back();
  CATCH_CHECK_FALSE(SignatureOf({short_buffer}).mergeable);
  CATCH_CHECK_FALSE(SignatureOf({Ids({0, 5}, 0)}).mergeable);
  CATCH_CHECK_FALSE(SignatureOf({}).MergesWith(SignatureOf({})));
}

CATCH_TEST_CASE("row batch: stacking concatenates every input along dim 0, in call order",
                "[batching]") {
  const std::vector<IdTensor> first = {Ids({1, 3}, 100), Ids({1, 2}, 500)};
  const std::vector<IdTensor> second = {Ids({2, 3}, 200), Ids({2, 2}, 600)};
  const auto stacked = StackRows({&first, &second});
  CATCH_REQUIRE(stacked.size() == 2);
  CATCH_CHECK(stacked[0].shape == std::vector<int64_t>{3, 3});
  CATCH_CHECK(stacked[0].data == std::vector<int64_t>{100, 101, 102, 200, 201, 202, 203, 204, 205});
  CATCH_CHECK(stacked[1].shape == std::vector<int64_t>{3, 2});
  CATCH_CHECK(stacked[1].data == std::vector<int64_t>{500, 501, 600, 601, 602, 603});
  CATCH_CHECK(StackRows({}).empty());
}

CATCH_TEST_CASE("row batch: splitting hands each call exactly its rows of every output",
                "[batching]") {
  FloatTensor per_row{{3}, {1.f, 2.f, 3.f}};
  FloatTensor per_token{{3, 2, 2}, {}};
  for (int i = 0; i < 12; ++i) per_token.data.push_back(static_cast<float>(i));
  auto split = SplitRows({per_row, per_token}, {1, 2});
  CATCH_REQUIRE(split.ok());
  CATCH_REQUIRE(split->size() == 2);
  const auto& a = (*split)[0];
  const auto& b = (*split)[1];
  CATCH_REQUIRE(a.size() == 2);
  CATCH_CHECK(a[0].shape == std::vector<int64_t>{1});
  CATCH_CHECK(a[0].data == std::vector<float>{1.f});
  CATCH_CHECK(a[1].shape == std::vector<int64_t>{1, 2, 2});
  CATCH_CHECK(a[1].data == std::vector<float>{0.f, 1.f, 2.f, 3.f});
  CATCH_CHECK(b[0].shape == std::vector<int64_t>{2});
  CATCH_CHECK(b[0].data == std::vector<float>{2.f, 3.f});
  CATCH_CHECK(b[1].shape == std::vector<int64_t>{2, 2, 2});
  CATCH_CHECK(b[1].data == std::vector<float>{4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f});
}

CATCH_TEST_CASE("row batch: the first call keeps the pass's output buffers, the others get copies",
                "[batching]") {
  std::vector<FloatTensor> outputs = {FloatTensor{{4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}}};
  const float* buffer = outputs[0].data.data();
  auto split = SplitRows(std::move(outputs), {3, 1});
  CATCH_REQUIRE(split.ok());
  const FloatTensor& first = (*split)[0][0];
  const FloatTensor& second = (*split)[1][0];
  CATCH_CHECK(first.data.data() == buffer);
  CATCH_CHECK(first.shape == std::vector<int64_t>{3, 2});
  CATCH_CHECK(first.data == std::vector<float>{0, 1, 2, 3, 4, 5});
  CATCH_CHECK(second.data.data() != buffer);
  CATCH_CHECK(second.shape == std::vector<int64_t>{1, 2});
  CATCH_CHECK(second.data == std::vector<float>{6, 7});
}

CATCH_TEST_CASE("row batch: outputs that are not batch-major cannot be split", "[batching]") {
  // Fewer rows than were stacked (e.g. a model that pools over the batch).
  auto fewer = SplitRows({FloatTensor{{1}, {0.5f}}}, {1, 2});
  CATCH_REQUIRE_FALSE(fewer.ok());
  CATCH_CHECK(fewer.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(fewer.status().message().find("output 0") != std::string::npos);
  CATCH_CHECK(fewer.status().message().find("[1]") != std::string::npos);
  // A scalar output.
  CATCH_CHECK_FALSE(SplitRows({FloatTensor{{}, {0.5f}}}, {1}).ok());
  // A buffer that does not match its shape; the second output is the bad one.
  auto mismatched = SplitRows({FloatTensor{{2}, {1.f, 2.f}}, FloatTensor{{2, 2}, {1.f}}}, {1, 1});
  CATCH_REQUIRE_FALSE(mismatched.ok());
  CATCH_CHECK(mismatched.status().message().find("output 1") != std::string::npos);
}

}  // namespace
}  // namespace dnaserve::worker
