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

// Bytes allowed in a trailer field's value (RFC 9110 5.5): visible characters, obs-text,
// spaces and tabs; no control characters.
bool TrailerValueByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u != 0x7f);
}

// The characters of a token (RFC 9110 5.6.2): a trailer field's name.
bool TokenByte(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == t) return true;
  }
  return false;
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
          // Leading zeros are legal (chunk-size = 1*HEXDIG), so the size is bounded by its
          // value, as soon as it passes the limit, and the line by its length.
          if (++size_digits_ > kMaxLineBytes) return Fail(Verdict::kMalformed);
          const auto value = static_cast<uint64_t>(digit);
          if (chunk_size_ > max_body_bytes_ / 16 || value > max_body_bytes_ - chunk_size_ * 16) {
            return Fail(Verdict::kTooLarge);
          }
          chunk_size_ = chunk_size_ * 16 + value;
          ++i;
          break;
        }
        if (size_digits_ == 0) return Fail(Verdict::kMalformed);
        state_ = State::kSizeRest;  // re-examine c there
        break;
      }
      case State::kSizeRest:
        // Chunk extensions (";name=value") are refused: this service defines none, RFC 9112
        // 7.1.1 lets a server limit their length (here to nothing), and readers that differ on
        // their syntax (quoted strings, a bare LF inside one) are a request-smuggling shape.
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
        // field-line = field-name ":" OWS field-value OWS (RFC 9112 5): a token right before
        // the colon, so no whitespace there and no line starting with it (obsolete folding).
        ++i;
        if (c == '\r') {
          if (line_bytes_ > 0 && !in_trailer_value_) return Fail(Verdict::kMalformed);
          state_ = State::kTrailerLf;
          break;
        }
        if (++line_bytes_ > kMaxLineBytes || ++trailer_bytes_ > kMaxTrailerBytes) {
          return Fail(Verdict::kMalformed);
        }
        if (in_trailer_value_) {
          if (!TrailerValueByte(c)) return Fail(Verdict::kMalformed);
        } else if (c == ':' && line_bytes_ > 1) {
          in_trailer_value_ = true;
        } else if (!TokenByte(c)) {
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
        in_trailer_value_ = false;
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
