// The edge's reading of HTTP/1.1 framing (RFC 9112 sections 2-7), one hostile request at a time
// over a real loopback socket: every message whose framing a proxy in front could read another
// way is answered 400 bad_request in the error envelope and the connection is closed, before any
// handler runs; the unusual but valid forms the RFCs allow still pass.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/server/http_server.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

namespace {

// A server whose one handler echoes the request body, counting the requests that reach it.
struct EchoServer {
  std::atomic<int> handled{0};
  std::mutex mu;
  std::string last_body;
  std::unique_ptr<HttpServer> server;

  EchoServer() {
    HttpServerOptions options;
    options.port = 0;
    options.max_body_bytes = 1024;
    options.drain_timeout = std::chrono::seconds(5);
    server = std::make_unique<HttpServer>(options, [this](HttpRequest req, Responder respond) {
      ++handled;
      {
        std::lock_guard<std::mutex> lock(mu);
        last_body = req.body;
      }
      HttpResponse r;
      r.body = "{\"length\":" + std::to_string(req.body.size()) + "}";
      respond(r);
    });
    REQUIRE(server->Start().ok());
  }
  std::string body() {
    std::lock_guard<std::mutex> lock(mu);
    return last_body;
  }
};

struct Exchange {
  std::string reply;
  bool closed_by_server = false;  // the server ended the connection (EOF)
};

// How many whole responses (head and Content-Length body) `reply` holds.
size_t WholeResponses(const std::string& reply) {
  size_t count = 0;
  size_t at = 0;
  for (;;) {
    const size_t head_end = reply.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return count;
    const size_t length_at = reply.find("Content-Length: ", at);
    if (length_at == std::string::npos || length_at > head_end) return count;
    const size_t end = head_end + 4 + std::stoul(reply.substr(length_at + 16, 12));
    if (end > reply.size()) return count;
    ++count;
    at = end;
  }
}

// Sends `bytes` on a fresh connection, then reads until the server closes it, 2 s pass, or
// (when `responses` > 0) that many whole responses have arrived.
Exchange SendAndRead(int port, const std::string& bytes, size_t responses = 0) {
  const int fd = testing::ConnectLoopback(port, std::chrono::seconds(2));
  REQUIRE(fd >= 0);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  Exchange out;
  char buf[4096];
  while (responses == 0 || WholeResponses(out.reply) < responses) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) {
      out.closed_by_server = true;
      break;
    }
    if (n < 0) break;  // timed out: the connection is still open
    out.reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

struct Case {
  const char* what;
  std::string request;
};

std::string Post(const std::string& headers_and_body) {
  return "POST /echo HTTP/1.1\r\nHost: x\r\n" + headers_and_body;
}

const std::string kChunked = Post("Transfer-Encoding: chunked\r\n\r\n");

// Each is refused whole: 400 bad_request in the envelope, Connection: close, the connection
// closed, no handler called.
std::vector<Case> AmbiguousRequests() {
  return {
      // Content-Length (RFC 9112 6.3 item 5; RFC 9110 8.6)
      {"two different Content-Length lines",
       Post("Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}")},
      {"the same Content-Length twice (we refuse repeats)",
       Post("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}")},
      {"a Content-Length list of different values", Post("Content-Length: 2, 40\r\n\r\n{}")},
      {"a Content-Length list of equal values (we refuse lists)",
       Post("Content-Length: 2, 2\r\n\r\n{}")},
      {"a signed Content-Length", Post("Content-Length: +2\r\n\r\n{}")},
      {"a negative Content-Length", Post("Content-Length: -2\r\n\r\n{}")},
      {"a Content-Length with trailing junk", Post("Content-Length: 2x\r\n\r\n{}")},
      {"a hexadecimal Content-Length", Post("Content-Length: 0x2\r\n\r\n{}")},
      {"a Content-Length in exponent form", Post("Content-Length: 2e0\r\n\r\n{}")},
      {"an empty Content-Length", Post("Content-Length: \r\n\r\n{}")},
      {"a Content-Length with inner space", Post("Content-Length: 2 2\r\n\r\n{}")},
      {"a Content-Length past 2^64", Post("Content-Length: 99999999999999999999999\r\n\r\n{}")},
      // Transfer-Encoding (RFC 9112 6.1, 6.3 items 3 and 4)
      {"Content-Length beside Transfer-Encoding",
       Post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      {"an invalid Content-Length beside Transfer-Encoding",
       Post("Content-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      {"a final coding that is not chunked", Post("Transfer-Encoding: gzip\r\n\r\n{}")},
      {"chunked, then another coding", Post("Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n")},
      {"chunked twice in one line", Post("Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n")},
      {"chunked twice in two lines",
       Post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      {"a coding the server does not implement before chunked",
       Post("Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")},
      {"chunked with a parameter", Post("Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n")},
      {"an empty Transfer-Encoding", Post("Transfer-Encoding: \r\n\r\n")},
      {"a look-alike coding", Post("Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n")},
      {"a transfer coding in an HTTP/1.0 request",
       "POST /echo HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      // Field syntax (RFC 9112 2.2, 5.1, 5.2; RFC 9110 5.5)
      {"whitespace between a field name and its colon", Post("Content-Length : 2\r\n\r\n{}")},
      {"a tab between a field name and its colon", Post("X-Thing\t: 1\r\n\r\n")},
      {"obsolete line folding", Post("X-Thing: a\r\n  b\r\n\r\n")},
      {"obsolete line folding with a tab", Post("X-Thing: a\r\n\tb\r\n\r\n")},
      {"whitespace before the first field line",
       "POST /echo HTTP/1.1\r\n Host: x\r\nContent-Length: 2\r\n\r\n{}"},
      {"a bare CR in a field value", Post("X-Thing: a\rb\r\n\r\n")},
      {"a bare CR ending a field line", Post("X-Thing: a\r\r\n\r\n")},
      {"a bare LF ending a field line", Post("X-Thing: a\nContent-Length: 2\r\n\r\n{}")},
      {"a bare CR in the request line", "POST /echo\rx HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a field line without a colon", Post("NoColonHere\r\n\r\n")},
      {"a field name with a delimiter", Post("X(Thing): 1\r\n\r\n")},
      {"an empty field name", Post(": 1\r\n\r\n")},
      {"a NUL in a field value", Post(std::string("X-Thing: a\0b\r\n\r\n", 16))},
      {"a control character in a field value", Post("X-Thing: a\x01"
                                                    "b\r\n\r\n")},
      {"a DEL in a field value", Post("X-Thing: a\x7f"
                                      "b\r\n\r\n")},
      // Host (RFC 9112 3.2)
      {"an HTTP/1.1 request without Host", "GET /echo HTTP/1.1\r\n\r\n"},
      {"two Host lines", "GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"},
      {"two Host lines in HTTP/1.0", "GET /echo HTTP/1.0\r\nHost: x\r\nHost: x\r\n\r\n"},
      {"a Host with a space", "GET /echo HTTP/1.1\r\nHost: a b\r\n\r\n"},
      {"a Host with a path", "GET /echo HTTP/1.1\r\nHost: a/b\r\n\r\n"},
      {"a Host with user info", "GET /echo HTTP/1.1\r\nHost: u@a\r\n\r\n"},
      {"a Host with a non-numeric port", "GET /echo HTTP/1.1\r\nHost: a:b\r\n\r\n"},
      // Request line (RFC 9112 3)
      {"two spaces after the method", "GET  /echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"two spaces before the version", "GET /echo  HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a tab as separator", "GET\t/echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a space after the version", "GET /echo HTTP/1.1 \r\nHost: x\r\n\r\n"},
      {"whitespace before the method", " GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"no version", "GET /echo\r\nHost: x\r\n\r\n"},
      {"a lower-case version", "GET /echo http/1.1\r\nHost: x\r\n\r\n"},
      {"a truncated version", "GET /echo HTTP/1\r\nHost: x\r\n\r\n"},
      {"a version of another major", "GET /echo HTTP/2.0\r\nHost: x\r\n\r\n"},
      {"a method that is not a token", "GE(T /echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a method the server does not know", "BREW /echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a target that is no URI form", "GET echo HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a target with a control byte", "GET /ec\x01ho HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a target with a non-ASCII byte", "GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a target with a fragment", "GET /echo#top HTTP/1.1\r\nHost: x\r\n\r\n"},
      // Chunked framing (RFC 9112 7.1)
      {"a negative chunk size", kChunked + "-2\r\n{}\r\n0\r\n\r\n"},
      {"a chunk size with 0x", kChunked + "0x2\r\n{}\r\n0\r\n\r\n"},
      {"a chunk size after a space", kChunked + " 2\r\n{}\r\n0\r\n\r\n"},
      {"a chunk size ended by a bare LF", kChunked + "2\n{}\r\n0\r\n\r\n"},
      {"chunk data not ended by CRLF", kChunked + "2\r\n{}XX0\r\n\r\n"},
      {"chunk data ended by a bare LF", kChunked + "2\r\n{}\n0\r\n\r\n"},
      {"the last chunk ended by a bare LF", kChunked + "2\r\n{}\r\n0\n\r\n"},
      {"a chunk extension (refused: none is defined here)", kChunked + "2;a=b\r\n{}\r\n0\r\n\r\n"},
      {"a trailer line without a colon", kChunked + "2\r\n{}\r\n0\r\nNoColon\r\n\r\n"},
      {"a trailer name with whitespace before its colon",
       kChunked + "2\r\n{}\r\n0\r\nX-T : 1\r\n\r\n"},
      {"a folded trailer line", kChunked + "2\r\n{}\r\n0\r\nX-T: 1\r\n 2\r\n\r\n"},
      {"a trailer line ended by a bare LF", kChunked + "2\r\n{}\r\n0\r\nX-T: 1\n\r\n"},
      {"a trailer with an empty name", kChunked + "2\r\n{}\r\n0\r\n: 1\r\n\r\n"},
  };
}

}  // namespace

TEST_CASE("framing RFC 9112 calls ambiguous is answered 400 in the envelope and closed",
          "[gateway][http][framing]") {
  EchoServer s;
  for (const Case& c : AmbiguousRequests()) {
    INFO(c.what);
    const Exchange e = SendAndRead(s.server->port(), c.request);
    INFO(e.reply);
    CHECK(e.reply.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(e.reply.find("\"code\":\"bad_request\"") != std::string::npos);
    CHECK(e.reply.find("X-Request-Id: ") != std::string::npos);
    CHECK(e.reply.find("Connection: close\r\n") != std::string::npos);
    CHECK(e.closed_by_server);
    // One answer only: nothing after the refusal was read as another request.
    CHECK(e.reply.find("X-Request-Id: ", e.reply.find("X-Request-Id: ") + 1) == std::string::npos);
  }
  CHECK(s.handled == 0);
}

TEST_CASE("the message's reason is named in the refusal", "[gateway][http][framing]") {
  EchoServer s;
  const auto message = [&](const std::string& request) {
    return SendAndRead(s.server->port(), request).reply;
  };
  CHECK_THAT(message(Post("Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}")),
             Catch::Contains("Content-Length"));
  CHECK_THAT(message(Post("X-Thing: a\r\n b\r\n\r\n")), Catch::Contains("line folding"));
  CHECK_THAT(message(Post("Content-Length : 2\r\n\r\n{}")), Catch::Contains("colon"));
  CHECK_THAT(message("GET /echo HTTP/1.1\r\n\r\n"), Catch::Contains("Host"));
  CHECK_THAT(message(Post("Transfer-Encoding: gzip\r\n\r\n")), Catch::Contains("chunked"));
}

TEST_CASE("valid forms the RFCs allow still pass", "[gateway][http][framing]") {
  EchoServer s;
  struct Good {
    const char* what;
    std::string request;
    std::string body;  // what the handler must receive
  };
  const std::vector<Good> goods = {
      {"plain Content-Length", Post("Content-Length: 2\r\n\r\n{}"), "{}"},
      {"Content-Length with leading zeros", Post("Content-Length: 0002\r\n\r\n{}"), "{}"},
      {"Content-Length without space, with trailing space", Post("Content-Length:2 \r\n\r\n{}"),
       "{}"},
      {"a case-insensitive chunked", Post("Transfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
       "{}"},
      {"chunk sizes with leading zeros and upper-case hex",
       Post("Transfer-Encoding: "
            "chunked\r\n\r\n000000002\r\n{}\r\n0000A\r\n0123456789\r\n00\r\n\r\n"),
       "{}0123456789"},
      {"a trailer section",
       Post("Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n"), "{}"},
      {"an HTTP/1.0 request without Host", "POST /echo HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
       "{}"},
      {"an empty Host", "POST /echo HTTP/1.1\r\nHost:\r\nContent-Length: 2\r\n\r\n{}", "{}"},
      {"a Host with a port",
       "POST /echo HTTP/1.1\r\nHost: a.example:8080\r\nContent-Length: 2\r\n\r\n{}", "{}"},
      {"an IPv6 Host", "POST /echo HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 2\r\n\r\n{}",
       "{}"},
      {"tabs and obs-text in a field value",
       Post("X-Thing:\ta\tb \xe9\r\nContent-Length: 2\r\n\r\n{}"), "{}"},
      {"a query with an encoded space",
       "POST /echo?q=a%20b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "{}"},
  };
  for (const Good& g : goods) {
    INFO(g.what);
    const Exchange e = SendAndRead(s.server->port(), g.request, 1);
    INFO(e.reply);
    // (Pistache answers an HTTP/1.0 request in HTTP/1.0.)
    CHECK(e.reply.substr(0, 13).find(" 200 ") == 8);
    CHECK(s.body() == g.body);
  }
}

TEST_CASE("empty lines before a request line are skipped (RFC 9112 2.2)",
          "[gateway][http][framing]") {
  // An HTTP/1.0 client may send CRLF after a POST body; on a kept-alive connection it comes
  // before the next request line.
  EchoServer s;
  const Exchange e =
      SendAndRead(s.server->port(),
                  "\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}\r\n\r\n"
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n[1]",
                  2);
  INFO(e.reply);
  CHECK(e.reply.find("{\"length\":2}") != std::string::npos);
  CHECK(e.reply.find("{\"length\":3}") != std::string::npos);
  CHECK(s.handled == 2);
}
