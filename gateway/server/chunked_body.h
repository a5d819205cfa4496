// A strict reader of chunked request framing (RFC 9112 7.1), run over the raw bytes before
// Pistache sees them: it checks the framing, counts the body against the limit, finds where the
// body ends, and hands back the chunk data so that the server can pass Pistache the same body
// re-framed as whole chunks, one per read.
//
// Why: Pistache's chunk parser rescans what it has buffered when a read ends inside a chunk (or
// inside a size line or a CRLF). A chunk-size line that never ends, or chunk data not followed
// by CRLF, made it rescan up to the whole 16 MiB body once per 4 KiB read, and even well-formed
// 64 KiB chunks split at unlucky read boundaries stalled it for tens of seconds: minutes of CPU
// on a reactor thread per connection (found by scripts/reliability's chunked-body attacks).
// Fed only whole chunks, it parses linearly.
//
// Strict where RFC 9112 7.1 leaves a reader room to differ from a proxy in front: CRLF only,
// no chunk extensions, trailer lines that are well-formed field lines (a token, a colon, no
// folding). Trailer fields are then dropped: nothing after the last chunk reaches a handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dnaserve::gateway {

class ChunkedBodyReader {
 public:
  enum class Verdict {
    kNeedMore,   // well formed so far
    kComplete,   // the last chunk and the trailer section ended; see consumed()
    kMalformed,  // not chunked framing: refuse with 400
    kTooLarge,   // the chunks carry more than max_body_bytes: refuse with 413
  };

  explicit ChunkedBodyReader(uint64_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  // Follows the next bytes of the body, appending their chunk data (if any) to `data`. After
  // kComplete, consumed() is the number of bytes of this call that belonged to the body (what
  // follows starts the next request); later calls return kComplete and consume nothing. After
  // kMalformed or kTooLarge the verdict sticks.
  Verdict Feed(std::string_view bytes, std::string* data = nullptr);
  size_t consumed() const { return consumed_; }
  uint64_t body_bytes() const { return body_bytes_; }

  // Longest trailer line, and all trailers together.
  static constexpr size_t kMaxLineBytes = 4096;
  static constexpr size_t kMaxTrailerBytes = 16 * 1024;

 private:
  enum class State {
    kSizeDigits,   // hex digits of a chunk size
    kSizeRest,     // the CR ending the size line
    kSizeLf,       // LF after the size line's CR
    kData,         // chunk data
    kDataCr,       // CR after chunk data
    kDataLf,       // LF after chunk data
    kTrailerLine,  // a trailer field line (or the empty line ending the body)
    kTrailerLf,    // LF after a trailer line's CR
    kDone,
    kFailed,
  };
  Verdict Fail(Verdict verdict);

  uint64_t max_body_bytes_;
  State state_ = State::kSizeDigits;
  Verdict failure_ = Verdict::kMalformed;
  uint64_t chunk_size_ = 0;
  uint64_t chunk_left_ = 0;
  size_t size_digits_ = 0;
  size_t line_bytes_ = 0;
  bool in_trailer_value_ = false;  // past the colon of the current trailer line
  size_t trailer_bytes_ = 0;
  uint64_t body_bytes_ = 0;
  size_t consumed_ = 0;
};

}  // namespace dnaserve::gateway
