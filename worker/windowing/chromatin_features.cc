#include "worker/windowing/chromatin_features.h"

#include <cstdio>
#include <string>

namespace dnaserve::worker {

std::string_view ChromatinCategory(std::string_view feature_name) {
  return kChromatinCategories[ChromatinCategoryIndex(feature_name)];
}

int ChromatinCategoryIndex(std::string_view feature_name) {
  const int other = static_cast<int>(kChromatinCategories.size()) - 1;
  size_t first = feature_name.find('|');
  if (first == std::string_view::npos) return other;
  size_t second = feature_name.find('|', first + 1);
  std::string_view assay = feature_name.substr(
      first + 1, second == std::string_view::npos ? std::string_view::npos : second - first - 1);
  if (assay.substr(0, 5) == "Pol2(" || assay.substr(0, 5) == "Pol2-") assay = "Pol2";
  for (int i = 0; i < other; ++i) {
    if (kChromatinCategories[i] == assay) return i;
  }
  return other;
}

std::vector<int> FeaturesAbove(const float* probabilities, int count, double threshold) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    if (probabilities[i] > threshold) out.push_back(i);
  }
  return out;
}

Status CheckChromatinRecordCap(int64_t record_count, int64_t maximum, double threshold,
                               int windows_counted) {
  if (record_count <= maximum) return Status::Ok();
  RecordCapDetails cap;
  cap.task = "chromatin";
  cap.record_count = record_count;
  cap.maximum_records = maximum;
  cap.threshold = threshold;
  char shown[32];
  std::snprintf(shown, sizeof(shown), "%g", threshold);
  return Status(ErrorCode::kValidationFailed,
                "the chromatin response would hold more than " + std::to_string(maximum) +
                    " features above the threshold (" + std::to_string(record_count) +
                    " found in the first " + std::to_string(windows_counted) +
                    " windows at threshold " + shown +
                    "); raise options.threshold or send a shorter sequence",
                cap);
}

}  // namespace dnaserve::worker
