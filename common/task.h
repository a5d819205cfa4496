// The six prediction tasks and the facts about them that every component shares: wire names,
// admission bounds (Limits section of the contract) and the output formats each one offers.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace dnaserve {

enum class Task { kPromoter, kSplice, kEnhancer, kChromatin, kAnnotation, kExpression };

inline constexpr std::array<Task, 6> kAllTasks = {Task::kPromoter,  Task::kSplice,
                                                  Task::kEnhancer,  Task::kChromatin,
                                                  Task::kAnnotation, Task::kExpression};

enum class OutputFormat { kJson, kBed, kBedGraph, kGff3 };

std::string_view TaskName(Task task);
std::optional<Task> TaskFromName(std::string_view name);

std::string_view FormatName(OutputFormat format);  // "json", "bed", "bedgraph", "gff3"
std::optional<OutputFormat> FormatFromName(std::string_view name);
std::string_view FormatMediaType(OutputFormat format);  // e.g. "text/x-gff3"

// Sequence bounds in bp, measured after whitespace stripping.
inline constexpr int64_t kMaxSequenceBp = 500000;
int64_t MinSequenceBp(Task task);

// Output formats the task accepts, json first.
const std::vector<OutputFormat>& SupportedFormats(Task task);

// Annotation JSON responses above this length must run asynchronously (413 sync_too_large).
inline constexpr int64_t kAnnotationSyncLimitBp = 200000;
// Splice responses with more sites than this are refused (422).
inline constexpr int64_t kSpliceMaxSites = 20000;
// Chromatin responses with more records (one record = one feature above the threshold in one
// window) than this are refused the same way (422, RecordCapDetails); README, Limits.
inline constexpr int64_t kChromatinMaxFeatures = 100000;
// Expression scores exactly this window, centred on tss_index.
inline constexpr int64_t kExpressionWindowBp = 9198;
inline constexpr int64_t kExpressionHalfWindowBp = kExpressionWindowBp / 2;  // 4599

}  // namespace dnaserve
