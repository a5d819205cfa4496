// The variant workflow's request bounds from the contract (Limits, Variant-interpretation
// workflow), shared by the gateway's validation and OpenAPI schemas and by the runner's
// building blocks that enforce them again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dnaserve {

inline constexpr size_t kMinS3UriLength = 8;
inline constexpr size_t kMaxS3UriLength = 1024;
inline constexpr int64_t kMaxVariantWindowBp = 100000;
inline constexpr size_t kMaxVariantTissues = 16;

}  // namespace dnaserve
