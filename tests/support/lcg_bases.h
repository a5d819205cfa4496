// Reproducible random bases for test genomes: a 32-bit linear congruential generator, so the
// same seed gives the same contig on every platform and standard library (std::mt19937's
// distributions are not specified byte for byte; this is).
#pragma once

#include <cstdint>
#include <string>

namespace dnaserve::testing {

inline std::string LcgBases(int64_t n, uint32_t seed) {
  static const char kAcgt[] = "ACGT";
  std::string out;
  out.reserve(static_cast<size_t>(n));
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(kAcgt[(x >> 24) & 3]);
  }
  return out;
}

}  // namespace dnaserve::testing
