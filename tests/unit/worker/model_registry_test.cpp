#include "worker/models/model_registry.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

using testing::FakeModel;
using testing::TestManifest;

std::shared_ptr<Model> NewFake() {
  return std::make_shared<FakeModel>(
      [](const std::vector<IdTensor>&) -> StatusOr<std::vector<FloatTensor>> {
        return std::vector<FloatTensor>{};
      });
}

std::vector<ModelManifest> TwoPromoters() {
  ModelManifest a = TestManifest(Task::kPromoter);
  a.id = "promoter-a";
  a.is_default = false;
  ModelManifest b = TestManifest(Task::kPromoter);
  b.id = "promoter-b";
  b.is_default = true;
  return {b, a};
}

CATCH_TEST_CASE("registry: lazy load, cold then warm", "[registry]") {
  std::atomic<int> loads{0};
  ModelRegistry registry(TwoPromoters(),
                         [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
                           ++loads;
                           std::this_thread::sleep_for(std::chrono::milliseconds(20));
                           return NewFake();
                         });
  CATCH_CHECK(loads == 0);  // nothing loads at startup
  CATCH_REQUIRE(registry.manifests().size() == 2);
  CATCH_CHECK(registry.manifests()[0]->id == "promoter-a");
  CATCH_CHECK(registry.DefaultManifest()->id == "promoter-b");

  auto first = registry.Acquire("promoter-a");
  CATCH_REQUIRE(first.ok());
  CATCH_CHECK(first->cold_start);
  CATCH_CHECK(first->load_time_ms >= 15);
  CATCH_CHECK(first->manifest->id == "promoter-a");
  auto second = registry.Acquire("promoter-a");
  CATCH_REQUIRE(second.ok());
  CATCH_CHECK_FALSE(second->cold_start);
  CATCH_CHECK(second->load_time_ms == 0);
  CATCH_CHECK(second->model == first->model);
  CATCH_CHECK(loads == 1);

  auto by_default = registry.Acquire("");
  CATCH_REQUIRE(by_default.ok());
  CATCH_CHECK(by_default->manifest->id == "promoter-b");
  CATCH_CHECK(by_default->cold_start);
  CATCH_CHECK(loads == 2);
  CATCH_CHECK(registry.LoadedCount() == 2);
}

CATCH_TEST_CASE("registry: unknown model -> model_not_found with the roster", "[registry]") {
  ModelRegistry registry(TwoPromoters(), [](const ModelManifest&) {
    return StatusOr<std::shared_ptr<Model>>(NewFake());
  });
  auto missing = registry.Acquire("nope");
  CATCH_REQUIRE_FALSE(missing.ok());
  CATCH_CHECK(missing.status().code() == ErrorCode::kModelNotFound);
  const auto* details = std::get_if<ModelNotFoundDetails>(&missing.status().details());
  CATCH_REQUIRE(details != nullptr);
  CATCH_CHECK(details->available_models == std::vector<std::string>{"promoter-a", "promoter-b"});

  ModelRegistry empty(
      {}, [](const ModelManifest&) { return StatusOr<std::shared_ptr<Model>>(NewFake()); });
  CATCH_CHECK(empty.DefaultManifest() == nullptr);
  CATCH_CHECK(empty.Acquire("").status().code() == ErrorCode::kModelNotFound);
}

CATCH_TEST_CASE("registry: concurrent first requests share one load", "[registry]") {
  std::atomic<int> loads{0};
  ModelRegistry registry(TwoPromoters(),
                         [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
                           ++loads;
                           std::this_thread::sleep_for(std::chrono::milliseconds(200));
                           return NewFake();
                         });
  std::vector<std::thread> threads;
  std::vector<StatusOr<ModelLease>> leases(6, Status(ErrorCode::kInternal, "unset"));
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] { leases[i] = registry.Acquire("promoter-b"); });
  }
  for (auto& t : threads) t.join();
  CATCH_CHECK(loads == 1);
  for (const auto& lease : leases) {
    CATCH_REQUIRE(lease.ok());
    CATCH_CHECK(lease->cold_start);  // none of them found the model ready
    CATCH_CHECK(lease->model == leases[0]->model);
  }
}

CATCH_TEST_CASE("registry: a failed load is model_loading and is retried", "[registry]") {
  std::atomic<int> loads{0};
  ModelRegistry registry(
      TwoPromoters(), [&](const ModelManifest& m) -> StatusOr<std::shared_ptr<Model>> {
        if (++loads == 1)
          return Internal("cannot load TorchScript file " + m.WeightsPath() + ": bad zip");
        return NewFake();
      });
  auto failed = registry.Acquire("promoter-a");
  CATCH_REQUIRE_FALSE(failed.ok());
  CATCH_CHECK(failed.status().code() == ErrorCode::kModelLoading);
  CATCH_CHECK(failed.status().message().find("model 'promoter-a' could not be loaded") !=
              std::string::npos);
  CATCH_CHECK(failed.status().message().find("bad zip") != std::string::npos);
  CATCH_CHECK(failed.status().retry_after_seconds() == 30);
  CATCH_CHECK(registry.LoadedCount() == 0);

  auto retried = registry.Acquire("promoter-a");
  CATCH_REQUIRE(retried.ok());
  CATCH_CHECK(retried->cold_start);
  CATCH_CHECK(loads == 2);
}

CATCH_TEST_CASE("registry: waiters see a competing load fail", "[registry]") {
  std::atomic<int> loads{0};
  ModelRegistry registry(TwoPromoters(),
                         [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
                           ++loads;
                           std::this_thread::sleep_for(std::chrono::milliseconds(200));
                           return Internal("corrupt weights");
                         });
  std::vector<StatusOr<ModelLease>> leases(3, Status(ErrorCode::kInternal, "unset"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] { leases[i] = registry.Acquire("promoter-a"); });
  }
  for (auto& t : threads) t.join();
  CATCH_CHECK(loads == 1);
  for (const auto& lease : leases) {
    CATCH_REQUIRE_FALSE(lease.ok());
    CATCH_CHECK(lease.status().code() == ErrorCode::kModelLoading);
    CATCH_CHECK(lease.status().message().find("corrupt weights") != std::string::npos);
  }
}

CATCH_TEST_CASE("registry: a load slower than the wait bound -> model_loading", "[registry]") {
  ModelRegistry registry(
      TwoPromoters(),
      [&](const ModelManifest&) -> StatusOr<std::shared_ptr<Model>> {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        return NewFake();
      },
      std::chrono::milliseconds(50));
  bool loader_ok = false;  // Catch2 assertions are not thread-safe: check after join()
  std::thread loader([&] { loader_ok = registry.Acquire("promoter-a").ok(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto waiting = registry.Acquire("promoter-a");
  loader.join();
  CATCH_CHECK(loader_ok);
  CATCH_REQUIRE_FALSE(waiting.ok());
  CATCH_CHECK(waiting.status().code() == ErrorCode::kModelLoading);
  CATCH_CHECK(waiting.status().message().find("still loading") != std::string::npos);
  CATCH_CHECK(registry.Acquire("promoter-a").ok());
}

}  // namespace
}  // namespace dnaserve::worker
