// The one pass over a raw header block that the server makes before Pistache parses it: what
// Pistache would collapse (repeated lines) or read differently must come out of it exactly.
#include "gateway/server/header_block.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace dnaserve::gateway {
namespace {

TEST_CASE("header block: repeated lines are counted and joined in order", "[http][headers]") {
  HeaderBlockFacts f = ScanHeaderBlock(
      "GET /x HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: Bearer a\r\nX-Forwarded-For: 6.6.6.6\r\n"
      "authorization:Bearer b\r\nx-forwarded-for:  198.51.100.7 , 10.2.2.2 \r\n");
  CHECK(f.authorization_lines == 2);
  REQUIRE(f.forwarded_for);
  CHECK(*f.forwarded_for == "6.6.6.6,198.51.100.7 , 10.2.2.2");
  CHECK_FALSE(f.content_length);
  CHECK_FALSE(f.transfer_encoding);
}

TEST_CASE("header block: the request line and look-alike names do not count", "[http][headers]") {
  HeaderBlockFacts f = ScanHeaderBlock(
      "GET /authorization:x HTTP/1.1\nX-Authorization: Bearer a\nAuthorization-Extra: b\n"
      "Authorization : c\nContent-Lengthy: 5\n");
  CHECK(f.authorization_lines == 0);
  CHECK_FALSE(f.content_length);
}

TEST_CASE("header block: Content-Length is the first line's leading digits", "[http][headers]") {
  CHECK(*ScanHeaderBlock("POST / HTTP/1.1\r\nContent-Length:  42\r\nContent-Length: 7\r\n")
             .content_length == 42);
  CHECK(*ScanHeaderBlock("POST / HTTP/1.1\r\ncontent-length: 12x\r\n").content_length == 12);
  CHECK(*ScanHeaderBlock("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n")
             .content_length == UINT64_MAX);
  // A first line without digits is no length, even when a later one has some.
  CHECK_FALSE(ScanHeaderBlock("POST / HTTP/1.1\r\nContent-Length: x\r\nContent-Length: 5\r\n")
                  .content_length);
}

TEST_CASE("header block: Transfer-Encoding lines are lower-cased and joined", "[http][headers]") {
  HeaderBlockFacts f = ScanHeaderBlock(
      "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\ntransfer-encoding: gzip \r\n");
  REQUIRE(f.transfer_encoding);
  CHECK(*f.transfer_encoding == "chunked,gzip");
}

}  // namespace
}  // namespace dnaserve::gateway
