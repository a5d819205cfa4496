// The HTTP edge over a real loopback socket: request ids, headers, keep-alive, the 16 MiB rule
// (refused from Content-Length alone, or as chunked bytes pass the limit), deferred responses,
// the signal that a client closed its connection.
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gateway/server/http_server.h"
#include "tests/support/test_env.h"

using namespace dnaserve;
using namespace dnaserve::gateway;

namespace {

dnaserve::testing::HttpResult Fetch(const std::string& method, const std::string& url,
                                    const std::vector<std::string>& headers = {},
                                    const std::string& body = "") {
  return dnaserve::testing::HttpRequest(method, url, headers, body);
}

// A loopback connection to `port` whose reads give up after `wait`.
int Connect(int port, std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) {
  const int fd = testing::ConnectLoopback(port, wait);
  REQUIRE(fd >= 0);
  return fd;
}

// Sends raw bytes and returns what the server answers within `wait`.
std::string RawExchange(int port, const std::string& bytes,
                        std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) {
  int fd = Connect(port, wait);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos && out.find("}") != std::string::npos) break;
  }
  close(fd);
  return out;
}

// 3 MiB and a bit, not a multiple of the server's write pieces, every byte value included.
std::string LargeBody() {
  std::string body((3 << 20) + 12345, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return body;
}

struct TestServer {
  std::atomic<int> handled{0};
  std::string last_body;
  // The request to /held, left unanswered until the test answers it.
  std::mutex held_mu;
  std::shared_ptr<Cancellation> held_closed;
  Responder held_respond;
  std::shared_ptr<ResponseStream> held_stream;  // the response to /stream, still open
  std::unique_ptr<HttpServer> server;

  explicit TestServer(size_t max_body = 1024, TrustedProxies trusted = {},
                      std::chrono::seconds header_timeout = std::chrono::seconds(30)) {
    HttpServerOptions options;
    options.port = 0;
    options.header_timeout = header_timeout;
    options.trusted_proxies = std::move(trusted);
    options.max_body_bytes = max_body;
    options.drain_timeout = std::chrono::seconds(5);
    server = std::make_unique<HttpServer>(options, [this, header_timeout](gateway::HttpRequest req,
                                                                         Responder respond) {
      ++handled;
      if (req.path == "/slower-than-timeouts") {
        // Answered after the header timeout has passed since the request was handed over.
        std::thread([respond, after = header_timeout + std::chrono::seconds(2)] {
          std::this_thread::sleep_for(after);
          HttpResponse r;
          r.body = "{\"late\":true}";
          respond(r);
        }).detach();
        return;
      }
      if (req.path == "/slow") {
        // Answer from another thread, later: the reactor must stay free.
        std::thread([respond] {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          HttpResponse r;
          r.body = "{\"slow\":true}";
          respond(r);
        }).detach();
        return;
      }
      if (req.path == "/held") {
        std::lock_guard<std::mutex> lock(held_mu);
        held_closed = req.connection_closed;
        held_respond = respond;
        return;
      }
      if (req.path == "/stream") {
        // The head and a first event now; the last one and the end only when the test says.
        auto stream = std::make_shared<ResponseStream>();
        HttpResponse r;
        r.content_type = "text/event-stream";
        r.stream = stream;
        stream->Write("data: first\n\n");
        respond(std::move(r));
        std::lock_guard<std::mutex> lock(held_mu);
        held_stream = stream;
        return;
      }
      if (req.path == "/large") {
        HttpResponse r;
        r.content_type = "text/plain";
        r.body = LargeBody();
        r.SetHeader("X-Job-Id", "job-large");
        respond(std::move(r));
        return;
      }
      last_body = req.body;
      HttpResponse r;
      r.body = "{\"path\":\"" + req.path + "\",\"format\":\"" + req.query["format"] +
               "\",\"client\":\"" + req.client_ip + "\",\"repeated_authorization\":" +
               (req.repeated_authorization ? "true" : "false") + "}";
      r.SetHeader("X-Job-Id", "job-1");
      if (req.path == "/named") r.SetHeader("X-Request-Id", "edge-id");
      respond(r);
    });
    REQUIRE(server->Start().ok());
    REQUIRE(server->port() > 0);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server->port()) + path;
  }
};

}  // namespace

