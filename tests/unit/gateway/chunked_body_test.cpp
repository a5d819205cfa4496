// Chunked request framing followed byte by byte: well-formed bodies in any split, their size
// and end, and every malformation refused at the first byte that shows it.
#include "gateway/server/chunked_body.h"

#include <catch2/catch.hpp>
#include <string>

namespace dnaserve::gateway {
namespace {

using Verdict = ChunkedBodyReader::Verdict;

Verdict FeedInPieces(ChunkedBodyReader& reader, const std::string& body, size_t piece) {
  Verdict v = Verdict::kNeedMore;
  for (size_t at = 0; at < body.size() && v == Verdict::kNeedMore; at += piece) {
    v = reader.Feed(std::string_view(body).substr(at, piece));
  }
  return v;
}

TEST_CASE("well-formed chunked bodies, whole or split anywhere", "[chunked]") {
  const std::string body =
      "5\r\nhello\r\n"
      "1A\r\n" + std::string(26, 'x') + "\r\n"
      "0\r\n"
      "Trailer-One: a\r\n"
      "\r\n";
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, body.size()}) {
    INFO("pieces of " << piece);
    ChunkedBodyReader reader(1024);
    CHECK(FeedInPieces(reader, body, piece) == Verdict::kComplete);
    CHECK(reader.body_bytes() == 31);
  }
  // Bytes after the end belong to the next request.
  ChunkedBodyReader reader(1024);
  CHECK(reader.Feed("0\r\n\r\nGET / HTTP/1.1\r\n") == Verdict::kComplete);
  CHECK(reader.consumed() == 5);
  CHECK(reader.Feed("more") == Verdict::kComplete);
  CHECK(reader.consumed() == 0);
  CHECK(ChunkedBodyReader(0).Feed("0\r\n\r\n") == Verdict::kComplete);
  // Leading zeros are part of the grammar (chunk-size = 1*HEXDIG), so is an empty trailer value
  // and obs-text in one.
  ChunkedBodyReader zeros(16);
  CHECK(zeros.Feed("0000000000000005\r\nhello\r\n000\r\nX-A:\r\nX-B: \xff\r\n\r\n") ==
        Verdict::kComplete);
  CHECK(zeros.body_bytes() == 5);
}

TEST_CASE("malformed framing is refused where it shows", "[chunked]") {
  for (const std::string bad : {
           std::string("\r\n"),                            // no size
           std::string("G\r\n"),                           // not hex
           std::string("5 x\r\n"),                         // junk after the size
           std::string("5\n"),                             // bare LF
           std::string("5\rX"),                            // CR without LF
           std::string("5\r\nhelloXX"),                    // data not followed by CRLF
           std::string("5\r\nhello\r\r"),                  //
           std::string("5;name=value\r\n"),                // extensions (Pistache refuses them)
           std::string("0 \r\n\r\n"),                      // whitespace after the size
           std::string("0\r\nTrailer\x02\r\n"),            // control byte in a trailer
           std::string("0\r\nA: b\rX"),                    // trailer CR without LF
           std::string("0\r\n") + std::string(5000, 't'),  // endless trailer line
           std::string("0\r\nNoColon\r\n\r\n"),            // a trailer line without a colon
           std::string("0\r\nA : b\r\n\r\n"),              // whitespace before the colon
           std::string("0\r\nA: b\r\n c\r\n\r\n"),         // obsolete line folding
           std::string("0\r\n A: b\r\n\r\n"),              // a trailer starting with a space
           std::string("0\r\n: b\r\n\r\n"),                // an empty name
           std::string("0\r\nA(1): b\r\n\r\n"),            // a name that is no token
           std::string("0\r\nA: b\n\r\n"),                 // a trailer ended by a bare LF
           std::string("0\n\r\n"),                         // the last chunk ended by a bare LF
           std::string("-5\r\n"),                          // a sign
           std::string("0x5\r\n"),                         // a hex prefix
           std::string(5000, '0'),                         // an endless run of zeros
       }) {
    INFO(bad.substr(0, 40));
    ChunkedBodyReader reader(1 << 20);
    CHECK(reader.Feed(bad) == Verdict::kMalformed);
    CHECK(reader.Feed("0\r\n\r\n") == Verdict::kMalformed);  // the verdict sticks
  }
  // An endless run of size digits, or one that never ends its line.
  CHECK(ChunkedBodyReader(1 << 20).Feed(std::string(9, '1')) == Verdict::kTooLarge);
  CHECK(ChunkedBodyReader(1 << 20).Feed(std::string(100000, 'A')) == Verdict::kTooLarge);
}

TEST_CASE("chunks adding up past the limit are refused before their data", "[chunked]") {
  ChunkedBodyReader reader(10);
  CHECK(reader.Feed("6\r\nabcdef\r\n") == Verdict::kNeedMore);
  CHECK(reader.Feed("4\r\nabcd\r\n") == Verdict::kNeedMore);  // exactly 10
  CHECK(reader.Feed("1\r\n") == Verdict::kTooLarge);
  CHECK(ChunkedBodyReader(10).Feed("B\r\n") == Verdict::kTooLarge);
  CHECK(ChunkedBodyReader(1 << 24).Feed("FFFFFFFF\r\n") == Verdict::kTooLarge);
}

}  // namespace
}  // namespace dnaserve::gateway
