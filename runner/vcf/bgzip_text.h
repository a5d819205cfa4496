// Text -> bgzip bytes, written by htslib's BGZF writer (the blocks and end-of-file marker that
// bcftools, tabix and htslib's readers expect). Deterministic: the same text gives the same
// bytes (BGZF headers carry no time stamp), which a resumed batch job relies on
// (runner/workflows/variant_score_batch.h).
#pragma once

#include <string>

#include "common/status.h"

namespace dnaserve::variant {

// Compresses `text` through a private temporary file under `scratch_dir` (removed before
// returning; htslib writes BGZF to files, not to memory).
StatusOr<std::string> BgzipText(const std::string& text, const std::string& scratch_dir);

}  // namespace dnaserve::variant
