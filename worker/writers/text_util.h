// Small helpers shared by the text-track writers.
#pragma once

#include <string>
#include <string_view>

namespace dnaserve::worker {

// Scores and values in text tracks: up to 6 significant digits ("%.6g"), e.g. 0.123457, -2.5,
// 1e-07.
std::string FormatValue(double value);

// A column of a tab-separated text format: whitespace (which would split the column) becomes '_'.
std::string TabField(std::string_view text);

// BED score column: probability 0-1 -> integer 0-1000 (rounded, clamped).
int BedScore(double probability);

}  // namespace dnaserve::worker
