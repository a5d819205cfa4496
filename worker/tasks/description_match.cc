#include "worker/tasks/description_match.h"

#include <algorithm>
#include <cmath>

namespace dnaserve::worker {

std::map<uint32_t, int> TrigramCounts(std::string_view text) {
  std::string normal;
  normal.reserve(text.size() + 2);
  normal.push_back(' ');
  for (char raw : text) {
    unsigned char c = static_cast<unsigned char>(raw);
    if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    normal.push_back(keep ? static_cast<char>(c) : ' ');
  }
  normal.push_back(' ');
  std::map<uint32_t, int> counts;
  for (std::size_t i = 0; i + 3 <= normal.size(); ++i) {
    const auto a = static_cast<unsigned char>(normal[i]);
    const auto b = static_cast<unsigned char>(normal[i + 1]);
    const auto c = static_cast<unsigned char>(normal[i + 2]);
    if (a == ' ' && b == ' ' && c == ' ') continue;
    ++counts[(uint32_t{a} << 16) | (uint32_t{b} << 8) | uint32_t{c}];
  }
  return counts;
}

double TrigramCosine(const std::map<uint32_t, int>& a, const std::map<uint32_t, int>& b) {
  double dot = 0, norm_a = 0, norm_b = 0;
  for (const auto& [key, count] : a) {
    norm_a += static_cast<double>(count) * count;
    auto it = b.find(key);
    if (it != b.end()) dot += static_cast<double>(count) * it->second;
  }
  for (const auto& [key, count] : b) norm_b += static_cast<double>(count) * count;
  if (norm_a == 0 || norm_b == 0) return 0;
  return dot / std::sqrt(norm_a * norm_b);
}

DescriptionMatch MatchDescription(const DescriptionContexts& contexts,
                                  std::string_view description, std::size_t top) {
  const auto query = TrigramCounts(description);
  std::vector<ContextSimilarity> ranked;
  ranked.reserve(contexts.contexts.size());
  for (const auto& context : contexts.contexts) {
    double best = 0;
    for (const auto& wording : context.wordings) {
      best = std::max(best, TrigramCosine(query, TrigramCounts(wording)));
    }
    ranked.push_back({context.id, context.name, best});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const ContextSimilarity& x, const ContextSimilarity& y) {
                     return x.similarity > y.similarity;
                   });
  DescriptionMatch out;
  out.matched = !ranked.empty() && ranked.front().similarity >= contexts.threshold;
  if (ranked.size() > top) ranked.resize(top);
  out.contexts = std::move(ranked);
  return out;
}

}  // namespace dnaserve::worker
