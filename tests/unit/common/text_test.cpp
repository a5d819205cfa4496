#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "common/text.h"

using dnaserve::GroupedThousands;

TEST_CASE("text: counts are grouped by thousands, signs and extremes included", "[common]") {
  CHECK(GroupedThousands(0) == "0");
  CHECK(GroupedThousands(999) == "999");
  CHECK(GroupedThousands(1000) == "1,000");
  CHECK(GroupedThousands(21350928) == "21,350,928");
  CHECK(GroupedThousands(-1234567) == "-1,234,567");
  CHECK(GroupedThousands(std::numeric_limits<int64_t>::max()) == "9,223,372,036,854,775,807");
  CHECK(GroupedThousands(std::numeric_limits<int64_t>::min()) == "-9,223,372,036,854,775,808");
}
