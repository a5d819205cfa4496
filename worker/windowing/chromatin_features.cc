#include "worker/windowing/chromatin_features.h"

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

}  // namespace dnaserve::worker
