// Small helpers shared by the text-track writers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dnaserve::worker {

// Scores and values in text tracks: up to 6 significant digits ("%.6g"), e.g. 0.123457, -2.5,
// 1e-07.
std::string FormatValue(double value);
// The same, appended to `out` (std::to_chars: no allocation, no locale; a per-base track formats
// hundreds of thousands of values, where snprintf dominated the runner's own time).
void AppendValue(double value, std::string* out);
// A decimal integer appended to `out`.
void AppendInt(int64_t value, std::string* out);
// The same two into a buffer with room for them (kMaxValueChars / kMaxIntChars); return the end.
inline constexpr int kMaxValueChars = 32;
inline constexpr int kMaxIntChars = 24;
char* PutValue(double value, char* out);
char* PutInt(int64_t value, char* out);

// A column of a tab-separated text format: whitespace (which would split the column) becomes '_'.
std::string TabField(std::string_view text);

// BED score column: probability 0-1 -> integer 0-1000 (rounded, clamped).
int BedScore(double probability);

}  // namespace dnaserve::worker
