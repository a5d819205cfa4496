#include <catch2/catch.hpp>

#include "core/dispatch/model_catalogue.h"
#include "core/dispatch/worker_client.h"
#include "gateway/handlers/job_start.h"

using namespace dnaserve;
using namespace dnaserve::core;
using namespace dnaserve::gateway;

namespace {
worker::v1::ModelInfo Model(const std::string& id, bool is_default) {
  worker::v1::ModelInfo m;
  m.set_id(id);
  m.set_is_default(is_default);
  return m;
}
}  // namespace

TEST_CASE("ModelCatalogue resolves against the workers' rosters", "[gateway]") {
  core::ModelCatalogue catalogue;

  SECTION("an unknown roster is 503, not 404") {
    auto r = catalogue.Resolve(Task::kPromoter, std::nullopt);
    CHECK(r.status().code() == ErrorCode::kServiceUnavailable);
  }

  catalogue.SetModels(Task::kPromoter, {Model("p-fly", false), Model("p-human", true)});
  catalogue.SetModels(Task::kSplice, {Model("s-human", true)});

  SECTION("omitted or empty -> the default") {
    CHECK(catalogue.Resolve(Task::kPromoter, std::nullopt)->id() == "p-human");
    CHECK(catalogue.Resolve(Task::kPromoter, std::string())->id() == "p-human");
    CHECK(*catalogue.DefaultModel(Task::kPromoter) == "p-human");
  }
  SECTION("a named model of the task") {
    CHECK(catalogue.Resolve(Task::kPromoter, std::string("p-fly"))->id() == "p-fly");
  }
  SECTION("unknown id -> model_not_found listing the task's models") {
    auto r = catalogue.Resolve(Task::kPromoter, std::string("nope"));
    REQUIRE(r.status().code() == ErrorCode::kModelNotFound);
    const auto& d = std::get<ModelNotFoundDetails>(r.status().details());
    CHECK(d.available_models == std::vector<std::string>{"p-fly", "p-human"});
  }
  SECTION("a model of another task -> task_not_supported_by_model") {
    auto r = catalogue.Resolve(Task::kPromoter, std::string("s-human"));
    REQUIRE(r.status().code() == ErrorCode::kTaskNotSupportedByModel);
    const auto& d = std::get<TaskNotSupportedDetails>(r.status().details());
    CHECK(d.task == "promoter");
    CHECK(d.supported_tasks == std::vector<std::string>{"splice"});
  }
}

TEST_CASE("worker addresses parse per family with replicas", "[gateway]") {
  auto parsed = core::WorkerEndpoints::Parse("promoter=127.0.0.1:1, splice=a:2;b:3");
  REQUIRE(parsed.ok());
  CHECK(parsed->addresses.at(Task::kPromoter) == std::vector<std::string>{"127.0.0.1:1"});
  CHECK(parsed->addresses.at(Task::kSplice) == std::vector<std::string>{"a:2", "b:3"});
  CHECK_FALSE(core::WorkerEndpoints::Parse("promoter").ok());
  CHECK_FALSE(core::WorkerEndpoints::Parse("telepathy=a:1").ok());
}

TEST_CASE("Prefer: respond-async is recognised among other preferences", "[gateway]") {
  CHECK(PrefersRespondAsync(std::string("respond-async")));
  CHECK(PrefersRespondAsync(std::string("Respond-Async")));
  CHECK(PrefersRespondAsync(std::string("wait=10, respond-async")));
  CHECK(PrefersRespondAsync(std::string("respond-async; foo")));
  CHECK_FALSE(PrefersRespondAsync(std::nullopt));
  CHECK_FALSE(PrefersRespondAsync(std::string("return=minimal")));
  CHECK_FALSE(PrefersRespondAsync(std::string("respond-asynchronously")));
}

TEST_CASE("ModelCatalogue finds the task of a model for its card", "[gateway][cards]") {
  core::ModelCatalogue catalogue;
  CHECK(catalogue.TaskOfModel("p-human").status().code() == ErrorCode::kModelNotFound);
  catalogue.SetModels(Task::kPromoter, {Model("p-fly", false), Model("p-human", true)});
  catalogue.SetModels(Task::kSplice, {Model("s-human", true)});
  CHECK(*catalogue.TaskOfModel("p-fly") == Task::kPromoter);
  CHECK(*catalogue.TaskOfModel("s-human") == Task::kSplice);
  auto missing = catalogue.TaskOfModel("../p-human");
  REQUIRE(missing.status().code() == ErrorCode::kModelNotFound);
  const auto* details = std::get_if<ModelNotFoundDetails>(&missing.status().details());
  REQUIRE(details != nullptr);
  CHECK(details->available_models == std::vector<std::string>{"p-fly", "p-human", "s-human"});
}
