// How job results are kept: a gzip stream (RFC 1952), so that a poll can hand the stored bytes
// to a client that accepts gzip without recompressing them, and Redis holds a fraction of the
// JSON (about a tenth for large results; RELIABILITY.md has the figures).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dnaserve::core {

// The body encodings a stored result can have (JobRecord::body_encoding).
inline constexpr std::string_view kIdentityEncoding = "";
inline constexpr std::string_view kGzipEncoding = "gzip";

// Bodies shorter than this are stored as they are: error envelopes and progress-sized answers
// gain nothing from gzip's 18 bytes of framing and the CPU it costs.
inline constexpr size_t kCompressMinBytes = 1024;

// A complete gzip stream of `data` (zlib level 6, memory level 8). The output grows in small
// steps, so the peak is the compressed size, never a worst-case bound of the input's size.
std::string GzipCompress(std::string_view data);

// The data of a gzip stream; internal_error when `gz` is not one complete stream or inflates
// to more than `max_bytes` (stored results are ours, so either means a damaged store).
StatusOr<std::string> GzipDecompress(std::string_view gz, size_t max_bytes = size_t{1} << 30);

}  // namespace dnaserve::core
