// The one pass over a raw header block that the server makes before Pistache parses it: what
// Pistache would collapse (repeated lines) or read differently must come out of it exactly, and
// a block whose framing is ambiguous must be named malformed (http_framing_test.cpp sends each
// such case over a socket; these check the facts themselves).
#include "gateway/server/header_block.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace dnaserve::gateway {
namespace {

// A block that is fine apart from `lines`.
HeaderBlockFacts Scan(const std::string& lines,
                      const std::string& request_line = "POST / HTTP/1.1") {
  return ScanHeaderBlock(request_line + "\r\nHost: x\r\n" + lines);
}

TEST_CASE("header block: repeated lines are counted and joined in order", "[http][headers]") {
  HeaderBlockFacts f = ScanHeaderBlock(
      "GET /x HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: Bearer a\r\nX-Forwarded-For: 6.6.6.6\r\n"
      "authorization:Bearer b\r\nx-forwarded-for:  198.51.100.7 , 10.2.2.2 \r\n");
  CHECK_FALSE(f.malformed);
  CHECK(f.authorization_lines == 2);
  REQUIRE(f.forwarded_for);
  CHECK(*f.forwarded_for == "6.6.6.6,198.51.100.7 , 10.2.2.2");
  CHECK_FALSE(f.content_length);
  CHECK_FALSE(f.chunked);
  CHECK_FALSE(f.http10);
}

TEST_CASE("header block: the request line and look-alike names do not count", "[http][headers]") {
  HeaderBlockFacts f = ScanHeaderBlock(
      "GET /authorization:x HTTP/1.1\r\nHost: x\r\nX-Authorization: Bearer a\r\n"
      "Authorization-Extra: b\r\nContent-Lengthy: 5\r\nTransfer-Encodings: gzip\r\n");
  CHECK_FALSE(f.malformed);
  CHECK(f.authorization_lines == 0);
  CHECK_FALSE(f.content_length);
  CHECK_FALSE(f.chunked);
}

TEST_CASE("header block: Content-Length is one line of decimal digits", "[http][headers]") {
  CHECK(*Scan("Content-Length:  42 \r\n").content_length == 42);
  CHECK(*Scan("content-length: 0042\r\n").content_length == 42);
  CHECK(*Scan("Content-Length: 18446744073709551615\r\n").content_length == UINT64_MAX);
  for (const std::string bad : {"12x", "+1", "-1", "0x1", "1 2", "1,1", "1, 2", "", "1e3",
                                "18446744073709551616", "99999999999999999999999"}) {
    INFO("'" << bad << "'");
    HeaderBlockFacts f = Scan("Content-Length: " + bad + "\r\n");
    REQUIRE(f.malformed);
    CHECK_THAT(*f.malformed, Catch::Contains("Content-Length"));
  }
  // A repeat is refused even when the values agree (RFC 9110 8.6 allows either).
  CHECK(Scan("Content-Length: 5\r\nContent-Length: 7\r\n").malformed);
  CHECK(Scan("Content-Length: 5\r\ncontent-length: 5\r\n").malformed);
}

TEST_CASE("header block: Transfer-Encoding must be chunked alone", "[http][headers]") {
  for (const std::string good :
       {"chunked", "Chunked", "CHUNKED ", "\tchunked", ", chunked", "chunked,", " ,, chunked , "}) {
    INFO("'" << good << "'");
    HeaderBlockFacts f = Scan("Transfer-Encoding: " + good + "\r\n");
    CHECK_FALSE(f.malformed);
    CHECK(f.chunked);
  }
  // Empty list elements across lines count for nothing either.
  CHECK(Scan("Transfer-Encoding: \r\nTransfer-Encoding: chunked\r\n").chunked);
  for (const std::string bad : {"gzip", "chunked, gzip", "gzip, chunked", "chunked, chunked",
                                "chunked;q=1", "identity", "", " , ", "chunk", "xchunked"}) {
    INFO("'" << bad << "'");
    HeaderBlockFacts f = Scan("Transfer-Encoding: " + bad + "\r\n");
    CHECK(f.malformed);
    CHECK_FALSE(f.chunked);
  }
  CHECK(Scan("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n").malformed);
  CHECK(Scan("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n").malformed);
  CHECK(Scan("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n").malformed);
  CHECK(Scan("Transfer-Encoding: chunked\r\n", "POST / HTTP/1.0").malformed);
}

TEST_CASE("header block: HTTP/1.0 needs no Host, HTTP/1.1 exactly one", "[http][headers]") {
  HeaderBlockFacts old = ScanHeaderBlock("GET / HTTP/1.0\r\nContent-Length: 1\r\n");
  CHECK_FALSE(old.malformed);
  CHECK(old.http10);
  CHECK(ScanHeaderBlock("GET / HTTP/1.1\r\nContent-Length: 1\r\n").malformed);
  CHECK(ScanHeaderBlock("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n").malformed);
  for (const std::string good : {"", "a", "a.example:8080", "a:", "10.0.0.1:1", "[::1]",
                                 "[2001:db8::1]:443", "xn--bcher-kva.example", "a%20b"}) {
    INFO("'" << good << "'");
    CHECK_FALSE(ScanHeaderBlock("GET / HTTP/1.1\r\nHost: " + good + "\r\n").malformed);
  }
  for (const std::string bad :
       {"a b", "a/b", "u@a", "a:b", "a:65536", "a:123456", "[::1", "[::1]x", "a?b", "a#b"}) {
    INFO("'" << bad << "'");
    CHECK(ScanHeaderBlock("GET / HTTP/1.1\r\nHost: " + bad + "\r\n").malformed);
  }
}

TEST_CASE("header block: request lines", "[http][headers]") {
  for (const std::string good : {"GET / HTTP/1.1", "DELETE /v1/x?y=1&z HTTP/1.1",
                                 "OPTIONS * HTTP/1.1", "GET http://a.example/x HTTP/1.1",
                                 "CONNECT a.example:443 HTTP/1.1", "HEAD /%7E HTTP/1.0"}) {
    INFO(good);
    CHECK_FALSE(ScanHeaderBlock(good + "\r\nHost: x\r\n").malformed);
  }
  for (const std::string bad : {"",
                                "GET",
                                "GET /",
                                "GET / ",
                                "GET  / HTTP/1.1",
                                "GET /  HTTP/1.1",
                                "GET / HTTP/1.1 ",
                                " GET / HTTP/1.1",
                                "GET\t/ HTTP/1.1",
                                "GET / http/1.1",
                                "GET / HTTP/1",
                                "GET / HTTP/1.12",
                                "GET / HTTP/2.0",
                                "GET / HTTP/1.2",
                                "get / HTTP/1.1",
                                "BREW / HTTP/1.1",
                                "G(T / HTTP/1.1",
                                "GET x HTTP/1.1",
                                "GET * HTTP/1.1",
                                "GET /a#b HTTP/1.1",
                                "GET /\x7f HTTP/1.1",
                                "GET /\xc3\xa9 HTTP/1.1",
                                "GET 1a:b HTTP/1.1"}) {
    INFO("'" << bad << "'");
    CHECK(ScanHeaderBlock(bad + "\r\nHost: x\r\n").malformed);
  }
}

TEST_CASE("header block: field lines", "[http][headers]") {
  CHECK_FALSE(Scan("X-A:\r\nX-B: \t a \xff b\t\r\n!#$%&'*+-.^_`|~09az: 1\r\n").malformed);
  for (const std::string& bad : std::vector<std::string>{
           "X-A : 1\r\n", "X-A\t: 1\r\n", "X-A: 1\r\n folded\r\n", "X-A: 1\r\n\tfolded\r\n",
           "NoColon\r\n", ": 1\r\n", "X(A): 1\r\n", "X A: 1\r\n", "X-A: a\rb\r\n", "X-A: a\r\r\n",
           "X-A: a\nX-B: b\r\n", std::string("X-A: a\0b\r\n", 10), "X-A: a\x01\r\n",
           "X-A: a\x7f\r\n", "X-\xc3\xa9: 1\r\n"}) {
    INFO("'" << bad << "'");
    CHECK(Scan(bad).malformed);
  }
  // Whitespace before the first field line is not folding, and refused too.
  CHECK(ScanHeaderBlock("GET / HTTP/1.1\r\n Host: x\r\n").malformed);
  CHECK(ScanHeaderBlock("GET / HTTP/1.1\nHost: x\r\n").malformed);
  CHECK(ScanHeaderBlock("GET / HTTP/1.1\r\r\nHost: x\r\n").malformed);
}

TEST_CASE("header block: bare LF is found across reads", "[http][headers]") {
  CHECK(FindBareLf("a\r\nb\r\n", '\0') == std::string_view::npos);
  CHECK(FindBareLf("a\r\nb\nc", '\0') == 4);
  CHECK(FindBareLf("\n", '\0') == 0);
  CHECK(FindBareLf("\n", '\r') == std::string_view::npos);  // CR ended the previous read
  CHECK(FindBareLf("\n", 'x') == 0);
}

TEST_CASE("header block: chunked blocks reach Pistache with one plain line", "[http][headers]") {
  CHECK(WithPlainChunkedLine("POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: , Chunked \r\n"
                             "X-A: 1\r\nTransfer-Encoding:\r\n\r\n") ==
        "POST / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
}

}  // namespace
}  // namespace dnaserve::gateway
