// The admission tests' two readings of a request validator's answer (ValidateIsmBody,
// ValidateVariantScoreBody, ...: a body in, StatusOr<Validated...> out). For test files built
// with CATCH_CONFIG_PREFIX_ALL (the core unit tests): include it after their catch.hpp.
#pragma once

#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <variant>

#include "common/status.h"

namespace dnaserve::testing {

// What `validate` makes of `body`; fails the current test, saying why, when it refuses it.
template <typename Validate>
auto RequireValid(Validate validate, const std::string& body) {
  auto v = validate(body);
  CATCH_INFO(body << " -> " << (v.ok() ? "ok" : v.status().message()));
  CATCH_REQUIRE(v.ok());
  return std::move(v).value();
}

// Where `validate` refuses `body`: its first error's location joined by '.', or, when the
// refusal names no field, its code. Fails the current test when it accepts `body`.
template <typename Validate>
std::string RefusalOf(Validate validate, const std::string& body) {
  auto v = validate(body);
  CATCH_INFO(body);
  CATCH_REQUIRE_FALSE(v.ok());
  const auto* details = std::get_if<ValidationDetails>(&v.status().details());
  if (details == nullptr || details->errors.empty()) {
    return std::string(ErrorCodeName(v.status().code()));
  }
  std::string loc;
  for (const auto& part : details->errors[0].loc) loc += (loc.empty() ? "" : ".") + part;
  return loc;
}

}  // namespace dnaserve::testing
