// Small text helpers for messages people read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dnaserve {

// A count with thousands separators, as error messages quote limits: 1234567 -> "1,234,567".
std::string GroupedThousands(int64_t n);

// Equal when ASCII letters are compared without case (header tokens, assembly and contig
// names); other bytes must match exactly.
bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b);

}  // namespace dnaserve
