// The client address for the per-IP limit: X-Forwarded-For believed only as far as configured
// trusted proxies vouch for it, whatever a client writes into the header.
#include "gateway/server/client_address.h"

#include <catch2/catch.hpp>

namespace dnaserve::gateway {
namespace {

TrustedProxies Trusted(const std::string& spec) {
  auto parsed = TrustedProxies::Parse(spec);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  return *parsed;
}

TEST_CASE("trusted proxies: addresses and CIDR blocks of both families", "[proxies]") {
  TrustedProxies t = Trusted(" 10.0.0.0/8, 192.168.4.7 ,fd00::/8, 172.16.0.0/12, ::1");
  CHECK(t.Contains("10.255.1.2"));
  CHECK(t.Contains("192.168.4.7"));
  CHECK_FALSE(t.Contains("192.168.4.8"));
  CHECK(t.Contains("172.31.255.255"));
  CHECK_FALSE(t.Contains("172.32.0.0"));
  CHECK(t.Contains("fd12:3456::1"));
  CHECK_FALSE(t.Contains("fe80::1"));
  CHECK(t.Contains("::1"));
  CHECK(t.Contains("::ffff:10.1.1.1"));  // IPv4-mapped: the IPv4 address
  CHECK_FALSE(t.Contains("not-an-ip"));
  CHECK_FALSE(TrustedProxies().Contains("10.0.0.1"));
  CHECK(Trusted("0.0.0.0/0").Contains("203.0.113.9"));
  CHECK_FALSE(Trusted("0.0.0.0/0").Contains("2001:db8::1"));

  for (const char* bad : {"10.0.0.0/33", "fd00::/129", "10.0.0/8", "example.com", "10.0.0.1/",
                          "10.0.0.1/x", "1.2.3.4,,5.6.7.8"}) {
    INFO(bad);
    auto parsed = TrustedProxies::Parse(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == ErrorCode::kBadRequest);
  }
  CHECK(Trusted("").empty());
}

TEST_CASE("rate-limit keys: IPv4 per address, IPv6 per /64", "[proxies][ip]") {
  CHECK(RateLimitKey("203.0.113.9") == "203.0.113.9");
  CHECK(RateLimitKey("::ffff:203.0.113.9") == "203.0.113.9");
  CHECK(RateLimitKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64");
  CHECK(RateLimitKey("2001:0DB8:0001:0002::1") == "2001:db8:1:2::/64");
  CHECK(RateLimitKey("2001:db8:1:3::1") == "2001:db8:1:3::/64");
  CHECK(RateLimitKey("::1") == "::/64");
  CHECK(RateLimitKey("fe80::1234") == "fe80::/64");
  CHECK(RateLimitKey("not-an-ip") == "not-an-ip");
}

TEST_CASE("the header is ignored unless the socket peer is a trusted proxy", "[proxies]") {
  const TrustedProxies none;
  CHECK(ClientAddress("203.0.113.5", std::string("198.51.100.1"), none) == "203.0.113.5");
  const TrustedProxies ingress = Trusted("10.0.0.0/8");
  CHECK(ClientAddress("203.0.113.5", std::string("198.51.100.1"), ingress) == "203.0.113.5");
  CHECK(ClientAddress("10.1.2.3", std::nullopt, ingress) == "10.1.2.3");
  CHECK(ClientAddress("::ffff:203.0.113.5", std::nullopt, none) == "203.0.113.5");
}

TEST_CASE("the rightmost address no trusted proxy accounts for is the client", "[proxies]") {
  const TrustedProxies t = Trusted("10.0.0.0/8, 2001:db8:ff::/48");
  // One proxy: it appended the client it saw.
  CHECK(ClientAddress("10.1.2.3", std::string("198.51.100.7"), t) == "198.51.100.7");
  // A client's forged entries sit left of what the proxy appended: never believed.
  CHECK(ClientAddress("10.1.2.3", std::string("1.1.1.1, 2.2.2.2, 198.51.100.7"), t) ==
        "198.51.100.7");
  // Two trusted hops (ingress behind a cloud load balancer).
  CHECK(ClientAddress("10.1.2.3", std::string("6.6.6.6, 198.51.100.7, 10.9.9.9"), t) ==
        "198.51.100.7");
  // Ports and brackets as some proxies write them; canonical output.
  CHECK(ClientAddress("10.1.2.3", std::string("[2001:DB8::0:1]:4711"), t) == "2001:db8::1");
  CHECK(ClientAddress("10.1.2.3", std::string("198.51.100.7:5555"), t) == "198.51.100.7");
  CHECK(ClientAddress("2001:db8:ff::2", std::string("2001:db8:1::9"), t) == "2001:db8:1::9");
  // Garbage stops the walk at the last hop a trusted proxy vouched for.
  CHECK(ClientAddress("10.1.2.3", std::string("198.51.100.7, unknown"), t) == "10.1.2.3");
  CHECK(ClientAddress("10.1.2.3", std::string("garbage, 10.4.4.4"), t) == "10.4.4.4");
  CHECK(ClientAddress("10.1.2.3", std::string(""), t) == "10.1.2.3");
  CHECK(ClientAddress("10.1.2.3", std::string("1.2.3.4:99999999"), t) == "10.1.2.3");
  // Only trusted hops: the leftmost.
  CHECK(ClientAddress("10.1.2.3", std::string("10.7.7.7, 10.8.8.8"), t) == "10.7.7.7");
}

TEST_CASE("repeated X-Forwarded-For lines are read in order from the raw header block",
          "[proxies]") {
  const std::string block =
      "POST /v1/tasks/promoter/predict HTTP/1.1\r\n"
      "Host: x\r\n"
      "X-Forwarded-For: 1.1.1.1\r\n"
      "Content-Type: application/json\r\n"
      "x-forwarded-for:198.51.100.7 \r\n";
  CHECK(ForwardedForOf(block) == std::optional<std::string>("1.1.1.1,198.51.100.7"));
  CHECK_FALSE(ForwardedForOf("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: a\r\n").has_value());
  // The request line is never a header, whatever its target says.
  CHECK_FALSE(ForwardedForOf("GET /x-forwarded-for:1.2.3.4 HTTP/1.1\r\n").has_value());
  CHECK(ForwardedForOf("GET / HTTP/1.1\r\nX-Forwarded-For:\r\n") == std::optional<std::string>(""));
}

}  // namespace
}  // namespace dnaserve::gateway
