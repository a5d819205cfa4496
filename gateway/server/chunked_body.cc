#include "gateway/server/chunked_body.h"

#include <algorithm>

namespace dnaserve::gateway {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Bytes allowed in a trailer field line: visible ASCII and whitespace, no control characters.
bool TrailerByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u < 0x7f);
}

}  // namespace

ChunkedBodyReader::Verdict ChunkedBodyReader::Fail(Verdict verdict) {
  state_ = State::kFailed;
  failure_ = verdict;
  return verdict;
}

ChunkedBodyReader::Verdict ChunkedBodyReader::Feed(std::string_view bytes, std::string* data) {
  consumed_ = 0;
  if (state_ == State::kDone) return Verdict::kComplete;
  if (state_ == State::kFailed) return failure_;
  size_t i = 0;
  while (i < bytes.size()) {
    const char c = bytes[i];
    switch (state_) {
      case State::kSizeDigits: {
        const int digit = HexDigit(c);
        if (digit >= 0) {
          // 16 hex digits would overflow nothing, but no legal body needs more than 8.
          if (++size_digits_ > 8) return Fail(Verdict::kTooLarge);
          chunk_size_ = chunk_size_ * 16 + static_cast<uint64_t>(digit);
          ++i;
          break;
        }
        if (size_digits_ == 0) return Fail(Verdict::kMalformed);
        state_ = State::kSizeRest;  // re-examine c there
        break;
      }
      case State::kSizeRest:
        // Chunk extensions (";name=value") are refused: Pistache rejects them too, with a
        // plain-text 400 instead of the error envelope.
        if (c != '\r') return Fail(Verdict::kMalformed);
        state_ = State::kSizeLf;
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') return Fail(Verdict::kMalformed);
        ++i;
        if (chunk_size_ > max_body_bytes_ - std::min(max_body_bytes_, body_bytes_)) {
          return Fail(Verdict::kTooLarge);
        }
        body_bytes_ += chunk_size_;
        if (chunk_size_ == 0) {
          state_ = State::kTrailerLine;
        } else {
          chunk_left_ = chunk_size_;
          state_ = State::kData;
        }
        chunk_size_ = 0;
        size_digits_ = 0;
        line_bytes_ = 0;
        break;
      case State::kData: {
        const size_t take =
            static_cast<size_t>(std::min<uint64_t>(chunk_left_, bytes.size() - i));
        if (data) data->append(bytes.data() + i, take);
        chunk_left_ -= take;
        i += take;
        if (chunk_left_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c != '\r') return Fail(Verdict::kMalformed);
        state_ = State::kDataLf;
        ++i;
        break;
      case State::kDataLf:
        if (c != '\n') return Fail(Verdict::kMalformed);
        state_ = State::kSizeDigits;
        ++i;
        break;
      case State::kTrailerLine:
        ++i;
        if (c == '\r') {
          state_ = State::kTrailerLf;
        } else if (!TrailerByte(c) || ++line_bytes_ > kMaxLineBytes ||
                   ++trailer_bytes_ > kMaxTrailerBytes) {
          return Fail(Verdict::kMalformed);
        }
        break;
      case State::kTrailerLf:
        if (c != '\n') return Fail(Verdict::kMalformed);
        ++i;
        if (line_bytes_ == 0) {  // the empty line: the body ends here
          state_ = State::kDone;
          consumed_ = i;
          return Verdict::kComplete;
        }
        line_bytes_ = 0;
        state_ = State::kTrailerLine;
        break;
      case State::kDone:
      case State::kFailed:
        break;  // unreachable: both return before the loop
    }
  }
  consumed_ = i;
  return Verdict::kNeedMore;
}

}  // namespace dnaserve::gateway
