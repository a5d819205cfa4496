// Service version "YYYY.MM.DD.N (commit)": the date of the build's commit, the ordinal of that
// commit among the day's commits, and its short hash. Reported by /health and as info.version.
#pragma once

#include <string_view>

namespace dnaserve {
std::string_view ServiceVersion();
}  // namespace dnaserve
