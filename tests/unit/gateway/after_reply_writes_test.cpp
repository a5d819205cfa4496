// AfterReplyWrites (gateway/handlers/after_reply_writes.h): a full queue makes the caller write
// inline and counts it; a lease release waiting behind a write can be made at once by an
// admission; a flush past its deadline reports what it left.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "gateway/handlers/after_reply_writes.h"
#include "tests/support/counting_quota_store.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

namespace {

// Queues a write that blocks the writer until `open`; returns once it has started.
void BlockWriter(AfterReplyWrites& writes, std::shared_future<void> open) {
  auto started = std::make_shared<std::promise<void>>();
  auto started_future = started->get_future();
  writes.Write([started, open] {
    started->set_value();
    open.wait_for(std::chrono::seconds(15));  // bounded: a failing test must not hang
  });
  REQUIRE(started_future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
}

}  // namespace

TEST_CASE("after-reply writes: a full queue is written inline by the caller, and counted",
          "[after_reply]") {
  AfterReplyWrites writes(/*capacity=*/1);
  writes.Start();
  std::promise<void> open;
  BlockWriter(writes, open.get_future().share());
  std::atomic<int> queued_ran{0};
  writes.Write([&] { ++queued_ran; });  // fills the queue
  CHECK(writes.counts().pending == 2);
  std::thread::id inline_thread;
  writes.Write([&] { inline_thread = std::this_thread::get_id(); });
  CHECK(inline_thread == std::this_thread::get_id());  // ran here, before Write returned
  CHECK(writes.counts().done_inline == 1);
  open.set_value();
  CHECK(writes.Flush(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  CHECK(queued_ran == 1);
  CHECK(writes.counts().pending == 0);
}

TEST_CASE("after-reply writes: an admission releases a client's lease still waiting",
          "[after_reply]") {
  testing::CountingQuotaStore quotas;
  AfterReplyWrites writes;
  writes.Start();
  std::promise<void> open;
  BlockWriter(writes, open.get_future().share());
  writes.ReleaseLease(std::make_shared<QuotaLease>(&quotas, Principal{"bob"}, "lease-1"));
  CHECK(quotas.released == 0);  // behind the blocked write
  CHECK_FALSE(writes.ReleasePendingFor("carol", writes.releases_done()));
  CHECK(quotas.released == 0);
  const uint64_t seen = writes.releases_done();
  CHECK(writes.ReleasePendingFor("bob", seen));
  CHECK(quotas.released == 1);
  // Nothing left for bob; but a refusal read before that release is worth asking again.
  CHECK_FALSE(writes.ReleasePendingFor("bob", writes.releases_done()));
  CHECK(writes.ReleasePendingFor("bob", seen));
  open.set_value();
  CHECK(writes.Flush(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  CHECK(quotas.released == 1);  // released once, not again by the writer
}

TEST_CASE("after-reply writes: a flush past its deadline says so, later writes are inline",
          "[after_reply]") {
  testing::CountingQuotaStore quotas;
  AfterReplyWrites writes;
  writes.Start();
  std::promise<void> open;
  BlockWriter(writes, open.get_future().share());
  std::atomic<int> ran{0};
  writes.Write([&] { ++ran; });
  writes.ReleaseLease(std::make_shared<QuotaLease>(&quotas, Principal{"bob"}, "lease-2"));
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(writes.Flush(started + std::chrono::milliseconds(100)));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  CHECK(ran == 0);               // left behind (counted)
  CHECK(quotas.released == 1);   // a pending lease is released all the same
  CHECK(writes.counts().left_unwritten >= 1);
  writes.Write([&] { ++ran; });  // stopped: done here
  CHECK(ran == 1);
  open.set_value();
}
