// The facts the server takes from a request's raw header block before Pistache parses it, found
// in one pass over the block. Pistache keeps only one line of a repeated header, so whatever
// depends on every line (X-Forwarded-For, a repeated Authorization) must be read here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dnaserve::gateway {

struct HeaderBlockFacts {
  // The first Content-Length line's leading digits (saturated at UINT64_MAX); nullopt when there
  // is no such line or it starts with no digit.
  std::optional<uint64_t> content_length;
  // Every Transfer-Encoding line, lower-cased, trimmed and joined with commas.
  std::optional<std::string> transfer_encoding;
  // Every X-Forwarded-For line, trimmed and joined with commas in order (RFC 9110 5.3: repeated
  // lines are one comma-separated list).
  std::optional<std::string> forwarded_for;
  int authorization_lines = 0;
};

// `block` is the request line and header lines (CRLF or LF line ends; the blank line may be
// left out). Header names are matched case-insensitively.
HeaderBlockFacts ScanHeaderBlock(std::string_view block);

}  // namespace dnaserve::gateway