TEST_CASE("every response carries a request id and the handler's headers", "[gateway][http]") {
  TestServer s;
  auto r = Fetch("GET", s.url("/x?format=bed%20graph"));
  REQUIRE(r.status == 200);
  REQUIRE(r.Header("x-request-id"));
  CHECK(r.Header("x-request-id")->size() == 36);
  CHECK(*r.Header("x-job-id") == "job-1");
  CHECK(r.body.find("\"format\":\"bed graph\"") != std::string::npos);
  auto r2 = Fetch("GET", s.url("/x"));
  CHECK(*r2.Header("x-request-id") != *r.Header("x-request-id"));
  CHECK(*Fetch("GET", s.url("/named")).Header("x-request-id") == "edge-id");
}

TEST_CASE("bodies up to the limit pass, larger ones are refused with the envelope",
          "[gateway][http]") {
  TestServer s(/*max_body=*/1024);

  SECTION("at the limit") {
    auto r = Fetch("POST", s.url("/echo"), {}, std::string(1024, 'a'));
    CHECK(r.status == 200);
    CHECK(s.last_body.size() == 1024);
  }
  SECTION("over the limit with Content-Length") {
    auto r = Fetch("POST", s.url("/echo"), {}, std::string(1025, 'a'));
    REQUIRE(r.status == 413);
    CHECK(r.body.find("\"code\":\"payload_too_large\"") != std::string::npos);
    CHECK(r.Header("x-request-id"));
    CHECK(s.handled == 0);
  }
  SECTION("a huge declared length is refused before any body byte is sent") {
    std::string reply = RawExchange(
        s.server->port(),
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n");
    CHECK(reply.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(reply.find("payload_too_large") != std::string::npos);
    CHECK(reply.find("X-Request-Id: ") != std::string::npos);
    CHECK(s.handled == 0);
  }
  SECTION("chunked bodies are measured as they arrive") {
    std::string chunk(600, 'b');
    char size_line[16];
    snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
    std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 200; ++i) req += size_line + chunk + "\r\n";  // 120 kB of body
    req += "0\r\n\r\n";
    std::string reply = RawExchange(s.server->port(), req);
    CHECK(reply.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(reply.find("payload_too_large") != std::string::npos);
    CHECK(s.handled == 0);
  }
  SECTION("the server keeps serving after refusals") {
    Fetch("POST", s.url("/echo"), {}, std::string(5000, 'a'));
    CHECK(Fetch("GET", s.url("/after")).status == 200);
  }
}

TEST_CASE("a deferred response does not block other requests", "[gateway][http]") {
  TestServer s;
  std::thread slow([&] { CHECK(Fetch("GET", s.url("/slow")).status == 200); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto started = std::chrono::steady_clock::now();
  CHECK(Fetch("GET", s.url("/fast")).status == 200);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(700));
  slow.join();
}

TEST_CASE("a client closing its connection fires the connection_closed of its requests",
          "[gateway][http]") {
  TestServer s;
  int fd = Connect(s.server->port());
  const std::string request = "GET /held HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::shared_ptr<Cancellation> closed;
  for (int i = 0; i < 500 && !closed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(s.held_mu);
    closed = s.held_closed;
  }
  REQUIRE(closed != nullptr);
  CHECK_FALSE(closed->cancelled());
  // Requests on other connections come and go without touching it.
  CHECK(Fetch("GET", s.url("/x")).status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(closed->cancelled());

  close(fd);
  for (int i = 0; i < 500 && !closed->cancelled(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(closed->cancelled());
  // Answering the departed client is harmless, and the server goes on serving.
  HttpResponse late;
  late.body = "{}";
  s.held_respond(late);
  CHECK(Fetch("GET", s.url("/after")).status == 200);
}

TEST_CASE("stopping the server lets in-flight responses finish", "[gateway][http]") {
  TestServer s;
  std::atomic<long> status{0};
  std::thread slow([&] { status = Fetch("GET", s.url("/slow")).status; });
  // Stop only once the request is in the handler: on a loaded machine 200 ms was sometimes not
  // enough for it to arrive, and a request that never arrived is not in flight.
  for (int i = 0; i < 1000 && s.handled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(s.handled == 1);
  s.server->Stop();
  slow.join();
  CHECK(status == 200);
}

TEST_CASE("X-Forwarded-For names the client only when the socket peer is a trusted proxy",
          "[gateway][http]") {
  const std::string forged =
      "GET /x HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\nAccept: */*\r\n"
      "X-Forwarded-For: 198.51.100.7, 10.2.2.2\r\nConnection: close\r\n\r\n";
  SECTION("a trusted peer: repeated lines are one list, walked from the right") {
    auto trusted = TrustedProxies::Parse("127.0.0.1, 10.0.0.0/8");
    REQUIRE(trusted.ok());
    TestServer s(1024, *trusted);
    CHECK(RawExchange(s.server->port(), forged).find("\"client\":\"198.51.100.7\"") !=
          std::string::npos);
    auto plain = Fetch("GET", s.url("/x"));
    CHECK(plain.body.find("\"client\":\"127.0.0.1\"") != std::string::npos);
  }
  SECTION("an untrusted peer: the header is ignored") {
    auto trusted = TrustedProxies::Parse("10.0.0.0/8");
    REQUIRE(trusted.ok());
    TestServer s(1024, *trusted);
    CHECK(RawExchange(s.server->port(), forged).find("\"client\":\"127.0.0.1\"") !=
          std::string::npos);
  }
  SECTION("no trusted proxies (the default)") {
    TestServer s;
    auto r = Fetch("GET", s.url("/x"), {"X-Forwarded-For: 198.51.100.7"});
    CHECK(r.body.find("\"client\":\"127.0.0.1\"") != std::string::npos);
  }
}

// Reads from `fd` until `count` responses have arrived (or the read times out).
std::string ReadResponses(int fd, int count) {
  std::string out;
  char buf[4096];
  auto responses = [&out] {
    int n = 0;
    for (size_t pos = out.find("HTTP/1.1 "); pos != std::string::npos;
         pos = out.find("HTTP/1.1 ", pos + 1)) {
      ++n;
    }
    return n;
  };
  while (responses() < count || out.back() != '}') {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST_CASE("a request with two Authorization lines is marked, also when pipelined",
          "[gateway][http]") {
  auto trusted = TrustedProxies::Parse("127.0.0.1");
  REQUIRE(trusted.ok());
  TestServer s(1024, *trusted);
  SECTION("one line is not repeated, two are (Pistache itself keeps only one)") {
    auto one = Fetch("GET", s.url("/x"), {"Authorization: Bearer dns_a"});
    CHECK(one.body.find("\"repeated_authorization\":false") != std::string::npos);
    auto two = Fetch("GET", s.url("/x"), {"Authorization: Bearer dns_a", "authorization: Bearer dns_b"});
    CHECK(two.body.find("\"repeated_authorization\":true") != std::string::npos);
  }
  SECTION("every request of a pipelined batch has its own header block scanned") {
    // Three requests in one write: a GET, a GET with two Authorization lines and its own
    // X-Forwarded-For, then a POST with a body. Pistache used to be handed all three at once,
    // so only the first one's block was scanned.
    const std::string batch =
        "GET /first HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dns_a\r\n\r\n"
        "GET /second HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dns_a\r\n"
        "X-Forwarded-For: 198.51.100.2\r\nAuthorization: Bearer dns_b\r\n\r\n"
        "POST /third HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-Forwarded-For: 198.51.100.3\r\n"
        "\r\nhello";
    int fd = Connect(s.server->port());
    REQUIRE(send(fd, batch.data(), batch.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(batch.size()));
    const std::string answers = ReadResponses(fd, 3);
    close(fd);
    INFO(answers);
    const size_t first = answers.find("\"path\":\"/first\"");
    const size_t second = answers.find("\"path\":\"/second\"");
    const size_t third = answers.find("\"path\":\"/third\"");
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    REQUIRE(third != std::string::npos);
    CHECK(answers.find("\"client\":\"127.0.0.1\",\"repeated_authorization\":false", first) ==
          answers.find("\"client\"", first));
    CHECK(answers.find("\"client\":\"198.51.100.2\",\"repeated_authorization\":true", second) ==
          answers.find("\"client\"", second));
    CHECK(answers.find("\"client\":\"198.51.100.3\",\"repeated_authorization\":false", third) ==
          answers.find("\"client\"", third));
    CHECK(s.last_body == "hello");
  }
}

// Sends `head` and then `filler_mib` MiB of 'A' on one connection, and returns what the server
// answered first.
std::string Attack(int port, const std::string& head, int filler_mib) {
  int fd = Connect(port);
  send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string filler(64 * 1024, 'A');
  for (int i = 0; i < 16 * filler_mib; ++i) send(fd, filler.data(), filler.size(), MSG_NOSIGNAL);
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST_CASE("input Pistache would rescan on every read is refused or dropped, not parsed",
          "[gateway][http]") {
  // Pistache rescans an incomplete token from its start on every read: 8 MiB of an endless
  // chunk-size line, of chunk data without its CRLF, or of a body after Pistache gave up on the
  // request's headers, used to pin a reactor thread for minutes. Each must be refused or
  // dropped at once, with the server answering everyone else.
  TestServer s(/*max_body=*/16 * 1024 * 1024);
  const std::string chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string unending_size_line = Attack(s.server->port(), chunked + "5;", 8);
  CHECK(unending_size_line.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(unending_size_line.find("bad_request") != std::string::npos);
  const std::string endless_digits = Attack(s.server->port(), chunked, 8);  // 'A' is hex
  CHECK(endless_digits.rfind("HTTP/1.1 413", 0) == 0);
  const std::string data_without_crlf = Attack(s.server->port(), chunked + "5\r\nAAAAAXX", 8);
  CHECK(data_without_crlf.rfind("HTTP/1.1 400", 0) == 0);
  const std::string oversized_chunk = Attack(s.server->port(), chunked + "1000001\r\n", 1);
  CHECK(oversized_chunk.rfind("HTTP/1.1 413", 0) == 0);
  const std::string smuggling =
      Attack(s.server->port(),
             "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Transfer-Encoding: chunked\r\n\r\n",
             0);
  CHECK(smuggling.rfind("HTTP/1.1 400", 0) == 0);
  // A header Pistache would read differently from a stricter reader (it takes 12 bytes as the
  // body, then the rest as request lines): refused before Pistache sees it, the rest dropped.
  const std::string lenient_length =
      Attack(s.server->port(), "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 12x\r\n\r\n", 8);
  CHECK(lenient_length.rfind("HTTP/1.1 400", 0) == 0);

  const auto started = std::chrono::steady_clock::now();
  auto r = Fetch("GET", s.url("/fast"));
  CHECK(r.status == 200);
  // Unfixed, this waited minutes behind the rescans; 10 s is a generous bound for a busy CI.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(s.handled == 1);  // /fast only
}

TEST_CASE("well-formed chunked bodies pass whole", "[gateway][http]") {
  TestServer s(/*max_body=*/1024);
  std::string reply = RawExchange(
      s.server->port(),
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n");
  INFO(reply);
  CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(s.last_body == "hello world");

  // Many chunks of odd sizes, split across reads anywhere: the body arrives intact.
  TestServer big(/*max_body=*/1 << 20);
  std::string body;
  std::string framed = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                       "Connection: close\r\n\r\n";
  for (int i = 0; i < 300; ++i) {
    std::string chunk(static_cast<size_t>(1 + (i * 37) % 3001), static_cast<char>('a' + i % 26));
    body += chunk;
    char size_line[16];
    snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
    framed += size_line + chunk + "\r\n";
  }
  framed += "0\r\n\r\n";
  reply = RawExchange(big.server->port(), framed);
  CHECK(reply.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(big.last_body.size() == body.size());
  CHECK(big.last_body == body);
}

TEST_CASE("a client trickling its headers is cut off by the header timeout", "[gateway][http]") {
  // The header block is held back until complete (so Pistache never rescans it); the header
  // timeout must still end a connection that never completes it.
  TestServer s(1024, {}, std::chrono::seconds(2));
  int fd = Connect(s.server->port());
  const std::string start = "GET /x HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  send(fd, start.data(), start.size(), MSG_NOSIGNAL);
  const auto started = std::chrono::steady_clock::now();
  bool closed = false;
  std::string answer;
  while (!closed && std::chrono::steady_clock::now() - started < std::chrono::seconds(20)) {
    send(fd, "a", 1, MSG_NOSIGNAL);  // one byte every 100 ms, never the end of the block
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) answer.append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
  }
  close(fd);
  INFO(answer);
  CHECK(closed);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(s.handled == 0);
}

TEST_CASE("a request answered after the header timeout still gets its answer and no 408",
          "[gateway][http]") {
  // Pistache's sweep used to take a connection with a request in flight for a client still
  // sending headers: a sync call longer than the header timeout got an empty 408.
  TestServer s(1024, {}, std::chrono::seconds(1));
  const std::string answer =
      RawExchange(s.server->port(), "GET /slower-than-timeouts HTTP/1.1\r\nHost: x\r\n\r\n",
                  std::chrono::milliseconds(10000));
  INFO(answer);
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find("{\"late\":true}") != std::string::npos);
  CHECK(answer.find(" 408 ") == std::string::npos);
}

TEST_CASE("bodies being received share one budget across connections", "[gateway][http]") {
  HttpServerOptions options;
  options.port = 0;
  options.max_body_bytes = 2000;
  options.max_buffered_body_bytes = 3000;
  std::atomic<int> handled{0};
  HttpServer server(options, [&](gateway::HttpRequest, Responder respond) {
    ++handled;
    respond(HttpResponse{});
  });
  REQUIRE(server.Start().ok());
  // Connection A announces 2,000 bytes and sends half: its reservation stands.
  int a = Connect(server.port(), std::chrono::seconds(5));
  const std::string head = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n";
  send(a, head.data(), head.size(), MSG_NOSIGNAL);
  send(a, std::string(1000, 'a').data(), 1000, MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  // B's 2,000 bytes would pass the 3,000-byte budget: 503 with Retry-After, unread.
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/x";
  auto refused = Fetch("POST", url, {}, std::string(2000, 'b'));
  CHECK(refused.status == 503);
  CHECK(refused.body.find("\"code\":\"service_unavailable\"") != std::string::npos);
  CHECK(refused.Header("retry-after") == std::optional<std::string>("1"));
  CHECK(Fetch("POST", url, {}, std::string(900, 'c')).status == 200);  // small ones still fit

  // A completes: its share returns, and B's body fits.
  send(a, std::string(1000, 'a').data(), 1000, MSG_NOSIGNAL);
  char buf[1024];
  CHECK(recv(a, buf, sizeof(buf), 0) > 0);
  close(a);
  CHECK(Fetch("POST", url, {}, std::string(2000, 'b')).status == 200);
  CHECK(handled == 3);
  server.Stop();
}

TEST_CASE("a large body is written whole, with its headers, and the connection stays usable",
          "[gateway][http]") {
  TestServer s;
  auto r = Fetch("GET", s.url("/large"));
  REQUIRE(r.status == 200);
  CHECK(r.body == LargeBody());
  CHECK(r.Header("content-length") == std::optional<std::string>(std::to_string(LargeBody().size())));
  CHECK(r.Header("content-type") == std::optional<std::string>("text/plain"));
  CHECK(r.Header("x-job-id") == std::optional<std::string>("job-large"));
  REQUIRE(r.Header("x-request-id"));
  CHECK(r.Header("x-request-id")->size() == 36);

  // Keep-alive: the connection carries the whole response, then answers the next request.
  int fd = Connect(s.server->port(), std::chrono::milliseconds(5000));
  // Sends `request`, then reads until `done` holds for what arrived (or the socket gives up).
  auto exchange = [fd](const std::string& request,
                       const std::function<bool(const std::string&)>& done) {
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[65536];
    while (!done(out)) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  };
  const std::string first = exchange("GET /large HTTP/1.1\r\nHost: x\r\n\r\n", [](const std::string& out) {
    const size_t head_end = out.find("\r\n\r\n");
    return head_end != std::string::npos && out.size() >= head_end + 4 + LargeBody().size();
  });
  const size_t head_end = first.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  CHECK(first.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(first.substr(head_end + 4) == LargeBody());  // nothing more, nothing less
  const std::string second = exchange("GET /after HTTP/1.1\r\nHost: x\r\n\r\n", [](const std::string& out) {
    return out.find("/after") != std::string::npos && out.find('}') != std::string::npos;
  });
  close(fd);
  CHECK(second.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(second.find("\"path\":\"/after\"") != std::string::npos);
}

TEST_CASE("a response to a pipelined request waits for the large body before it",
          "[gateway][http]") {
  TestServer s;
  // Both are answered at once, in order; the second must not land inside the first's body,
  // which is still being written piece by piece.
  int fd = Connect(s.server->port(), std::chrono::milliseconds(5000));
  const std::string requests =
      "GET /large HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, requests.data(), requests.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(requests.size()));
  std::string out;
  char buf[65536];
  while (out.find("\"path\":\"/after\"") == std::string::npos ||
         out.find('}', out.find("\"path\":\"/after\"")) == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t head_end = out.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  const std::string body = LargeBody();
  REQUIRE(out.size() > head_end + 4 + body.size());
  CHECK(out.compare(head_end + 4, body.size(), body) == 0);
  CHECK(out.compare(head_end + 4 + body.size(), 12, "HTTP/1.1 200") == 0);
}

TEST_CASE("a client leaving in the middle of a large body ends its response",
          "[gateway][http]") {
  TestServer s;
  // A small receive window, so most of the body is still to be written when the client goes.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int window = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, sizeof(window));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(s.server->port()));
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = "GET /large HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[4096];
  while (got.size() < 8192) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  REQUIRE(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  // Closed with most of the body unread: the server's next writes fail (a reset).
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);

  // The server goes on serving, and its failed response is over: stopping does not wait for it
  // until the drain timeout (5 s), which it would if the response were still counted in flight.
  CHECK(Fetch("GET", s.url("/after")).status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto stop_started = std::chrono::steady_clock::now();
  s.server->Stop();
  CHECK(std::chrono::steady_clock::now() - stop_started < std::chrono::seconds(4));
}

TEST_CASE("a streamed response reaches the client as it is written, in chunks, then ends",
          "[gateway][http]") {
  TestServer s;
  int fd = Connect(s.server->port(), std::chrono::milliseconds(5000));
  const std::string request = "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  auto read_until = [fd](std::string* out, const std::string& what) {
    char buf[4096];
    while (out->find(what) == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      out->append(buf, static_cast<size_t>(n));
    }
    return true;
  };
  std::string got;
  // The head and the first event arrive while the response is still open.
  REQUIRE(read_until(&got, "first"));
  CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(got.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(got.find("Content-Length") == std::string::npos);
  CHECK(got.find("\r\n\r\nd\r\ndata: first\n\n\r\n") != std::string::npos);  // 13 bytes
  std::shared_ptr<ResponseStream> stream;
  {
    std::lock_guard<std::mutex> lock(s.held_mu);
    stream = s.held_stream;
  }
  REQUIRE(stream);
  stream->Write("data: last\n\n");
  stream->Close();
  stream->Write("data: dropped\n\n");  // after Close: nothing
  REQUIRE(read_until(&got, "0\r\n\r\n"));
  CHECK(got.find("c\r\ndata: last\n\n\r\n0\r\n\r\n") != std::string::npos);  // 12 bytes
  CHECK(got.find("dropped") == std::string::npos);
  // The connection carries the next request.
  const std::string next = "GET /after HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, next.data(), next.size(), MSG_NOSIGNAL);
  std::string after;
  REQUIRE(read_until(&after, "/after"));
  close(fd);
  CHECK(after.rfind("HTTP/1.1 200", 0) == 0);
}
