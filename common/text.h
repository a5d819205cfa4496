// Small text helpers for messages people read.
#pragma once

#include <cstdint>
#include <string>

namespace dnaserve {

// A count with thousands separators, as error messages quote limits: 1234567 -> "1,234,567".
std::string GroupedThousands(int64_t n);

}  // namespace dnaserve
