// The one guard every door runs a job (or renders its result) through (core/jobs/run_guarded.h):
// what the job returns passes through untouched, and an exception escaping it, of any type,
// becomes the job's failure as clients see it (internal, "internal error", nothing of the
// exception's text).
#include "core/jobs/run_guarded.h"

#include <catch2/catch.hpp>
#include <new>
#include <stdexcept>
#include <string>

namespace dnaserve::core {
namespace {

TEST_CASE("RunGuarded passes a job's output and its failures through unchanged", "[jobs]") {
  auto output = RunGuarded("job-1", [] {
    return StatusOr<JobOutput>(JobOutput{"text/plain", "x"});
  });
  REQUIRE(output.ok());
  CHECK(output->content_type == "text/plain");
  CHECK(output->body == "x");

  auto failed = RunGuarded("job-2", [] { return StatusOr<JobOutput>(NotFound("no such gene")); });
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::kNotFound);
  CHECK(failed.status().message() == "no such gene");
}

TEST_CASE("RunGuarded turns any escaped exception into an internal error without its text",
          "[jobs]") {
  auto standard =
      RunGuarded("job-3", []() -> StatusOr<JobOutput> { throw std::runtime_error("boom"); });
  REQUIRE_FALSE(standard.ok());
  CHECK(standard.status().code() == ErrorCode::kInternal);
  CHECK(standard.status().message() == "internal error");

  auto allocation = RunGuarded("job-4", []() -> StatusOr<JobOutput> { throw std::bad_alloc(); });
  REQUIRE_FALSE(allocation.ok());
  CHECK(allocation.status().code() == ErrorCode::kInternal);
  CHECK(allocation.status().message() == "internal error");

  auto foreign = RunGuarded("job-5", []() -> StatusOr<JobOutput> { throw 42; });
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.status().code() == ErrorCode::kInternal);
  CHECK(foreign.status().message() == "internal error");
}

}  // namespace
}  // namespace dnaserve::core
