// The facts the server takes from a request's raw header block before Pistache parses it, found
// in one pass over the block. Pistache keeps only one line of a repeated header, so whatever
// depends on every line (X-Forwarded-For, a repeated Authorization) must be read here.
//
// The same pass checks the block against RFC 9112 sections 2-6 as strictly as the RFC lets a
// server: any message whose framing another HTTP reader (a proxy in front, Pistache behind)
// could take differently is named malformed, for a 400 and a closed connection. Pistache itself
// is lenient (it reads the first Content-Length, takes "Content-Length: 12x" as 12, accepts any
// whitespace before a colon), so it must only ever see blocks that passed here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dnaserve::gateway {

struct HeaderBlockFacts {
  // Why the block is not one unambiguous HTTP/1.x request head, worded for the client's 400;
  // nullopt when it is. The facts below are complete only when it is nullopt.
  std::optional<std::string> malformed;
  bool http10 = false;  // the request line says HTTP/1.0 (else HTTP/1.1)
  // The Content-Length: the one such line, only decimal digits (RFC 9110 8.6).
  std::optional<uint64_t> content_length;
  // Transfer-Encoding is present and names the chunked coding, once, and nothing else.
  bool chunked = false;
  // Every X-Forwarded-For line, trimmed and joined with commas in order (RFC 9110 5.3: repeated
  // lines are one comma-separated list).
  std::optional<std::string> forwarded_for;
  int authorization_lines = 0;
};

// `block` is the request line and the field lines, each ending in CRLF (the blank line that
// ends the block may be left out). Header names are matched case-insensitively.
HeaderBlockFacts ScanHeaderBlock(std::string_view block);

// The index of the first LF in `text` not preceded by CR (`before` is the byte before `text`,
// '\0' at the start of a block), or npos. RFC 9112 2.2 lets a recipient read a bare LF as a line
// end; this server refuses it instead, so that it and a proxy in front cannot split lines
// differently.
size_t FindBareLf(std::string_view text, char before);

// `block` (a whole header block that ScanHeaderBlock found chunked, blank line included) with
// its Transfer-Encoding lines replaced by one "Transfer-Encoding: chunked" line: Pistache
// recognises chunked only when the raw value is that word alone, while the RFC also allows
// "Chunked ", ", chunked" and the like.
std::string WithPlainChunkedLine(std::string_view block);

}  // namespace dnaserve::gateway
