// Chromatin features: DeepSEA names ("cell|assay|treatment") and the eight published categories.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

inline constexpr std::array<std::string_view, 8> kChromatinCategories = {
    "DNase", "CTCF", "Pol2", "c-Myc", "H3K27ac", "H3K27me3", "H3K4me1", "Other"};

// Category of a feature from its assay field (the middle of "cell|assay|treatment"): the seven
// named assays map to themselves, RNA polymerase II variants ("Pol2(phosphoS2)", "Pol2-4H8",
// "Pol2(b)") to Pol2, and everything else (other TFs, other histone marks, unparsable names) to
// Other.
std::string_view ChromatinCategory(std::string_view feature_name);

// Index into kChromatinCategories of ChromatinCategory(feature_name).
int ChromatinCategoryIndex(std::string_view feature_name);

// Indices of the features whose probability is strictly above `threshold`, in output order.
std::vector<int> FeaturesAbove(const float* probabilities, int count, double threshold);

// The chromatin response-size cap, in the splice cap's form. A record is one feature above the
// threshold in one window; the runner adds each window's records to `record_count` and calls
// this after every window. OK while record_count <= maximum; past it, validation_failed with
// RecordCapDetails{record_count = records counted through `windows_counted` windows, maximum,
// threshold} (the gateway adds task and sequence_length). The request is refused, never
// truncated: the caller returns this status at once.
Status CheckChromatinRecordCap(int64_t record_count, int64_t maximum, double threshold,
                               int windows_counted);

}  // namespace dnaserve::worker
