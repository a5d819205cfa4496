#include "tests/unit/runner/variant_test_support.h"

#include <catch2/catch.hpp>

#include "tests/support/variant_data.h"

namespace dnaserve::testing {

std::optional<DefaultChr20> LoadDefaultChr20(std::string* why) {
  auto built = BuildCatalogue({}, why);
  if (!built) return std::nullopt;
  auto catalogue = variant::TssCatalogue::Load(built->catalogue);
  if (!catalogue.ok()) FAIL(catalogue.status().message());
  REQUIRE_FALSE(built->fasta.empty());
  auto reference = variant::ReferenceGenome::Open(built->fasta);
  if (!reference.ok()) FAIL(reference.status().message());
  return DefaultChr20{std::move(*catalogue), std::move(*reference)};
}

}  // namespace dnaserve::testing
